import { afterEach, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseProblems } from '../src/db/integrity'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { callApi, readDataDir, SOURCE_COMMAND, startServe } from './support/serve-process'
import { waitFor } from './support/wait'
import { configureModelsNeverAsked } from './support/voice-models'

// kill -9 while a campaign call is up, the far end hangs up while the server is down, restart: the person who
// already answered is not called again, and the bridge the call left on the PBX is destroyed (only ours, only closed).

const KEY = 'rb_crash_recovery_bootstrap_key_0123456'

let fake: FakeAri
let dataDir: string
let running: Awaited<ReturnType<typeof startServe>> | null = null
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-recovery-'))
})
afterEach(async () => {
  running?.server.kill('SIGKILL')
  await running?.server.exited
  running = null
  await fake.close()
  rmSync(dataDir, { recursive: true, force: true })
})

async function startServer(): Promise<void> {
  running = await startServe(SOURCE_COMMAND, ['--dir', dataDir], {
    RINGBASE_BOOTSTRAP_API_KEY: KEY,
    RINGBASE_LOG_LEVEL: 'info',
    // The killed process counts as dead (its calls recovered, its ARI lease taken over) 3 heartbeats after its last.
    RINGBASE_INSTANCE_HEARTBEAT_MS: '200',
  })
}

async function killServer(): Promise<void> {
  running!.server.kill('SIGKILL')
  await running!.server.exited
  running = null
}

const api = (method: string, path: string, body?: unknown) => callApi(running!.url, KEY, method, path, body)

/** A running one-contact campaign dialling the fake Asterisk; returns its id. */
async function startOneContactCampaign(retryConfig: Record<string, unknown>): Promise<number> {
  const agent = await api('POST', '/api/v1/workflow/create/definition', {
    name: 'Recovery agent',
    workflow_definition: {
      nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello' } }],
      edges: [],
    },
  })
  await api('POST', '/api/v1/organizations/telephony-configs', {
    name: 'PBX',
    is_default_outbound: true,
    config: { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass' },
  })
  await configureModelsNeverAsked((path, body) => api('POST', path, body))
  await waitFor('ARI connected', async () => (await api('GET', '/api/v1/health')).ari.connected === 1, 10_000)
  const csv = 'phone_number\n1000\n'
  const grant = await api('POST', '/api/v1/s3/presigned-upload-url', { file_name: 'one.csv', file_size: csv.length })
  const put = await fetch(grant.upload_url.replace(/^https?:\/\/[^/]+/, running!.url), {
    method: 'PUT',
    body: csv,
    headers: { 'content-type': 'text/csv' },
  })
  expect(put.status).toBe(200)
  const campaign = await api('POST', '/api/v1/campaign/create', {
    name: 'Recovery',
    source_type: 'csv',
    source_id: grant.file_key,
    workflow_id: agent.id,
    retry_config: retryConfig,
  })
  await api('POST', `/api/v1/campaign/${campaign.id}/start`)
  return campaign.id
}

const originates = () =>
  fake.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/channels'))

const readDb = <T>(sql: string): T[] => readDataDir<T>(dataDir, sql)

/** A bridge made by someone else on the same Asterisk: recovery must leave it. */
async function createBridge(bridgeId: string): Promise<void> {
  const response = await fetch(`${fake.url}/ari/bridges?type=mixing&bridgeId=${encodeURIComponent(bridgeId)}`, {
    method: 'POST',
    headers: { authorization: `Basic ${btoa('ariuser:aripass')}` },
  })
  expect(response.status).toBe(200)
}

test('an answered call that ended while the server was down: contact not dialled again, its bridge destroyed', async () => {
  fake = await startFakeAri({ defaultScenario: 'answered-stays-up' })
  await startServer()
  const campaignId = await startOneContactCampaign({ enabled: true, max_retries: 3, retry_delay_seconds: 30 })
  await waitFor(
    'the call answered and bridged',
    () =>
      fake.bridgeIds().some((id) => id.startsWith('ringbase-')) &&
      readDb<{ state: string }>(`SELECT state FROM workflow_runs WHERE call_id IS NOT NULL`)[0]?.state === 'running',
    10_000,
  )
  const callId = originates()[0].query.channelId
  await killServer()

  fake.hangup(callId)
  expect(fake.bridgeIds()).toContain(`ringbase-${callId}`)
  await createBridge('other-application-bridge')
  await createBridge('ringbase-00000000-0000-4000-8000-000000000000')

  await startServer()
  await waitFor(
    'campaign completed',
    async () => (await api('GET', `/api/v1/campaign/${campaignId}`)).state === 'completed',
    10_000,
  )
  expect(originates()).toHaveLength(1)
  expect(
    readDb<{ state: string; attempts: number; last_outcome: string }>(
      'SELECT state, attempts, last_outcome FROM campaign_contacts',
    ),
  ).toEqual([{ state: 'done', attempts: 1, last_outcome: 'completed' }])
  expect(readDb<{ disposition: string }>('SELECT disposition FROM workflow_runs')).toEqual([
    { disposition: 'interrupted' },
  ])
  // Ours and closed: destroyed. Another application's, and one named like ours but of no run of this installation: kept.
  expect(fake.bridgeIds().sort()).toEqual(['other-application-bridge', 'ringbase-00000000-0000-4000-8000-000000000000'])
  expect(databaseProblems(dataDir)).toEqual([])
}, 60_000)

test('a call never answered when the server died gets a new attempt only within retry_config', async () => {
  // Rings for the whole (real time) ring timeout.
  fake = await startFakeAri({ defaultScenario: 'no-answer', timeScale: 1 })
  await startServer()
  const campaignId = await startOneContactCampaign({ enabled: true, max_retries: 0, retry_delay_seconds: 30 })
  await waitFor('the call ringing', () => originates().length === 1 && fake.liveChannelIds().length > 0, 10_000)
  await killServer()

  await startServer()
  await waitFor(
    'campaign completed',
    async () => (await api('GET', `/api/v1/campaign/${campaignId}`)).state === 'completed',
    10_000,
  )
  expect(originates()).toHaveLength(1)
  expect(
    readDb<{ state: string; attempts: number; last_outcome: string }>(
      'SELECT state, attempts, last_outcome FROM campaign_contacts',
    ),
  ).toEqual([{ state: 'done', attempts: 1, last_outcome: 'interrupted' }])
  const campaign = await api('GET', `/api/v1/campaign/${campaignId}`)
  expect(campaign).toMatchObject({ executed_count: 1, failed_rows: 1 })
  expect(databaseProblems(dataDir)).toEqual([])
}, 60_000)
