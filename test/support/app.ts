import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { createApp, type App } from '../../src/api/app'
import { serveApi } from '../../src/api/server'
import { loadConfig, type Flags } from '../../src/config'
import { buildContext } from '../../src/boot'
import type { AppContext } from '../../src/context'
import { manualClock, type Clock } from '../../src/lib/clock'
import { createLogger } from '../../src/log'
import { bootstrapInstallation, createApiKey, ensureOrganization, type ApiKeyScope } from '../../src/auth/keys'
import { dropTestDatabase, freshTestDatabase, TEST_POSTGRES_URL } from './postgres-databases'

/** A local port nothing listens on (discard service): connections are refused at once. */
export const UNREACHABLE_URL = 'http://127.0.0.1:9'

export type TestApp = {
  app: App
  ctx: AppContext
  dataDir: string
  /** Admin key of organization `default`. */
  adminKey: string
  /** Every log line written so far, raw. */
  logText(): string
  request(
    method: string,
    path: string,
    options?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<TestResponse>
  newOrg(name: string, scope?: ApiKeyScope): { organizationId: number; key: string }
  /** The app served over real HTTP on 127.0.0.1 (started on first call), for tests that write raw requests. */
  httpUrl(): Promise<string>
  /** `keepData`: leave the data dir for another app (a restart). */
  close(options?: { keepData?: boolean }): void
}

export type TestResponse = { status: number; body: any; text: string; headers: Headers }

/** The manual clock's instant when a test app starts. */
export const TEST_CLOCK_START = Date.parse('2026-01-05T10:00:00Z')

/**
 * A fresh app on its own temporary data dir, with a captured log and (by default) a manual clock. `restartOf`: an app
 * on the data dir another one left (closed with keepData), as the same installation after a restart.
 */
export function createTestApp(
  options: { flags?: Flags; env?: Record<string, string>; clock?: Clock; restartOf?: TestApp } = {},
): TestApp {
  const dataDir = options.restartOf?.dataDir ?? mkdtempSync(join(tmpdir(), 'ringbase-test-'))
  const databaseUrl =
    options.restartOf?.ctx.config.databaseUrl ?? (TEST_POSTGRES_URL === null ? null : freshTestDatabase())
  const config = loadConfig(
    { dir: dataDir, http: '127.0.0.1:8000', ...(databaseUrl ? { 'database-url': databaseUrl } : {}), ...options.flags },
    { RINGBASE_LOG_LEVEL: 'debug', ...options.env },
  )
  const logChunks: string[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logChunks.push(String(chunk))
      done()
    },
  })
  const ctx = buildContext(config, {
    log: createLogger('debug', sink),
    clock: options.clock ?? manualClock(TEST_CLOCK_START),
  })
  // No test may reach a real provider: saving a configuration that needs provider-side resources answers 502
  // unless the test starts fakes (test/support/fake-providers.ts).
  for (const provider of Object.keys(ctx.providerApis) as (keyof AppContext['providerApis'])[])
    ctx.providerApis[provider] = UNREACHABLE_URL
  const adminKey = options.restartOf?.adminKey ?? bootstrapInstallation(ctx)!.api_key
  const app = createApp(ctx)
  let server: ReturnType<typeof Bun.serve> | null = null
  return {
    app,
    ctx,
    dataDir,
    adminKey,
    logText: () => logChunks.join(''),
    async request(method, path, { key = adminKey, body, rawBody, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } }
      if (key !== null) (init.headers as Record<string, string>)['x-api-key'] = key
      if (body !== undefined || rawBody !== undefined) {
        init.body = rawBody ?? JSON.stringify(body)
        ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
      }
      const response = await app.handle(new Request(`http://localhost${path}`, init))
      const text = await response.text()
      let parsed: unknown = undefined
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined
      }
      return { status: response.status, body: parsed, text, headers: response.headers }
    },
    newOrg(name, scope = 'admin') {
      const organizationId = ensureOrganization(ctx, name)
      return { organizationId, key: createApiKey(ctx, organizationId, `${name} key`, scope).api_key }
    },
    async httpUrl() {
      // Served as `ringbase serve` serves it: the HTTP API and the carriers' media stream WebSockets on one listener.
      server ??= serveApi(ctx, app, { hostname: '127.0.0.1', port: 0, idleTimeout: ctx.config.httpIdleTimeoutSeconds })
      return `http://127.0.0.1:${server.port}`
    },
    close({ keepData = false } = {}) {
      void server?.stop(true)
      ctx.sqlite.close()
      if (keepData) return
      rmSync(dataDir, { recursive: true, force: true })
      if (databaseUrl !== null) dropTestDatabase(databaseUrl)
    },
  }
}
