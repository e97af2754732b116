import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compiledBinary } from './support/compiled-binary'
import { postgresMissing, startPostgres, type TestPostgres } from './support/postgres'
import { startServe } from './support/serve-process'
import { startTcpProxy } from './support/tcp-proxy'
import { waitFor } from './support/wait'

// The compiled binary on a PostgreSQL database that goes away: the client runs in a worker thread the build bundles,
// so its liveness check (db/postgres/worker.ts) is tested here as shipped, through HTTP. test/db/postgres-client.test.ts
// tests the same client from source, statement by statement.

const KEY = 'rb_binary_postgres_bootstrap_key_0123456789'

const missing = postgresMissing()
if (missing) console.warn(missing)

describe.skipIf(missing !== null)('the compiled binary on PostgreSQL', () => {
  let postgres: TestPostgres
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>
  let server: Awaited<ReturnType<typeof startServe>>
  let dataDir: string

  beforeAll(async () => {
    const binary = compiledBinary()
    postgres = await startPostgres()
    proxy = await startTcpProxy(new URL(postgres.url).port)
    const throughProxy = new URL(postgres.url)
    throughProxy.port = String(proxy.port)
    dataDir = mkdtempSync(join(tmpdir(), 'ringbase-binary-pg-'))
    server = await startServe(binary, ['--dir', dataDir, '--database-url', throughProxy.toString()], {
      RINGBASE_BOOTSTRAP_API_KEY: KEY,
      RINGBASE_MASTER_KEY: 'e'.repeat(64),
    })
  }, 180_000)
  afterAll(async () => {
    server?.server.kill('SIGKILL')
    await server?.server.exited
    proxy?.stop()
    postgres?.stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  const listAgents = () =>
    fetch(`${server.url}/api/v1/workflow/fetch`, { headers: { 'x-api-key': KEY }, signal: AbortSignal.timeout(60_000) })

  test('a database that goes silent (no error, no answer) is a 503 within seconds, the server stays up, and the API answers again once it is back', async () => {
    expect((await listAgents()).status).toBe(200)
    await proxy.command('silence')
    const started = performance.now()
    const refused = await listAgents()
    const waitedMs = performance.now() - started
    expect(refused.status).toBe(503)
    expect(await refused.json()).toEqual({ detail: expect.any(String) })
    // a check on a new connection after 2 s unanswered, given the connect timeout (5 s): not the 120 s answer timeout
    expect(waitedMs).toBeLessThan(20_000)
    const health: any = await (
      await fetch(`${server.url}/api/v1/health`, { signal: AbortSignal.timeout(60_000) })
    ).json()
    expect(health.database).toMatchObject({ backend: 'postgresql', reachable: false })

    // the background loops (webhook outbox, heartbeat, schedulers) meet the outage too, and the server stays up
    await server.output.waitFor(/webhook deliveries could not be claimed/)
    expect(server.server.exitCode).toBeNull()

    await proxy.command('forward')
    await waitFor('the API answering again', async () => (await listAgents()).status === 200, 30_000, 250)
    const back: any = await (await fetch(`${server.url}/api/v1/health`)).json()
    expect(back.database).toEqual({ backend: 'postgresql', reachable: true })

    // the outbox failed every second of the outage: one error line for all of it, then one line once it works again
    const { text } = await server.output.waitFor(/webhook deliveries are claimed again/)
    const recovered = JSON.parse(text.split('\n').find((line) => line.includes('are claimed again'))!)
    expect(recovered.failedPasses).toBeGreaterThan(1)
    expect(text.match(/webhook deliveries could not be claimed/g)).toHaveLength(1)
  }, 120_000)
})
