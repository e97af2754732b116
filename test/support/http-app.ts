import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Flags } from '../../src/config'
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

export async function startHttpTestApp(
  options: { flags?: Flags; env?: Record<string, string>; waitForLogLines?: boolean } = {},
): Promise<HttpTestApp> {
  if (TEST_BINARY === null) return createTestApp(options)
  return startBinaryTestApp(TEST_BINARY, options)
}

/** `waitForLogLines: false` answers without waiting for each request's log line (the wait rereads all the output). */
export async function startBinaryTestApp(
  binary: string,
  options: { flags?: Flags; env?: Record<string, string>; waitForLogLines?: boolean },
): Promise<HttpTestApp> {
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
  return {
    dataDir,
    adminKey: ADMIN_KEY,
    logText: () => output.text(),
    async request(method, path, { key = ADMIN_KEY, body, rawBody, headers = {} } = {}) {
      const requestId = headers['x-request-id'] ?? `test-${++requestCount}`
      const init: RequestInit = { method, headers: { 'x-request-id': requestId, ...headers } }
      if (key !== null) (init.headers as Record<string, string>)['x-api-key'] = key
      if (body !== undefined || rawBody !== undefined) {
        init.body = rawBody ?? JSON.stringify(body)
        ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
      }
      const response = await fetch(`${base}${path}`, init)
      const text = await response.text()
      // Like in-process, the request's log line is there once the answer is: wait for it.
      if (options.waitForLogLines !== false)
        await output.waitFor(new RegExp(`"requestId":"${requestId.replace(/[^\w-]/g, '\\$&')}"`))
      let parsed: unknown = undefined
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined
      }
      return { status: response.status, body: parsed, text, headers: response.headers } satisfies TestResponse
    },
    httpUrl: async () => base,
    newOrg(name, scope = 'admin') {
      const created = Bun.spawnSync([binary, 'keys', 'create', '--org', name, '--scope', scope, '--dir', dataDir])
      if (created.exitCode !== 0) throw new Error(`keys create: ${created.stderr.toString()}`)
      return { key: created.stdout.toString().trim() }
    },
    async close() {
      server.kill('SIGKILL')
      await server.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
