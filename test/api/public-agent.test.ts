import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { startAriManager } from '../../src/telephony/ari/manager'
import type { TelephonyProvider } from '../../src/telephony/provider'
import { createTestApp, type TestApp } from '../support/app'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { addPhoneNumber, createConfiguration } from '../support/telephony'
import { waitFor } from '../support/wait'
import { configureModelsNeverAsked } from '../support/voice-models'

/**
 * The four run-start endpoints, black-box: agents and telephony configurations are created through the API, the
 * ARI configuration points at a fake Asterisk that replays recorded calls, and outcomes flow through the real
 * connection manager, adapter and call-report handler into the run detail.
 */

const PUBLIC = '/api/v1/public/agent'
let t: TestApp
let fake: FakeAri
let clock: ReturnType<typeof manualClock>

beforeEach(async () => {
  fake = await startFakeAri()
  clock = manualClock(Date.parse('2026-01-05T10:00:00Z'))
  t = createTestApp({ clock, flags: { 'ring-timeout': '5' } })
  startAriManager(t.ctx, { events: { backoff: { baseMs: 2, capMs: 10 } } })
  await configureModelsNeverAsked(t)
})
afterEach(async () => {
  await t.ctx.ari!.stop()
  await fake.close()
  t.close()
})

const definition = (trigger: Record<string, unknown> | null) => ({
  nodes: [
    { id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { name: 'Start', prompt: 'Greet {{first_name}}.' } },
    ...(trigger ? [{ id: '2', type: 'trigger', position: { x: 0, y: 100 }, data: { name: 'API', ...trigger } }] : []),
  ],
  edges: [],
})

type Agent = { id: number; workflow_uuid: string; triggerPath: string }

async function createAgent(key = t.adminKey, configurations: Record<string, unknown> = {}): Promise<Agent> {
  const triggerPath = crypto.randomUUID()
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    key,
    body: {
      name: 'Reminder',
      workflow_definition: definition({ trigger_path: triggerPath }),
      workflow_configurations: configurations,
    },
  })
  expect(response.status, response.text).toBe(200)
  return { id: response.body.id, workflow_uuid: response.body.workflow_uuid, triggerPath }
}

async function createAriConfiguration(key?: string, { rawDialStrings = true } = {}) {
  const config = await createConfiguration(
    t,
    `pbx ${crypto.randomUUID().slice(0, 8)}`,
    {
      // The fake Asterisk scripts its scenarios by endpoint (Local/486@test is busy…): dialled as written.
      provider: 'ari',
      ari_endpoint: fake.url,
      app_name: 'ariuser',
      app_password: 'aripass',
      allow_raw_dial_strings: rawDialStrings,
    },
    { key, isDefaultOutbound: true },
  )
  await waitFor('ARI connected', () => t.ctx.ariConnected(config.id))
  return config
}

const trigger = (path: string, body: unknown, key: string | null = t.adminKey) => t.request('POST', path, { key, body })
const byTrigger = (agent: Agent, body: unknown, key?: string | null) =>
  trigger(`${PUBLIC}/${agent.triggerPath}`, body, key)
const byUuid = (agent: Agent, body: unknown, key?: string | null) =>
  trigger(`${PUBLIC}/workflow/${agent.workflow_uuid}`, body, key)

async function runDetail(agent: Agent, runId: number, key = t.adminKey) {
  const response = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${runId}`, { key })
  expect(response.status, response.text).toBe(200)
  return response.body
}

const callIdOf = (runId: number) =>
  t.ctx.sqlite.query<{ call_id: string }, [number]>('SELECT call_id FROM workflow_runs WHERE id = ?').get(runId)!
    .call_id

async function untilCompleted(agent: Agent, runId: number) {
  await waitFor(`run ${runId} completed`, async () => (await runDetail(agent, runId)).is_completed)
  return runDetail(agent, runId)
}

describe('validation and authentication come first', () => {
  test('a missing key and a missing phone_number are reported together (422)', async () => {
    const response = await trigger(`${PUBLIC}/anything`, { initial_context: {} }, null)
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual([
      { type: 'missing', loc: ['header', 'X-API-Key'], msg: 'Field required', input: null },
      { type: 'missing', loc: ['body', 'phone_number'], msg: 'Field required', input: { initial_context: {} } },
    ])
  })

  test('no body at all, wrong types and a malformed model override are 422, even with a bad key', async () => {
    expect((await t.request('POST', `${PUBLIC}/workflow/x`, { key: null })).body.detail).toEqual([
      { type: 'missing', loc: ['header', 'X-API-Key'], msg: 'Field required', input: null },
      { type: 'missing', loc: ['body'], msg: 'Field required', input: null },
    ])
    const response = await trigger(
      `${PUBLIC}/x`,
      {
        phone_number: 100,
        telephony_configuration_id: 'one',
        model_overrides: { llm: { provider_connection_uuid: 'not-a-uuid' } },
      },
      'nope',
    )
    expect(response.status).toBe(422)
    expect(response.body.detail.map((item: { loc: unknown }) => item.loc)).toEqual([
      ['body', 'phone_number'],
      ['body', 'telephony_configuration_id'],
      ['body', 'model_overrides', 'llm', 'provider_connection_uuid'],
    ])
  })

  test('an unknown or archived key is 401 Invalid API key; a trigger-scope key may start runs', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    expect(await byTrigger(agent, { phone_number: 'Local/486@test' }, 'rb_unknown')).toMatchObject({
      status: 401,
      body: { detail: 'Invalid API key' },
    })
    const key = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'crm', scope: 'trigger' } })
    expect((await byTrigger(agent, { phone_number: 'Local/486@test' }, key.body.api_key)).status).toBe(200)
    await t.request('DELETE', `/api/v1/user/api-keys/${key.body.id}`)
    expect((await byTrigger(agent, { phone_number: 'Local/486@test' }, key.body.api_key)).status).toBe(401)
  })
})

describe('which agent runs', () => {
  test('404 ladder: unknown, swapped identifiers, archived, trigger removed or disabled', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    const body = { phone_number: 'Local/486@test' }
    const expect404 = async (path: string, detail: string) =>
      expect(await trigger(path, body)).toMatchObject({ status: 404, body: { detail } })
    await expect404(`${PUBLIC}/${crypto.randomUUID()}`, 'Agent trigger not found')
    await expect404(`${PUBLIC}/${agent.workflow_uuid}`, 'Agent trigger not found')
    await expect404(`${PUBLIC}/workflow/${agent.triggerPath}`, 'Workflow not found')
    await expect404(`${PUBLIC}/test/workflow/${crypto.randomUUID()}`, 'Workflow not found')

    // a draft without the trigger: the test route runs the draft, production keeps the published version
    await t.request('PUT', `/api/v1/workflow/${agent.id}`, { body: { workflow_definition: definition(null) } })
    await expect404(`${PUBLIC}/test/${agent.triggerPath}`, 'Trigger not found in the selected Agent')
    expect((await byTrigger(agent, body)).status).toBe(200)
    await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)
    await expect404(`${PUBLIC}/${agent.triggerPath}`, 'Trigger not found in the selected Agent')

    await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_definition: definition({ trigger_path: agent.triggerPath, enabled: false }) },
    })
    await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)
    await expect404(`${PUBLIC}/${agent.triggerPath}`, 'Agent trigger is not active')

    await t.request('PUT', `/api/v1/workflow/${agent.id}/status`, { body: { status: 'archived' } })
    await expect404(`${PUBLIC}/workflow/${agent.workflow_uuid}`, 'Workflow is not active')
  })

  test("another organization's agent is 404, never 403, by either identifier", async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    const other = t.newOrg('other')
    expect(await byTrigger(agent, { phone_number: '100' }, other.key)).toMatchObject({
      status: 404,
      body: { detail: 'Agent trigger not found' },
    })
    expect(await byUuid(agent, { phone_number: '100' }, other.key)).toMatchObject({
      status: 404,
      body: { detail: 'Workflow not found' },
    })
  })
})

describe('telephony, destination and limits', () => {
  test('without a configuration: 400; an explicit id of another organization or a parked one: 404', async () => {
    const agent = await createAgent()
    expect(await byUuid(agent, { phone_number: '100' })).toMatchObject({
      status: 400,
      body: { detail: 'Telephony provider not configured for this organization' },
    })
    const other = t.newOrg('other')
    const foreign = await createAriConfiguration(other.key)
    expect(await byUuid(agent, { phone_number: '100', telephony_configuration_id: foreign.id })).toMatchObject({
      status: 404,
      body: { detail: 'Telephony configuration not found' },
    })
    const own = await createAriConfiguration()
    t.ctx.sqlite.query('UPDATE telephony_configurations SET inactive = 1 WHERE id = ?').run(own.id)
    expect((await byUuid(agent, { phone_number: '100', telephony_configuration_id: own.id })).status).toBe(404)
  })

  test('a caller id must be an active number of the resolved configuration; ARI presents only a chosen or default one', async () => {
    const config = await createAriConfiguration()
    const agent = await createAgent()
    const number = await addPhoneNumber(t, config.id, { address: '+14155550100' })
    expect(await byUuid(agent, { phone_number: '100', from_phone_number_id: number.id + 1 })).toMatchObject({
      status: 400,
      body: { detail: 'from_phone_number_not_found' },
    })
    const originates = () => fake.requests.filter((r) => r.path === '/ari/channels' && r.method === 'POST')
    expect((await byUuid(agent, { phone_number: 'Local/486@test', from_phone_number_id: number.id })).status).toBe(200)
    expect(originates()[0].query.callerId).toBe('+14155550100')
    // neither chosen nor the default: ARI leaves the caller id to the trunk
    const unchosen = await byUuid(agent, { phone_number: 'Local/486@test' })
    expect(originates()[1].query.callerId).toBeUndefined()
    expect((await untilCompleted(agent, unchosen.body.workflow_run_id)).initial_context.caller_number).toBeUndefined()
  })

  test('toll fraud: a trigger key cannot dial a raw dial string unless the ARI configuration allows them', async () => {
    await createAriConfiguration(undefined, { rawDialStrings: false })
    const agent = await createAgent()
    const trigger = t.newOrg('default', 'trigger')
    for (const phone of [
      'Local/s@from-internal',
      'PJSIP/0044900123456@trunk',
      'SIP/trunk/0900123',
      'DAHDI/g1/0900123',
    ]) {
      const response = await byUuid(agent, { phone_number: phone }, trigger.key)
      expect(response.status, phone).toBe(400)
      expect(response.body.detail).toContain('allow_raw_dial_strings')
    }
    expect(fake.requests.some((r) => r.path === '/ari/channels' && r.method === 'POST')).toBe(false)
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual({ n: 0 })
    // A number goes through dial_string_template (PJSIP/{number} by default).
    expect((await byUuid(agent, { phone_number: '486' }, trigger.key)).status).toBe(200)
    expect(fake.requests.filter((r) => r.path === '/ari/channels' && r.method === 'POST').at(-1)!.query.endpoint).toBe(
      'PJSIP/486',
    )
  })

  test('the ARI form lists allow_raw_dial_strings, off by default', async () => {
    const metadata = (await t.request('GET', '/api/v1/organizations/telephony-providers/metadata')).body.providers
    expect(metadata.find((provider: { provider: string }) => provider.provider === 'ari').fields).toContainEqual(
      expect.objectContaining({
        name: 'allow_raw_dial_strings',
        type: 'boolean',
        required: false,
        description: expect.stringContaining('dial_string_template'),
      }),
    )
    const created = await createConfiguration(t, 'plain pbx', {
      provider: 'ari',
      ari_endpoint: fake.url,
      app_name: 'u',
      app_password: 'p',
    })
    expect(created.credentials.allow_raw_dial_strings).toBe(false)
  })

  test('destinations are checked for the provider: no separators or injection; E.164 for carriers', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    for (const phone of ['100&Local/200@test', '+1 415 555 0100', 'PJSIP/a,b', 'Local/100@test)']) {
      const response = await byUuid(agent, { phone_number: phone })
      expect(response.status, phone).toBe(400)
      expect(response.body.detail).toStartWith('phone_number ')
    }
    expect(fake.requests.some((r) => r.path === '/ari/channels' && r.method === 'POST')).toBe(false)
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual({ n: 0 })

    const dialled: string[] = []
    const carrier: TelephonyProvider = {
      dial: async (request) => {
        dialled.push(request.destination)
      },
      hangup: async () => {},
      callState: async () => 'unknown',
    }
    t.ctx.telephony.register('twilio', carrier)
    const twilio = await createConfiguration(t, 'carrier', {
      provider: 'twilio',
      account_sid: 'AC1',
      auth_token: 'secret-token',
    })
    await addPhoneNumber(t, twilio.id, { address: '+14155550199' })
    expect(await byUuid(agent, { phone_number: '100', telephony_configuration_id: twilio.id })).toMatchObject({
      status: 400,
      body: { detail: "phone_number must be an E.164 number: '+' and 8 to 15 digits, e.g. +14155550100" },
    })
    expect((await byUuid(agent, { phone_number: '+14155550100', telephony_configuration_id: twilio.id })).status).toBe(
      200,
    )
    expect(dialled).toEqual(['+14155550100'])
  })

  test("the organization's concurrent call limit answers 429 without creating a run", async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    t.ctx.sqlite.query('UPDATE organizations SET concurrent_call_limit = 1').run()
    const first = await byUuid(agent, { phone_number: 'Local/102@test' })
    expect(first.status).toBe(200)
    expect(await byUuid(agent, { phone_number: 'Local/102@test' })).toMatchObject({
      status: 429,
      body: { detail: 'Concurrent call limit reached' },
    })
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual({ n: 1 })
    fake.hangup(callIdOf(first.body.workflow_run_id))
    await untilCompleted(agent, first.body.workflow_run_id)
    expect((await byUuid(agent, { phone_number: 'Local/486@test' })).status).toBe(200)
  })

  test('an originate Asterisk refuses fails the run and answers 400 Failed to initiate call', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    fake.setCredentials('ariuser', 'rotated') // the open websocket stays up; new REST requests are refused
    const response = await byUuid(agent, { phone_number: 'Local/100@test' })
    expect(response).toMatchObject({
      status: 400,
      body: { detail: 'Failed to initiate call: Asterisk refused the call (HTTP 401: Authentication required)' },
    })
    const runId = t.ctx.sqlite.query<{ id: number }, []>('SELECT id FROM workflow_runs').get()!.id
    const run = await runDetail(agent, runId)
    expect(run).toMatchObject({ is_completed: true, gathered_context: { mapped_call_disposition: 'failed' } })
    expect(run.logs.telephony.provider_status).toStartWith('dial_failed: Asterisk refused the call')
  })
})

describe('a started run', () => {
  test('200 with the run; the run records mode, direction, numbers and the client context', async () => {
    const config = await createAriConfiguration()
    await addPhoneNumber(t, config.id, { address: '+14155550100', is_default_caller_id: true })
    const agent = await createAgent()
    const response = await byTrigger(agent, {
      phone_number: 'Local/486@test',
      initial_context: {
        first_name: 'Ada',
        provider: 'spoofed',
        called_number: 'spoofed',
        runtime_configuration: { x: 1 },
      },
      model_overrides: { llm: { settings: { temperature: 0.2 } } },
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      status: 'initiated',
      workflow_run_id: expect.any(Number),
      workflow_run_name: expect.stringMatching(/^WR-API-\d{4}$/),
    })
    const run = await untilCompleted(agent, response.body.workflow_run_id)
    expect(run).toMatchObject({ mode: 'ari', call_type: 'outbound', name: response.body.workflow_run_name })
    expect(run.initial_context).toMatchObject({
      first_name: 'Ada',
      provider: 'ari',
      direction: 'outbound',
      called_number: 'Local/486@test',
      caller_number: '+14155550100',
      telephony_configuration_id: config.id,
      trigger_mode: 'production',
      agent_identifier_type: 'trigger_path',
    })
    // The client cannot write runtime_configuration (the conversation records what it used there); the overrides are kept with the run.
    expect(run.initial_context.runtime_configuration).toBeUndefined()
    const stored = t.ctx.sqlite
      .query<{ model_overrides: string }, [number]>('SELECT model_overrides FROM workflow_runs WHERE id = ?')
      .get(run.id)!
    expect(JSON.parse(stored.model_overrides)).toEqual({ llm: { settings: { temperature: 0.2 } } })
    const originate = fake.requests.find((r) => r.path === '/ari/channels' && r.method === 'POST')!
    expect(originate.query).toMatchObject({
      endpoint: 'Local/486@test',
      app: config.credentials.stasis_app_name,
      timeout: '5',
    })
  })

  test('the test route runs the draft and names the run WR-TEST-NNNN', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_definition: definition({ trigger_path: agent.triggerPath, name: 'draft' }) },
    })
    const response = await trigger(`${PUBLIC}/test/workflow/${agent.workflow_uuid}`, { phone_number: 'Local/486@test' })
    expect(response.body.workflow_run_name).toMatch(/^WR-TEST-\d{4}$/)
    const run = await untilCompleted(agent, response.body.workflow_run_id)
    expect(run.version_number).toBe(2)
  })
})

describe('outcomes end to end', () => {
  const table = [
    { scenario: 'busy', phone: 'Local/486@test', disposition: 'busy', cause: 17 },
    { scenario: 'no answer', phone: 'Local/408@test', disposition: 'no-answer', cause: 19 },
    { scenario: 'congestion', phone: 'Local/500@test', disposition: 'failed', cause: 34 },
    { scenario: 'rejected', phone: 'Local/603@test', disposition: 'failed', cause: 21 },
  ]
  for (const row of table) {
    test(`${row.scenario}: run completed as ${row.disposition}, no duration, Q.850 cause in the logs`, async () => {
      await createAriConfiguration()
      const agent = await createAgent()
      const response = await byUuid(agent, { phone_number: row.phone })
      const run = await untilCompleted(agent, response.body.workflow_run_id)
      expect(run.gathered_context.mapped_call_disposition).toBe(row.disposition)
      expect(run.usage_info.call_duration_seconds).toBe(0)
      expect(run.logs.telephony.hangup_cause).toBe(row.cause)
      expect(run.recording_url).toBeNull()
    })
  }

  // Voice, recordings and their download links: test/calls/voice-call.test.ts.
  test('answered: completed with the duration from answer to hangup', async () => {
    await createAriConfiguration()
    const agent = await createAgent()
    const response = await byUuid(agent, { phone_number: 'Local/102@test' })
    const runId = response.body.workflow_run_id
    const callId = callIdOf(runId)
    await waitFor('bridged', () => fake.requests.some((r) => r.path === `/ari/bridges/ringbase-${callId}/addChannel`))
    clock.advance(42_000)
    fake.hangup(callId)
    const run = await untilCompleted(agent, runId)
    expect(run.gathered_context.mapped_call_disposition).toBe('completed')
    expect(run.usage_info.call_duration_seconds).toBe(42)
    expect(run.logs.telephony).toMatchObject({
      outcome: 'completed',
      hangup_cause: 16,
      hangup_cause_text: 'Normal Clearing',
    })
  })

  test('another organization cannot read the run or route through the configuration', async () => {
    const config = await createAriConfiguration()
    const agent = await createAgent()
    const response = await byUuid(agent, { phone_number: 'Local/486@test' })
    const other = t.newOrg('other')
    const read = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${response.body.workflow_run_id}`, {
      key: other.key,
    })
    expect(read.status).toBe(404)
    const otherAgent = await createAgent(other.key)
    expect(
      await byUuid(otherAgent, { phone_number: '100', telephony_configuration_id: config.id }, other.key),
    ).toMatchObject({
      status: 404,
      body: { detail: 'Telephony configuration not found' },
    })
  })
})
