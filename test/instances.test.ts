import { afterEach, beforeAll, afterAll, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ARI_HELD_ELSEWHERE } from '../src/calls/trigger'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { say, startFakeModels, type FakeModels } from './support/fake-models'
import { callApi, readDataDir, SOURCE_COMMAND, startServe } from './support/serve-process'
import { configureModelsNeverAsked } from './support/voice-models'
import { waitFor } from './support/wait'

// Several `ringbase serve` processes on ONE data dir (one SQLite file): each registers as an instance, one at a time
// holds an ARI configuration's events connection (a lease in the database), the other takes it over when the owner
// dies or stops, and an instance recovers only the calls of instances that are no longer live.

const KEY = 'rb_instances_test_bootstrap_key_0123456789'
/** Short heartbeats: an instance is dead, and its ARI lease expired, 600 ms after its last heartbeat. */
const HEARTBEAT_MS = 200

type Instance = Awaited<ReturnType<typeof startServe>>

let fake: FakeAri
let models: FakeModels
let dataDir: string
/** Every process started here, so a failing test leaves none behind. */
let instances: Instance[] = []

beforeAll(() => {
  models = startFakeModels()
  models.chat.handler = () => say('Hello.')
})
afterAll(() => models.stop())
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-instances-'))
})
afterEach(async () => {
  for (const instance of instances) instance.server.kill('SIGKILL')
  await Promise.all(instances.map((instance) => instance.server.exited))
  instances = []
  await fake.close()
  rmSync(dataDir, { recursive: true, force: true })
})

async function startInstance(): Promise<Instance> {
  const instance = await startServe(SOURCE_COMMAND, ['--dir', dataDir, '--ring-timeout', '5'], {
    RINGBASE_BOOTSTRAP_API_KEY: KEY,
    RINGBASE_LOG_LEVEL: 'info',
    RINGBASE_INSTANCE_HEARTBEAT_MS: String(HEARTBEAT_MS),
  })
  instances.push(instance)
  return instance
}

async function kill(instance: Instance, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
  instance.server.kill(signal)
  await instance.server.exited
}

const api = (instance: Instance, method: string, path: string, body?: unknown) =>
  callApi(instance.url, KEY, method, path, body)
const health = async (instance: Instance) => api(instance, 'GET', '/api/v1/health')
const eventSocketsOpened = () => fake.requests.filter((request) => request.path === '/ari/events').length
const originates = () =>
  fake.requests.filter((request) => request.path === '/ari/channels' && request.method === 'POST')

const readDb = <T>(sql: string): T[] => readDataDir<T>(dataDir, sql)

async function createAriConfiguration(instance: Instance): Promise<void> {
  await api(instance, 'POST', '/api/v1/organizations/telephony-configs', {
    name: 'PBX',
    is_default_outbound: true,
    config: { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass' },
  })
}

/** Both instances see each other live, and the second has renewed its view of the leases a few times. */
async function bothLiveForAWhile(first: Instance, second: Instance): Promise<void> {
  await waitFor('both instances live', async () => (await health(first)).instances.live === 2, 10_000, 50)
  await waitFor('the second instance live in its own view', async () => (await health(second)).instances.live === 2)
  // Three heartbeats of the second instance: each is a lease round in which it would open a socket if it could.
  const rounds = readDb<{ heartbeat_at: string }>('SELECT heartbeat_at FROM instances').map((row) => row.heartbeat_at)
  await waitFor(
    'three more heartbeats',
    () => {
      const now = readDb<{ heartbeat_at: string }>('SELECT heartbeat_at FROM instances')
      return now.length === 2 && now.every((row) => !rounds.includes(row.heartbeat_at))
    },
    10_000,
    3 * HEARTBEAT_MS,
  )
}

/** An ARI configuration created on a first instance, which connects; then a second instance, both live a while. */
async function twoInstancesTheFirstConnected(): Promise<[Instance, Instance]> {
  fake = await startFakeAri()
  const first = await startInstance()
  await createAriConfiguration(first)
  await waitFor('the first instance connected', async () => (await health(first)).ari.connected === 1, 10_000, 50)
  const second = await startInstance()
  await bothLiveForAWhile(first, second)
  return [first, second]
}

test('two instances on one data dir: both live, one holds the ARI events connection; kill -9 it and the other takes over', async () => {
  const [first, second] = await twoInstancesTheFirstConnected()
  expect((await health(first)).ari).toEqual({ connected: 1, total: 1 })
  expect((await health(second)).ari).toEqual({ connected: 0, total: 0 })
  expect((await health(second)).database).toEqual({ backend: 'sqlite', reachable: true })
  expect(fake.socketCount).toBe(1)
  expect(eventSocketsOpened()).toBe(1)

  await kill(first, 'SIGKILL')
  await waitFor('the second instance took over', async () => (await health(second)).ari.connected === 1, 10_000, 50)
  expect(fake.socketCount).toBe(1)
  expect(eventSocketsOpened()).toBe(2)
  await waitFor('the killed instance no longer live', async () => (await health(second)).instances.live === 1)
}, 60_000)

test('a graceful stop releases the lease and the instance row: the other takes over without waiting for expiry', async () => {
  const [first, second] = await twoInstancesTheFirstConnected()
  expect((await health(second)).ari).toEqual({ connected: 0, total: 0 })

  await kill(first, 'SIGTERM')
  // What the stopped instance left: no row, and no lease in its name (the survivor may hold it already).
  const remaining = readDb<{ id: string }>('SELECT id FROM instances').map((row) => row.id)
  expect(remaining).toHaveLength(1)
  for (const lease of readDb<{ instance_id: string }>('SELECT instance_id FROM ari_leases'))
    expect(lease.instance_id).toBe(remaining[0])
  await waitFor('the second instance took over', async () => (await health(second)).ari.connected === 1, 10_000, 50)
  expect((await health(second)).instances.live).toBe(1)
  expect(fake.socketCount).toBe(1)
}, 60_000)

test("a starting instance leaves the other's call alone, ARI calls go through the lease holder, and a dead instance's call is recovered by the survivor", async () => {
  fake = await startFakeAri({ defaultScenario: 'answered-stays-up' })
  const first = await startInstance()
  const agent = await api(first, 'POST', '/api/v1/workflow/create/definition', {
    name: 'Instances agent',
    workflow_definition: {
      nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello' } }],
      edges: [],
    },
  })
  await createAriConfiguration(first)
  await configureModelsNeverAsked((path, body) => api(first, 'POST', path, body), undefined, models.baseUrl)
  await waitFor('the first instance connected', async () => (await health(first)).ari.connected === 1, 10_000, 50)
  const started = await api(first, 'POST', `/api/v1/public/agent/workflow/${agent.workflow_uuid}`, {
    phone_number: '1000',
  })
  const runState = () =>
    readDb<{ state: string; disposition: string | null }>(
      `SELECT state, disposition FROM workflow_runs WHERE id = ${started.workflow_run_id}`,
    )[0]
  await waitFor('the call answered', () => runState().state === 'running', 10_000)
  const callId = originates()[0].query.channelId

  // The second instance's start-up recovery ran before it listens; its periodic one after each heartbeat.
  const second = await startInstance()
  await bothLiveForAWhile(first, second)
  expect(runState()).toEqual({ state: 'running', disposition: null })
  expect(fake.liveChannelIds()).toContain(callId)

  // The second instance does not hold the configuration's events connection: it places no ARI call.
  const refused = await fetch(`${second.url}/api/v1/public/agent/workflow/${agent.workflow_uuid}`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ phone_number: '1001' }),
  })
  expect(refused.status).toBe(400)
  expect(await refused.json()).toEqual({ detail: ARI_HELD_ELSEWHERE })
  expect(originates()).toHaveLength(1)

  await kill(first, 'SIGKILL')
  await waitFor('the survivor recovered the call', () => runState().state === 'completed', 10_000, 50)
  expect(runState().disposition).toBe('interrupted')
  await waitFor('the call hung up', () => !fake.liveChannelIds().includes(callId))
  expect(readDb<{ n: number }>("SELECT count(*) AS n FROM workflow_runs WHERE state <> 'completed'")[0].n).toBe(0)
}, 60_000)
