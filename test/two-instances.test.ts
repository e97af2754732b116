import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PostgresDatabase } from '../src/db/postgres/client'
import { compiledBinary } from './support/compiled-binary'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { say, startFakeModels, type FakeModels } from './support/fake-models'
import { postgresMissing, startPostgres, type TestPostgres } from './support/postgres'
import { callApi, startServe, uploadCsvTo } from './support/serve-process'
import { configureModelsNeverAsked } from './support/voice-models'
import { waitFor } from './support/wait'
import { CONTACT_RUNS_SQL, expectEveryContactSettledOnce, type ContactRuns } from './support/campaigns'

// Two compiled `ringbase` processes, each with a data dir of its own, on one PostgreSQL database, dialling one campaign
// of 200 contacts through a fake Asterisk; the instance that holds the Asterisk connection is killed with kill -9
// mid-campaign. Every attempt is dialled once, the campaign's concurrency is never exceeded across the pair, the
// survivor takes the Asterisk connection over, recovers the dead instance's calls and finishes the campaign.

const KEY = 'rb_two_instances_bootstrap_key_0123456789'
const MASTER_KEY = 'd'.repeat(64)
const CONTACTS = 200
const MAX_CONCURRENCY = 8
/** An instance is dead, and its ARI lease expired, 600 ms after its last heartbeat. */
const HEARTBEAT_MS = '200'

type Instance = Awaited<ReturnType<typeof startServe>> & { dataDir: string }

const missing = postgresMissing()
if (missing) console.warn(missing)

describe.skipIf(missing !== null)('two instances on one PostgreSQL database', () => {
  let postgres: TestPostgres
  let fake: FakeAri
  let models: FakeModels
  let binary: string
  const instances: Instance[] = []

  beforeAll(async () => {
    binary = compiledBinary()
    postgres = await startPostgres()
    models = startFakeModels()
    models.chat.handler = () => say('Hello.')
    fake = await startFakeAri({ timeScale: 0.05 })
    // Building the binary (once per run, shared by the binary tests) takes a while on a busy machine.
  }, 180_000)
  afterAll(async () => {
    if (process.env.DEBUG_PAIR)
      for (const instance of instances)
        console.error(
          instance.output
            .text()
            .split('\n')
            .filter((line) => /"level":(40|50|60)/.test(line))
            .join('\n'),
        )
    for (const instance of instances) instance.server.kill('SIGKILL')
    await Promise.all(instances.map((instance) => instance.server.exited))
    for (const instance of instances) rmSync(instance.dataDir, { recursive: true, force: true })
    await fake?.close()
    models?.stop()
    postgres?.stop()
  })

  async function startInstance(): Promise<Instance> {
    const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-pair-'))
    const started = await startServe(
      binary,
      ['--dir', dataDir, '--ring-timeout', '5', '--database-url', postgres.url],
      {
        RINGBASE_BOOTSTRAP_API_KEY: KEY,
        RINGBASE_MASTER_KEY: MASTER_KEY,
        RINGBASE_LOG_LEVEL: 'info',
        RINGBASE_INSTANCE_HEARTBEAT_MS: HEARTBEAT_MS,
      },
    )
    const instance = { ...started, dataDir }
    instances.push(instance)
    return instance
  }

  const api = (instance: Instance, method: string, path: string, body?: unknown) =>
    callApi(instance.url, KEY, method, path, body)
  const originated = () =>
    fake.requests
      .filter((request) => request.method === 'POST' && request.path === '/ari/channels')
      .map((request) => request.query.channelId)
  const eventSockets = () => fake.requests.filter((request) => request.path === '/ari/events').length

  async function createCampaign(instance: Instance): Promise<number> {
    const agent = await api(instance, 'POST', '/api/v1/workflow/create/definition', {
      name: 'Pair agent',
      workflow_definition: {
        nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello' } }],
        edges: [],
      },
    })
    await configureModelsNeverAsked((path, body) => api(instance, 'POST', path, body), undefined, models.baseUrl)
    const csv = `${['phone_number', ...Array.from({ length: CONTACTS }, (_, i) => String(2000 + i))].join('\n')}\n`
    const campaign = await api(instance, 'POST', '/api/v1/campaign/create', {
      name: 'Pair',
      source_type: 'csv',
      source_id: await uploadCsvTo(instance.url, KEY, csv, 'pair.csv'),
      workflow_id: agent.id,
      rate_limit_per_second: 25,
      max_concurrency: MAX_CONCURRENCY,
    })
    return campaign.id
  }

  /** Samples how many dialled calls are up at once, till stopped: the highest count seen. */
  function sampleConcurrency(): { stop(): number } {
    let highest = 0
    const dialled = new Set<string>()
    const timer = setInterval(() => {
      for (const id of originated()) dialled.add(id)
      const up = fake.liveChannelIds().filter((id) => dialled.has(id)).length
      highest = Math.max(highest, up)
    }, 5)
    return {
      stop() {
        clearInterval(timer)
        return highest
      },
    }
  }

  test('kill -9 of the instance holding the PBX mid-campaign: each attempt dialled once, limits held, the survivor finishes', async () => {
    const first = await startInstance()
    const second = await startInstance()
    await api(first, 'POST', '/api/v1/organizations/telephony-configs', {
      name: 'PBX',
      is_default_outbound: true,
      config: { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass' },
    })
    const health = (instance: Instance) => api(instance, 'GET', '/api/v1/health')
    await waitFor('both instances live', async () => (await health(first)).instances.live === 2, 10_000)
    await waitFor(
      'one instance holds the PBX connection',
      async () => (await health(first)).ari.connected + (await health(second)).ari.connected === 1,
      10_000,
    )
    const holder = (await health(first)).ari.connected === 1 ? first : second
    const survivor = holder === first ? second : first
    expect((await health(first)).database).toEqual({ backend: 'postgresql', reachable: true })

    const campaignId = await createCampaign(survivor)
    const concurrency = sampleConcurrency()
    await api(survivor, 'POST', `/api/v1/campaign/${campaignId}/start`)
    await waitFor('a third of the contacts dialled', () => originated().length >= CONTACTS / 3, 30_000)
    holder.server.kill('SIGKILL')
    await holder.server.exited
    const socketsBefore = eventSockets()

    await waitFor(
      'the survivor holds the PBX connection',
      async () => (await health(survivor)).ari.connected === 1,
      15_000,
    )
    expect(eventSockets()).toBeGreaterThan(socketsBefore)
    await waitFor(
      'campaign completed',
      async () => (await api(survivor, 'GET', `/api/v1/campaign/${campaignId}`)).state === 'completed',
      90_000,
      200,
    )
    expect(concurrency.stop()).toBeLessThanOrEqual(MAX_CONCURRENCY)
    expect((await health(survivor)).instances.live).toBe(1)

    const done = await api(survivor, 'GET', `/api/v1/campaign/${campaignId}`)
    expect(done.total_rows).toBe(CONTACTS)
    expect(done.executed_count).toBe(done.processed_rows)
    const channelIds = originated()
    expect(new Set(channelIds).size).toBe(channelIds.length)

    const db = new PostgresDatabase(postgres.url)
    try {
      const contacts = db.query(CONTACT_RUNS_SQL).all(campaignId) as ContactRuns[]
      expectEveryContactSettledOnce(contacts, CONTACTS)
      const runCallIds = new Set(
        db
          .query('SELECT call_id FROM workflow_runs WHERE campaign_id = ?')
          .all(campaignId)
          .map((row) => row.call_id),
      )
      for (const channelId of channelIds) expect(runCallIds.has(channelId)).toBe(true)
      // The kill caught calls in flight: the survivor closed them as interrupted.
      const interrupted = db
        .query(`SELECT count(*) AS n FROM workflow_runs WHERE campaign_id = ? AND disposition = 'interrupted'`)
        .get(campaignId)!.n as number
      expect(interrupted).toBeGreaterThan(0)
    } finally {
      db.close()
    }
  }, 180_000)
})
