import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseProblems } from '../src/db/integrity'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import {
  callApi,
  listeningUrl,
  outputOf,
  SOURCE_COMMAND,
  spawnServe,
  uploadCsvTo,
  type ServeProcess,
} from './support/serve-process'
import { waitFor } from './support/wait'
import { configureModelsNeverAsked } from './support/voice-models'
import { say, startFakeModels, type FakeModels } from './support/fake-models'
import { CONTACT_RUNS_SQL, expectEveryContactSettledOnce, type ContactRuns } from './support/campaigns'

// kill -9 of a server in the middle of a campaign, then a restart on the same data dir: no attempt is dialled twice,
// no contact is lost, and the campaign finishes with exact counters. The server is a real `ringbase serve` process
// dialing a fake Asterisk that replays recorded calls.

const KEY = 'rb_crash_test_bootstrap_key_0123456789'
const CONTACTS = 60

let fake: FakeAri
let dataDir: string
/** Every server started here: a failing test (a wait timing out before its kill) must leave no `ringbase serve` behind. */
const servers: ServeProcess[] = []

/** The model server the answered calls talk to: the agent says hello and waits. */
let models: FakeModels

beforeAll(async () => {
  models = startFakeModels()
  models.chat.handler = () => say('Hello.')
  fake = await startFakeAri({ timeScale: 0.05 })
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-crash-'))
})
afterAll(async () => {
  for (const server of servers) server.kill('SIGKILL')
  await Promise.all(servers.map((server) => server.exited))
  await fake.close()
  models.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

async function startServer() {
  const server = spawnServe(SOURCE_COMMAND, ['--dir', dataDir, '--ring-timeout', '5'], {
    RINGBASE_BOOTSTRAP_API_KEY: KEY,
    RINGBASE_LOG_LEVEL: 'info',
    // The killed process counts as dead (its calls recovered, its ARI lease taken over) 3 heartbeats after its last.
    RINGBASE_INSTANCE_HEARTBEAT_MS: '200',
  })
  servers.push(server)
  return { server, url: await listeningUrl(outputOf(server.stdout)) }
}

const api = (base: string, method: string, path: string, body?: unknown) => callApi(base, KEY, method, path, body)

const originatedChannelIds = () =>
  fake.requests
    .filter((request) => request.method === 'POST' && request.path.endsWith('/channels'))
    .map((request) => request.query.channelId)

test('kill -9 mid-campaign, restart: each attempt dialled at most once, every contact settled, exact counters', async () => {
  let { server, url } = await startServer()
  const agent = await api(url, 'POST', '/api/v1/workflow/create/definition', {
    name: 'Crash agent',
    workflow_definition: {
      nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello' } }],
      edges: [],
    },
  })
  await api(url, 'POST', '/api/v1/organizations/telephony-configs', {
    name: 'PBX',
    is_default_outbound: true,
    config: { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass' },
  })
  // Answered calls ask a model server that is there: one nothing listens on would stop the dialer (models/health.ts).
  await configureModelsNeverAsked((path, body) => api(url, 'POST', path, body), undefined, models.baseUrl)
  await waitFor('ARI connected', async () => (await api(url, 'GET', '/api/v1/health')).ari.connected === 1, 10_000)
  const csv = ['phone_number', ...Array.from({ length: CONTACTS }, (_, i) => String(1000 + i))].join('\n') + '\n'
  const campaign = await api(url, 'POST', '/api/v1/campaign/create', {
    name: 'Crash',
    source_type: 'csv',
    source_id: await uploadCsvTo(url, KEY, csv, 'crash.csv'),
    workflow_id: agent.id,
    rate_limit_per_second: 25,
    max_concurrency: 8,
  })
  await api(url, 'POST', `/api/v1/campaign/${campaign.id}/start`)

  await waitFor('some calls placed', () => originatedChannelIds().length >= 15, 20_000)
  server.kill('SIGKILL')
  await server.exited

  ;({ server, url } = await startServer())
  try {
    await waitFor(
      'campaign completed',
      async () => (await api(url, 'GET', `/api/v1/campaign/${campaign.id}`)).state === 'completed',
      30_000,
    )
    const done = await api(url, 'GET', `/api/v1/campaign/${campaign.id}`)
    expect(done.total_rows).toBe(CONTACTS)
    expect(done.executed_count).toBe(done.processed_rows)
    expect(done.total_queued_count).toBe(done.processed_rows)

    const channelIds = originatedChannelIds()
    expect(new Set(channelIds).size).toBe(channelIds.length)

    const db = new Database(join(dataDir, 'ringbase.db'), { readonly: true })
    try {
      const contacts = db.query<ContactRuns, [number]>(CONTACT_RUNS_SQL).all(campaign.id)
      expectEveryContactSettledOnce(contacts, CONTACTS)
      const runCallIds = new Set(
        db
          .query<{ call_id: string }, [number]>('SELECT call_id FROM workflow_runs WHERE campaign_id = ?')
          .all(campaign.id)
          .map((row) => row.call_id),
      )
      for (const channelId of channelIds) expect(runCallIds.has(channelId)).toBe(true)
      expect(contacts.reduce((sum, contact) => sum + contact.attempts, 0)).toBe(done.processed_rows)
      // The kill caught calls in flight (max_concurrency 8 of ~300 ms calls at 25/s): the restart closed them.
      const interrupted = db
        .query<{ n: number }, [number]>(
          `SELECT count(*) AS n FROM workflow_runs WHERE campaign_id = ? AND disposition = 'interrupted'`,
        )
        .get(campaign.id)!.n
      expect(interrupted).toBeGreaterThan(0)
    } finally {
      db.close()
    }
    expect(databaseProblems(dataDir)).toEqual([])
  } finally {
    server.kill('SIGTERM')
    await server.exited
  }
}, 90_000)
