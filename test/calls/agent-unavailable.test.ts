import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { manualClock } from '../../src/lib/clock'
import { ulawToPcm16 } from '../../src/voice/g711'
import { rms } from '../support/audio'
import { createTestApp, UNREACHABLE_URL, type TestApp } from '../support/app'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import {
  createAgent,
  createAriConfiguration,
  csvOf,
  manualScheduler,
  scriptedTelephony,
  uploadCsv,
} from '../support/campaigns'
import type { FakeMediaChannel } from '../support/fake-ari-media'
import { addPhoneNumber } from '../support/telephony'
import { createVoiceAgent, marksProcessed } from '../support/voice-calls'
import { configureModelsNeverAsked } from '../support/voice-models'
import { waitFor } from '../support/wait'

/**
 * An agent that cannot run (no LLM, no speech to text in its pinned configuration, a model server seen failing) is
 * refused before anything is dialled: API run starts (production and test routes) answer 400 naming what is missing,
 * a campaign does not start, a running campaign pauses with the reason; an inbound call hears the agent's unavailable
 * line in the built-in voice (or is not answered), never silence.
 */

const CONNECTIONS = '/api/v1/organizations/provider-connections'
const CONFIGURATIONS = '/api/v1/organizations/model-configurations'

const runCount = (t: TestApp) =>
  t.ctx.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM workflow_runs').get()!.n

describe('outbound run starts and campaigns: refused before dialling', () => {
  let t: TestApp
  beforeEach(() => {
    t = createTestApp()
  })
  afterEach(() => t.close())

  async function post(path: string, body: unknown) {
    const response = await t.request('POST', path, { body })
    expect(response.status, response.text).toBe(200)
    return response.body
  }

  test('no LLM anywhere: both trigger routes answer 400 naming it, nothing is dialled and no run is written', async () => {
    const telephony = scriptedTelephony(t, () => 'hold')
    await createAriConfiguration(t)
    const agent = await createAgent(t)
    const { workflow_uuid: uuid } = (await t.request('GET', `/api/v1/workflow/fetch/${agent}`)).body
    const runsBefore = runCount(t)
    for (const path of [`/api/v1/public/agent/workflow/${uuid}`, `/api/v1/public/agent/test/workflow/${uuid}`]) {
      const response = await t.request('POST', path, { body: { phone_number: '+14155550100' } })
      expect(response.status, path).toBe(400)
      expect(response.body.detail).toBe(
        'The agent cannot take a call: no LLM is configured: create a model configuration (or make one the default)',
      )
    }
    expect(telephony.dials).toEqual([])
    expect(runCount(t)).toBe(runsBefore)
  })

  test('a campaign does not start without models, and pauses with the reason when its model server is seen failing mid-campaign', async () => {
    const telephony = scriptedTelephony(t, () => 'hold')
    await createAriConfiguration(t)
    const workflowId = await createAgent(t)
    const sourceId = await uploadCsv(t, csvOf(['phone_number'], [['+14155550101'], ['+14155550102'], ['+14155550103']]))
    const campaign = await post('/api/v1/campaign/create', {
      name: 'Promo',
      source_type: 'csv',
      workflow_id: workflowId,
      source_id: sourceId,
    })
    const refused = await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toBe(
      `The campaign cannot call: agent ${workflowId}: no LLM is configured: create a model configuration (or make one the default)`,
    )
    expect((await t.request('GET', `/api/v1/campaign/${campaign.id}`)).body.state).toBe('draft')

    await configureModelsNeverAsked(t)
    expect((await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)).status).toBe(200)
    const scheduler = manualScheduler(t)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)

    // Its model server (nothing listens there) is checked and found down: the next dial does not happen.
    const [connection] = (await t.request('GET', CONNECTIONS)).body.connections.filter(
      (row: { base_url: string }) => row.base_url === UNREACHABLE_URL,
    )
    expect((await t.request('POST', `${CONNECTIONS}/${connection.uuid}/check`)).body.ok).toBe(false)
    ;(t.ctx.clock as ReturnType<typeof manualClock>).advance(5_000)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    const paused = (await t.request('GET', `/api/v1/campaign/${campaign.id}`)).body
    expect(paused.state).toBe('paused')
    expect(paused.logs.at(-1)).toMatchObject({ level: 'warning', event: 'models_unavailable' })
    expect(paused.logs.at(-1).message).toContain(
      `the LLM model server (provider connection '${connection.name}') failed`,
    )
    // Resuming is refused for the same reason while it is remembered.
    const resume = await t.request('POST', `/api/v1/campaign/${campaign.id}/resume`)
    expect(resume.status).toBe(400)
    expect(resume.body.detail).toContain('the LLM model server')
    expect(telephony.dials).toHaveLength(1)
  })

  test('a redial is a draft campaign: started without models it is refused like any other, nothing more is dialled', async () => {
    const telephony = scriptedTelephony(t, () => 'busy')
    await createAriConfiguration(t)
    await configureModelsNeverAsked(t)
    const workflowId = await createAgent(t)
    const sourceId = await uploadCsv(t, csvOf(['phone_number'], [['+14155550101']]))
    const campaign = await post('/api/v1/campaign/create', {
      name: 'Promo',
      source_type: 'csv',
      workflow_id: workflowId,
      source_id: sourceId,
      rate_limit_per_second: 100,
      retry_config: { enabled: false, max_retries: 0 },
    })
    expect((await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)).status).toBe(200)
    const scheduler = manualScheduler(t)
    await scheduler.tickEvery(200_000, 6)
    expect((await t.request('GET', `/api/v1/campaign/${campaign.id}`)).body.state).toBe('completed')
    const dialled = telephony.dials.length
    expect(dialled).toBe(1)

    for (const configuration of (await t.request('GET', CONFIGURATIONS)).body.configurations)
      expect((await t.request('DELETE', `${CONFIGURATIONS}/${configuration.uuid}`)).status).toBe(200)
    const child = await post(`/api/v1/campaign/${campaign.id}/redial`, {})
    expect(child).toMatchObject({ state: 'draft', total_rows: 1 })
    const refused = await t.request('POST', `/api/v1/campaign/${child.id}/start`)
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toContain('no LLM is configured')
    await scheduler.tickEvery(200_000, 3)
    expect(telephony.dials).toHaveLength(dialled)
  })
})

describe('voice agents through ARI', () => {
  let app: AriVoiceApp
  beforeAll(async () => {
    app = await startAriVoiceApp({ allow_raw_dial_strings: true })
  })
  afterAll(() => app.stop())
  afterEach(() => {
    for (const id of app.fake.liveChannelIds()) app.fake.hangup(id)
  })

  /** A configuration with an LLM on the fake server and no speech to text: voice runs of an agent pinning it cannot run. */
  async function llmOnlyConfiguration(): Promise<string> {
    const { t, models } = app
    const connection = (
      await t.request('POST', CONNECTIONS, {
        body: { name: `LLM ${crypto.randomUUID().slice(0, 6)}`, provider: 'openai', base_url: models.baseUrl },
      })
    ).body
    const configuration = await t.request('POST', CONFIGURATIONS, {
      body: {
        name: `LLM only ${crypto.randomUUID().slice(0, 6)}`,
        llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      },
    })
    expect(configuration.status, configuration.text).toBe(200)
    return configuration.body.uuid
  }

  test('a trigger for an agent whose pinned configuration has no speech to text is 400 naming it; nothing is dialled', async () => {
    const { t, fake } = app
    const agent = await createVoiceAgent(t, {
      configurations: { model_configuration_uuid: await llmOnlyConfiguration() },
    })
    const originatesBefore = fake.requests.filter(
      (request) => request.method === 'POST' && request.path === '/ari/channels',
    ).length
    const response = await t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, {
      body: { phone_number: 'Local/102@test' },
    })
    expect(response.status).toBe(400)
    expect(response.body.detail).toBe(
      'The agent cannot take a call: no speech to text is configured: add an stt section to the model configuration',
    )
    expect(
      fake.requests.filter((request) => request.method === 'POST' && request.path === '/ari/channels').length,
    ).toBe(originatesBefore)
  })

  test('an inbound call to an agent that cannot run is answered and hears its unavailable line in the built-in voice, then is hung up', async () => {
    const { t, fake, configurationId } = app
    const message = 'We are closed for maintenance. Goodbye.'
    const agent = await createVoiceAgent(t, {
      configurations: { model_configuration_uuid: await llmOnlyConfiguration(), unavailable_call: { message } },
    })
    await addPhoneNumber(t, configurationId, { address: '+15551239000', inbound_workflow_id: agent.id })
    const channelId = fake.inboundCall({ exten: '+15551239000', callerNumber: '+15559870000' })
    let media: FakeMediaChannel | undefined
    await waitFor('the media leg', () => (media = fake.mediaOf(channelId)) !== undefined, 5_000)
    await waitFor('the line played', () => marksProcessed(media!) >= 1, 15_000)
    await waitFor('hung up by us', () => !fake.liveChannelIds().includes(channelId), 5_000)
    const loud = media!.played.filter((frame) => rms(ulawToPcm16(frame.ulaw)) > 500)
    // Flite speaks the line for about 2 s: well over 25 frames of 20 ms that are not silence.
    expect(loud.length).toBeGreaterThan(25)
    expect(app.models.requestsTo('/chat/completions')).toEqual([])
    const run = t.ctx.sqlite
      .query<{ disposition: string; logs: string }, [string]>(
        'SELECT disposition, logs FROM workflow_runs WHERE call_id = ?',
      )
      .get(channelId)!
    expect(run.disposition).toBe('pipeline_error')
    expect(JSON.parse(run.logs).warnings[0]).toContain('no speech to text is configured')
  }, 30_000)

  test('with unavailable_call.answer false the inbound call is not answered and no run is written', async () => {
    const { t, fake, configurationId } = app
    const agent = await createVoiceAgent(t, {
      configurations: { model_configuration_uuid: await llmOnlyConfiguration(), unavailable_call: { answer: false } },
    })
    await addPhoneNumber(t, configurationId, { address: '+15551239111', inbound_workflow_id: agent.id })
    const runsBefore = runCount(t)
    const channelId = fake.inboundCall({ exten: '+15551239111' })
    await waitFor('hung up', () => !fake.liveChannelIds().includes(channelId))
    expect(fake.requests.some((request) => request.path === `/ari/channels/${channelId}/answer`)).toBe(false)
    expect(runCount(t)).toBe(runsBefore)
  })
})
