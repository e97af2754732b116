import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startInstanceHeartbeat, type InstanceHeartbeat } from '../src/instances/registry'
import { createTestApp, type TestApp, UNREACHABLE_URL } from './support/app'
import { postgresMissing, startPostgres } from './support/postgres'

// `ringbase health` as the container runtime runs it: a process whose exit code says whether the server answers.
const main = join(import.meta.dir, '..', 'src', 'main.ts')

/** Runs the command without blocking this process, which serves the requests it makes. */
async function health(args: string[], env: Record<string, string> = {}) {
  const run = Bun.spawn([process.execPath, main, 'health', ...args], {
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [exitCode, stdout, stderr] = await Promise.all([
    run.exited,
    new Response(run.stdout).text(),
    new Response(run.stderr).text(),
  ])
  return { exitCode, output: `${stdout}${stderr}` }
}

let t: TestApp
let server: ReturnType<typeof Bun.serve>
let failing: ReturnType<typeof Bun.serve>
let heartbeat: InstanceHeartbeat
beforeAll(() => {
  t = createTestApp()
  heartbeat = startInstanceHeartbeat(t.ctx, async () => {})
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => t.app.handle(request) })
  failing = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('starting', { status: 503 }) })
})
afterAll(async () => {
  await heartbeat.stop()
  server.stop(true)
  failing.stop(true)
  t.close()
})

describe('ringbase health', async () => {
  test('exits 0 when the server answers /api/v1/health', async () => {
    const result = await health(['--http', `127.0.0.1:${server.port}`])
    expect(result).toMatchObject({ exitCode: 0 })
    expect(result.output).toContain(
      `http://127.0.0.1:${server.port}/api/v1/health: ok, database (sqlite, 1 live instance), object store (local) reachable`,
    )
  })

  test('exits non-zero when the server answers but its S3 object store cannot be reached', async () => {
    const withBucketDown = createTestApp({
      flags: { 'object-store': 's3://ringbase-test/a' },
      env: {
        RINGBASE_S3_ENDPOINT: UNREACHABLE_URL,
        RINGBASE_S3_ACCESS_KEY_ID: 'key-id',
        RINGBASE_S3_SECRET_ACCESS_KEY: 'secret-key',
      },
    })
    const served = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => withBucketDown.app.handle(request) })
    try {
      const result = await health(['--http', `127.0.0.1:${served.port}`])
      expect(result.exitCode).toBe(1)
      expect(result.output).toContain('object store (s3) unreachable')
    } finally {
      served.stop(true)
      withBucketDown.close()
    }
  })

  test.skipIf(postgresMissing() !== null)(
    'on PostgreSQL: ok while the database answers; when it is down, health says so (the command exits 1) and requests that need it answer 503',
    async () => {
      const postgres = await startPostgres()
      const onPostgres = createTestApp({ flags: { 'database-url': postgres.url } })
      const served = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => onPostgres.app.handle(request) })
      try {
        const up = await health(['--http', `127.0.0.1:${served.port}`])
        expect(up.exitCode).toBe(0)
        expect(up.output).toContain(': ok, database (postgresql, 0 live instances), object store (local) reachable')
        postgres.stop()
        const answer = await onPostgres.request('GET', '/api/v1/health')
        expect(answer.status).toBe(200)
        expect(answer.body).toMatchObject({
          database: { backend: 'postgresql', reachable: false },
          instances: { live: 0 },
        })
        const down = await health(['--http', `127.0.0.1:${served.port}`])
        expect(down.exitCode).toBe(1)
        expect(down.output).toContain('database (postgresql) unreachable')
      } finally {
        served.stop(true)
        onPostgres.close()
        postgres.stop()
      }
    },
    30_000,
  )

  test('without --http it checks the address serve would use (RINGBASE_HTTP)', async () => {
    expect((await health([], { RINGBASE_HTTP: `127.0.0.1:${server.port}` })).exitCode).toBe(0)
  })

  test('a server bound to every interface is checked over loopback', async () => {
    expect((await health(['--http', `0.0.0.0:${server.port}`])).exitCode).toBe(0)
  })

  test('exits non-zero when nothing listens there', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const port = closed.port
    closed.stop(true)
    const result = await health(['--http', `127.0.0.1:${port}`])
    expect(result.exitCode).not.toBe(0)
    expect(result.output).toContain(`127.0.0.1:${port}/api/v1/health`)
  })

  test('exits non-zero when the server answers something other than 200', async () => {
    const result = await health(['--http', `127.0.0.1:${failing.port}`])
    expect(result.exitCode).not.toBe(0)
    expect(result.output).toContain('HTTP 503')
  })

  test('exits non-zero when the server accepts the connection but never answers', async () => {
    const hung = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const result = await health(['--http', `127.0.0.1:${hung.port}`])
      expect(result.exitCode).not.toBe(0)
      expect(result.output).toContain('no answer within')
    } finally {
      hung.stop(true)
    }
  }, 15_000)

  test('a malformed address is a usage error (exit 2)', async () => {
    expect((await health(['--http', 'nowhere'])).exitCode).toBe(2)
  })
})
