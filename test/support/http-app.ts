import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApiKey, ensureOrganization, type ApiKeyScope } from '../../src/auth/keys'
import type { Flags } from '../../src/config'
import type { AppContext } from '../../src/context'
import { openDatabase } from '../../src/db/open'
import { transaction } from '../../src/db/transaction'
import { systemClock } from '../../src/lib/clock'
import { createTestApp, TEST_CLOCK_START, type TestApp, type TestResponse } from './app'
import { listeningUrl, outputOf, spawnServe } from './serve-process'

/**
 * Black-box suites talk to the server only through this: in-process by default (`app.handle`), or, when
 * RINGBASE_TEST_BINARY names a compiled `ringbase`, over real HTTP to `ringbase serve` on a fresh data dir
 * (test/binary-http.test.ts runs the pure-HTTP suites that way).
 */
export const TEST_BINARY = process.env.RINGBASE_TEST_BINARY || null

/** A timestamp written now: the manual clock's instant in-process, any ISO instant against the binary's real clock. */
export const NOW =
  TEST_BINARY === null
    ? new Date(TEST_CLOCK_START).toISOString()
    : expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

/** A test that needs the in-process app (its context, its route table): skipped against the binary. */
export const inProcessTest = test.skipIf(TEST_BINARY !== null)

export type HttpTestApp = Pick<TestApp, 'dataDir' | 'adminKey' | 'logText' | 'request' | 'httpUrl'> & {
  newOrg(name: string, scope?: 'admin' | 'trigger'): { key: string }
  close(): void | Promise<void>
}

/** What the shared request helpers (create an agent, a configuration…) need. */
export type HttpClient = Pick<HttpTestApp, 'request'>

const ADMIN_KEY = `rb_${'t'.repeat(43)}`

export async function startHttpTestApp(options: BinaryOptions = {}): Promise<HttpTestApp> {
  if (TEST_BINARY === null) return createTestApp(options)
  return startBinaryTestApp(TEST_BINARY, options)
}

type BinaryOptions = { flags?: Flags; env?: Record<string, string>; waitForLogLines?: boolean }

/** `waitForLogLines: false` answers without waiting for each request's log line. */
export async function startBinaryTestApp(binary: string, options: BinaryOptions): Promise<HttpTestApp> {
  const server = await startBinaryServer(binary, options)
  return { ...binaryApp(server, ADMIN_KEY, ''), close: () => server.stop() }
}

/**
 * For a file whose tests each want an installation of their own (`start()` in beforeEach): in-process a fresh app per
 * test; against the binary, one `ringbase serve` for the whole file (a process start costs ~1.5 s of CPU) and an
 * organization of its own per test, so each test sees an empty installation as far as the API shows (every query is
 * scoped by organization). `newOrg('default')` is the test's own organization, as it is in-process; `logText()` is what
 * the server wrote since the test started. Call at the top of the file: the server stops after the file's last test.
 */
export function httpTestAppPerTest(options: BinaryOptions = {}): { start(): Promise<HttpTestApp> } {
  let shared: Promise<BinaryServer> | null = null
  let tests = 0
  afterAll(async () => {
    if (shared) await (await shared).stop()
  })
  return {
    async start() {
      if (TEST_BINARY === null) return createTestApp(options)
      shared ??= startBinaryServer(TEST_BINARY, options)
      return organizationApp(await shared, `test ${++tests}: `)
    },
  }
}

/** A test's view of a shared server: its own organization's admin key, the output written since it started. */
function organizationApp(server: BinaryServer, orgPrefix: string): HttpTestApp {
  const adminKey = server.createKey(`${orgPrefix}default`, 'admin')
  const logStart = server.output.text().length
  return {
    ...binaryApp(server, adminKey, orgPrefix),
    logText: () => server.output.text().slice(logStart),
    // The server and its data dir outlive the test: httpTestAppPerTest stops them after the file.
    close() {},
  }
}

/** Requests as `adminKey` by default; `newOrg(name)` is organization `${orgPrefix}${name}`. */
function binaryApp(server: BinaryServer, adminKey: string, orgPrefix: string): Omit<HttpTestApp, 'close'> {
  return {
    dataDir: server.dataDir,
    adminKey,
    logText: () => server.output.text(),
    request: server.requestAs(adminKey),
    httpUrl: async () => server.base,
    newOrg: (name, scope = 'admin') => ({ key: server.createKey(`${orgPrefix}${name}`, scope) }),
  }
}

type BinaryServer = Awaited<ReturnType<typeof startBinaryServer>>

/** `ringbase serve` on a fresh data dir, bootstrapped with ADMIN_KEY. */
async function startBinaryServer(binary: string, options: BinaryOptions) {
  const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-test-'))
  const flags = Object.entries(options.flags ?? {}).flatMap(([name, value]) => [`--${name}`, String(value)])
  const server = spawnServe(binary, ['--dir', dataDir, ...flags], {
    RINGBASE_BOOTSTRAP_API_KEY: ADMIN_KEY,
    RINGBASE_LOG_LEVEL: 'debug',
    ...options.env,
  })
  const output = outputOf(server.stdout)
  let base: string
  try {
    base = await listeningUrl(output)
  } catch (error) {
    server.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  }
  let requestCount = 0
  let keyWriter: ReturnType<typeof openDatabase> | null = null
  const requestAs =
    (defaultKey: string): HttpTestApp['request'] =>
    async (method, path, { key = defaultKey, body, rawBody, headers = {} } = {}) => {
      const requestId = headers['x-request-id'] ?? `test-${++requestCount}`
      const init: RequestInit = { method, headers: { 'x-request-id': requestId, ...headers } }
      if (key !== null) (init.headers as Record<string, string>)['x-api-key'] = key
      if (body !== undefined || rawBody !== undefined) {
        init.body = rawBody ?? JSON.stringify(body)
        ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
      }
      const logBefore = output.text().length
      const response = await fetch(`${base}${path}`, init)
      const text = await response.text()
      // Like in-process, the request's log line is there once the answer is: wait for it (written after the request
      // was sent, so only the output since is searched).
      if (options.waitForLogLines !== false)
        await output.waitFor(new RegExp(`"requestId":"${requestId.replace(/[^\w-]/g, '\\$&')}"`), logBefore)
      let parsed: unknown = undefined
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined
      }
      return { status: response.status, body: parsed, text, headers: response.headers } satisfies TestResponse
    }
  return {
    dataDir,
    output,
    base,
    requestAs,
    /**
     * A key of organization `name` (created if new), written straight to the database beside the server as
     * `ringbase keys create` would (test/binary.test.ts runs that command), without a ~1 s process per key.
     */
    createKey(name: string, scope: ApiKeyScope): string {
      keyWriter ??= openDatabase(dataDir)
      const writer = { ...keyWriter, clock: systemClock } as Pick<AppContext, 'db' | 'sqlite' | 'clock'> as AppContext
      return transaction(writer, () => createApiKey(writer, ensureOrganization(writer, name), `${scope} key`, scope))
        .api_key
    },
    async stop() {
      keyWriter?.sqlite.close()
      server.kill('SIGKILL')
      await server.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
