import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { discardImportingCampaigns } from '../../src/campaigns/lifecycle'
import { finishRun } from '../../src/runs/service'
import { markInactive } from '../../src/telephony/config/configurations'
import type { manualClock } from '../../src/lib/clock'
import { createTestApp, type TestApp } from '../support/app'
import {
  createAgent,
  createAriConfiguration,
  csvOf,
  manualScheduler,
  scriptedTelephony,
  uploadCsv,
} from '../support/campaigns'
import { configureModelsNeverAsked } from '../support/voice-models'
import { createRecording, lineToneWav } from '../support/recordings'

let t: TestApp
let clock: ReturnType<typeof manualClock>
beforeEach(() => {
  t = createTestApp()
  clock = t.ctx.clock as ReturnType<typeof manualClock>
})
afterEach(() => t.close())

const phones = (count: number, start = 100) =>
  Array.from({ length: count }, (_, i) => [`+1415555${String(start + i).padStart(4, '0')}`])

async function setup(options: { variables?: string[]; csv?: string } = {}) {
  const workflowId = await createAgent(t, { variables: options.variables })
  const configurationId = await createAriConfiguration(t)
  await configureModelsNeverAsked(t)
  const sourceId = await uploadCsv(t, options.csv ?? csvOf(['phone_number'], phones(3)))
  return { workflowId, configurationId, sourceId }
}

async function createCampaign(body: Record<string, unknown>) {
  return t.request('POST', '/api/v1/campaign/create', { body: { name: 'Spring promo', source_type: 'csv', ...body } })
}

async function createDraft(extra: Record<string, unknown> = {}, options: { csv?: string; variables?: string[] } = {}) {
  const { workflowId, sourceId, configurationId } = await setup(options)
  const response = await createCampaign({ workflow_id: workflowId, source_id: sourceId, ...extra })
  expect(response.status).toBe(200)
  return { campaign: response.body, workflowId, configurationId }
}

const campaignState = async (id: number) => (await t.request('GET', `/api/v1/campaign/${id}`)).body

describe('create', () => {
  test('returns every field of the campaign object, in draft, with the contacts counted', async () => {
    const { campaign, workflowId, configurationId } = await createDraft()
    expect(campaign).toMatchObject({
      name: 'Spring promo',
      workflow_id: workflowId,
      workflow_name: 'Sales agent',
      state: 'draft',
      source_type: 'csv',
      total_rows: 3,
      processed_rows: 0,
      failed_rows: 0,
      executed_count: 0,
      total_queued_count: 3,
      started_at: null,
      completed_at: null,
      rate_limit_per_second: 1,
      max_concurrency: null,
      schedule_config: null,
      traffic_split: null,
      parent_campaign_id: null,
      redialed_campaign_id: null,
      telephony_configuration_id: configurationId,
      telephony_configuration_name: 'PBX',
      logs: [],
      warnings: [],
      retry_config: {
        enabled: true,
        max_retries: 1,
        retry_delay_seconds: 120,
        retry_on_busy: true,
        retry_on_no_answer: true,
        retry_on_voicemail: false,
      },
      circuit_breaker: { enabled: false, failure_threshold: 0.5, window_seconds: 120, min_calls_in_window: 5 },
    })
    const listed = await t.request('GET', '/api/v1/campaign/')
    expect(listed.body.campaigns.map((c: { id: number }) => c.id)).toEqual([campaign.id])
  })

  test('request validation answers 422 with Pydantic-style items', async () => {
    const { workflowId, sourceId } = await setup()
    const base = { workflow_id: workflowId, source_id: sourceId }
    const cases: [Record<string, unknown>, string, (string | number)[]][] = [
      [{ ...base, name: '' }, 'string_too_short', ['body', 'name']],
      [{ ...base, source_type: 'xlsx' }, 'string_pattern_mismatch', ['body', 'source_type']],
      [{ ...base, workflow_id: 0 }, 'greater_than', ['body', 'workflow_id']],
      [{ ...base, max_concurrency: 0 }, 'greater_than_equal', ['body', 'max_concurrency']],
      [{ ...base, rate_limit_per_second: 0 }, 'greater_than_equal', ['body', 'rate_limit_per_second']],
      [{ source_id: sourceId }, 'value_error', ['body']],
      [{ ...base, traffic_split: { variants: [{ workflow_id: workflowId, weight: 100 }] } }, 'value_error', ['body']],
      [
        {
          ...base,
          schedule_config: {
            timezone: 'Mars/Olympus',
            slots: [{ day_of_week: 0, start_time: '09:00', end_time: '17:00' }],
          },
        },
        'value_error',
        ['body', 'schedule_config', 'timezone'],
      ],
      [
        { ...base, schedule_config: { slots: [{ day_of_week: 0, start_time: '18:00', end_time: '09:00' }] } },
        'value_error',
        ['body', 'schedule_config', 'slots', 0],
      ],
      [{ ...base, schedule_config: { slots: [] } }, 'too_short', ['body', 'schedule_config', 'slots']],
      [
        { ...base, circuit_breaker: { failure_threshold: 1.5 } },
        'less_than_equal',
        ['body', 'circuit_breaker', 'failure_threshold'],
      ],
      [{ ...base, retry_config: { max_retries: 11 } }, 'less_than_equal', ['body', 'retry_config', 'max_retries']],
      [
        {
          source_id: sourceId,
          traffic_split: {
            variants: [
              { workflow_id: workflowId, weight: 60 },
              { workflow_id: workflowId, weight: 30, workflow_definition_id: 99 },
            ],
          },
        },
        'value_error',
        ['body', 'traffic_split', 'variants'],
      ],
    ]
    for (const [body, type, loc] of cases) {
      const response = await createCampaign(body)
      expect(response.status, JSON.stringify(body)).toBe(422)
      expect(response.body.detail.map((item: { type: string }) => item.type)).toContain(type)
      expect(response.body.detail.map((item: { loc: unknown }) => item.loc)).toContainEqual(loc)
    }
    expect((await t.request('GET', '/api/v1/campaign/')).body.campaigns).toEqual([])
  })

  test('unknown agent, telephony configuration and source answer 404 / 400', async () => {
    const { workflowId, sourceId } = await setup()
    expect((await createCampaign({ workflow_id: 999, source_id: sourceId })).body).toEqual({
      detail: 'Workflow not found',
    })
    const noConfig = await createCampaign({
      workflow_id: workflowId,
      source_id: sourceId,
      telephony_configuration_id: 999,
    })
    expect(noConfig.status).toBe(400)
    expect(noConfig.body).toEqual({ detail: 'telephony_configuration_not_found' })
    const noSource = await createCampaign({ workflow_id: workflowId, source_id: 'campaigns/1/missing.csv' })
    expect(noSource.status).toBe(400)
  })

  test('CSV rules name the rows; a rejected CSV leaves no campaign or contact behind', async () => {
    const workflowId = await createAgent(t, { variables: ['first_name'] })
    await createAriConfiguration(t)
    const cases: [string, string][] = [
      ['', 'CSV file must have a header row and at least one data row'],
      ['phone_number,first_name\n', 'CSV file must have a header row and at least one data row'],
      ['number,first_name\n+14155550100,Ann\n', "Source must contain a 'phone_number' column"],
      [
        'phone_number\n+14155550100\n',
        "Workflow uses template variables that are missing from the source data: 'first_name'",
      ],
      [
        'phone_number,first_name\n+14155550100,Ann\n+14155550101,\n+14155550102,\n',
        "Template variable 'first_name' is empty in rows: 3, 4",
      ],
      ['phone_number,first_name\n+14155550100,Ann\n+14155550100,Bob\n', 'Duplicate phone numbers found in rows: 3.'],
      ['phone_number,first_name\n+14155550100,"Ann\n+14155550101,Bob"x\n', 'The CSV file could not be parsed'],
      [
        'phone_number,first_name\n1 415 555 0100,Ann\n12,Bo\n1&2,C\n4,D\n5,E\n6,F\n7,G\n',
        'Invalid phone numbers in rows: 2, 4 and 0 more'.replace(' and 0 more', ''),
      ],
    ]
    for (const [csv, message] of cases) {
      const sourceId = await uploadCsv(t, csv || '\n')
      const response = await createCampaign({ workflow_id: workflowId, source_id: sourceId })
      expect(response.status, csv).toBe(400)
      expect(response.body.detail).toContain(message)
    }
    expect((await t.request('GET', '/api/v1/campaign/')).body.campaigns).toEqual([])
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM campaign_contacts').get()).toEqual({ n: 0 })
  })

  test('a greeting_override_recording_id the organization does not have is a row error at upload, not at call time', async () => {
    const workflowId = await createAgent(t)
    await createAriConfiguration(t)
    expect((await createRecording(t, 'vip', lineToneWav(440, 300))).status).toBe(200)
    const other = t.newOrg('other')
    expect((await createRecording(t, 'theirs', lineToneWav(440, 300), { key: other.key })).status).toBe(200)
    const header = ['phone_number', 'greeting_override_type', 'greeting_override_recording_id']
    const refused = await createCampaign({
      workflow_id: workflowId,
      source_id: await uploadCsv(
        t,
        csvOf(header, [
          ['+14155550100', 'audio', 'vip'],
          ['+14155550101', 'audio', 'ghost'],
          ['+14155550102', 'text', 'ghost'],
          ['+14155550103', 'audio', 'theirs'],
          ['+14155550104', '', ''],
        ]),
      ),
    })
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toStartWith('Unknown greeting_override_recording_id in rows: 3, 5.')
    expect((await t.request('GET', '/api/v1/campaign/')).body.campaigns).toEqual([])
    const accepted = await createCampaign({
      workflow_id: workflowId,
      source_id: await uploadCsv(t, csvOf(header, [['+14155550100', 'audio', 'vip']])),
    })
    expect(accepted.status).toBe(200)
  })

  test('duplicates are found wherever they are, inside many-row inserts too', async () => {
    await createAriConfiguration(t)
    const workflowId = await createAgent(t)
    const numbers = phones(150).map(([phone]) => phone)
    numbers[39] = numbers[4] // row 41 repeats row 6
    numbers[119] = numbers[100] // row 121 repeats row 102
    numbers[120] = numbers[100] // and so does row 122
    const response = await createCampaign({
      workflow_id: workflowId,
      source_id: await uploadCsv(
        t,
        csvOf(
          ['phone_number'],
          numbers.map((n) => [n]),
        ),
      ),
    })
    expect(response.status).toBe(400)
    expect(response.body.detail).toStartWith('Duplicate phone numbers found in rows: 41, 121, 122.')
    const unique = phones(150).map(([phone]) => [phone])
    const accepted = await createCampaign({
      workflow_id: workflowId,
      source_id: await uploadCsv(t, csvOf(['phone_number'], unique)),
    })
    expect(accepted.body.total_rows).toBe(150)
    expect(
      t.ctx.sqlite
        .query('SELECT count(*) AS n, max(row_number) AS last FROM campaign_contacts WHERE campaign_id = ?')
        .get(accepted.body.id),
    ).toEqual({ n: 150, last: 151 })
  })

  test('ARI campaigns accept numbers and extensions, SIP URIs and raw dial strings when the configuration allows them; carrier campaigns require E.164', async () => {
    const workflowId = await createAgent(t)
    const ariId = await createAriConfiguration(t)
    const pbx = await uploadCsv(
      t,
      csvOf(['phone_number'], [['1001'], ['sip:alice@pbx.local'], ['PJSIP/2002'], ['+14155550100']]),
    )
    const refused = await createCampaign({ workflow_id: workflowId, source_id: pbx })
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toStartWith('Invalid phone numbers in rows: 3, 4.')
    expect(refused.body.detail).toContain('allow_raw_dial_strings')
    const allowed = await t.request('PUT', `/api/v1/organizations/telephony-configs/${ariId}`, {
      body: { config: { allow_raw_dial_strings: true } },
    })
    expect(allowed.body.credentials.allow_raw_dial_strings).toBe(true)
    const accepted = await createCampaign({ workflow_id: workflowId, source_id: pbx })
    expect(accepted.status).toBe(200)
    expect(accepted.body.total_rows).toBe(4)

    const twilio = await t.request('POST', '/api/v1/organizations/telephony-configs', {
      body: { name: 'Carrier', config: { provider: 'twilio', account_sid: 'AC123', auth_token: 'secret-token' } },
    })
    await t.request('POST', `/api/v1/organizations/telephony-configs/${twilio.body.id}/phone-numbers`, {
      body: { address: '+14155550199' },
    })
    const rejected = await createCampaign({
      workflow_id: workflowId,
      source_id: pbx,
      telephony_configuration_id: twilio.body.id,
    })
    expect(rejected.status).toBe(400)
    expect(rejected.body.detail).toStartWith('Invalid phone numbers in rows: 2, 3, 4.')
    const carrierCsv = await uploadCsv(t, csvOf(['phone_number'], phones(2)))
    const carrier = await createCampaign({
      workflow_id: workflowId,
      source_id: carrierCsv,
      telephony_configuration_id: twilio.body.id,
      max_concurrency: 15,
    })
    expect(carrier.body.warnings).toEqual([
      "max_concurrency (15) is above the organization's concurrent call limit (10): at most 10 calls run at once",
      "max_concurrency (15) is above the 1 caller id(s) of telephony configuration 'Carrier': calls will share caller ids",
    ])
  })

  test('CSV with BOM, quoted fields, CRLF and upper-case headers', async () => {
    const workflowId = await createAgent(t, { variables: ['first_name'] })
    await createAriConfiguration(t)
    const csv = '\ufeff Phone_Number ,First_Name\r\n+14155550100,"Smith, Ann"\r\n"+14155550101","Bob ""B"""\r\n'
    const response = await createCampaign({ workflow_id: workflowId, source_id: await uploadCsv(t, csv) })
    expect(response.status).toBe(200)
    const contexts = t.ctx.sqlite
      .query<{ context: string }, []>('SELECT context FROM campaign_contacts ORDER BY id')
      .all()
      .map((row) => JSON.parse(row.context))
    expect(contexts).toEqual([
      { phone_number: '+14155550100', first_name: 'Smith, Ann' },
      { phone_number: '+14155550101', first_name: 'Bob "B"' },
    ])
  })

  test("another organization's agent, upload and campaign ids do not exist", async () => {
    const { campaign, workflowId, sourceId } = { ...(await createDraft()), sourceId: '' }
    void sourceId
    const other = t.newOrg('acme')
    await createAriConfiguration(t, { key: other.key })
    const theirUpload = await uploadCsv(t, csvOf(['phone_number'], phones(1)), { key: other.key })
    const mine = await t.request('GET', `/api/v1/campaign/${campaign.id}`, { key: other.key })
    expect(mine.status).toBe(404)
    expect(mine.body).toEqual({ detail: 'Campaign not found' })
    expect((await t.request('POST', `/api/v1/campaign/${campaign.id}/start`, { key: other.key })).status).toBe(404)
    expect((await t.request('GET', '/api/v1/campaign/', { key: other.key })).body.campaigns).toEqual([])
    const withMyAgent = await t.request('POST', '/api/v1/campaign/create', {
      key: other.key,
      body: { name: 'x', source_type: 'csv', source_id: theirUpload, workflow_id: workflowId },
    })
    expect(withMyAgent.status).toBe(404)
    const withTheirUpload = await createCampaign({ workflow_id: workflowId, source_id: theirUpload })
    expect(withTheirUpload.status).toBe(400)
  })
})

describe('settings', () => {
  test('PATCH replaces retries, concurrency, rate, schedule and breaker; invalid values are 422 and change nothing', async () => {
    const { campaign } = await createDraft()
    const path = `/api/v1/campaign/${campaign.id}`
    const changed = await t.request('PATCH', path, {
      body: {
        retry_config: { max_retries: 3, retry_on_voicemail: false },
        max_concurrency: 4,
        rate_limit_per_second: 7,
        schedule_config: {
          timezone: 'Europe/Paris',
          slots: [{ day_of_week: 4, start_time: '09:00', end_time: '12:00' }],
        },
        circuit_breaker: { window_seconds: 60 },
      },
    })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({
      retry_config: {
        enabled: true,
        max_retries: 3,
        retry_delay_seconds: 120,
        retry_on_busy: true,
        retry_on_no_answer: true,
        retry_on_voicemail: false,
      },
      max_concurrency: 4,
      rate_limit_per_second: 7,
      schedule_config: {
        enabled: true,
        timezone: 'Europe/Paris',
        slots: [{ day_of_week: 4, start_time: '09:00', end_time: '12:00' }],
      },
      circuit_breaker: { enabled: true, failure_threshold: 0.5, window_seconds: 60, min_calls_in_window: 5 },
    })
    const invalid = await t.request('PATCH', path, {
      body: {
        rate_limit_per_second: 0,
        schedule_config: {
          timezone: 'Nowhere/City',
          slots: [{ day_of_week: 0, start_time: '10:00', end_time: '09:00' }],
        },
      },
    })
    expect(invalid.status).toBe(422)
    expect(invalid.body.detail.map((item: { loc: unknown }) => item.loc)).toEqual([['body', 'rate_limit_per_second']])
    const badSchedule = await t.request('PATCH', path, {
      body: {
        schedule_config: {
          timezone: 'Nowhere/City',
          slots: [{ day_of_week: 0, start_time: '10:00', end_time: '09:00' }],
        },
      },
    })
    expect(badSchedule.body.detail.map((item: { loc: unknown }) => item.loc)).toEqual([
      ['body', 'schedule_config', 'timezone'],
      ['body', 'schedule_config', 'slots', 0],
    ])
    expect((await campaignState(campaign.id)).rate_limit_per_second).toBe(7)
  })
})

describe('state machine', () => {
  test('start, pause, resume, stop with logs; wrong states answer 400 naming the current state', async () => {
    const { campaign } = await createDraft()
    const path = `/api/v1/campaign/${campaign.id}`
    const wrong = await t.request('POST', `${path}/pause`)
    expect(wrong.status).toBe(400)
    expect(wrong.body.detail).toContain('current state: draft')
    expect((await t.request('POST', `${path}/start`)).body).toMatchObject({
      state: 'running',
      started_at: expect.any(String),
    })
    expect((await t.request('POST', `${path}/start`)).status).toBe(400)
    expect((await t.request('POST', `${path}/pause`)).body.state).toBe('paused')
    expect((await t.request('POST', `${path}/resume`)).body.state).toBe('running')
    const stopped = await t.request('POST', `${path}/stop`)
    expect(stopped.body.state).toBe('stopped')
    expect(stopped.body.logs.map((entry: { event: string }) => entry.event)).toEqual([
      'campaign_started',
      'campaign_paused',
      'campaign_resumed',
      'campaign_stopped',
    ])
    expect((await t.request('PATCH', path, { body: { name: 'late' } })).body).toEqual({
      detail: 'Cannot update a stopped campaign',
    })
  })
})

describe('dialing', () => {
  test("the organization's concurrent call limit caps calls across its campaigns", async () => {
    t.ctx.sqlite.run('UPDATE organizations SET concurrent_call_limit = 3')
    const { campaign } = await createDraft({ rate_limit_per_second: 100 }, { csv: csvOf(['phone_number'], phones(6)) })
    const telephony = scriptedTelephony(t, () => 'hold')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(100, 5)
    expect(telephony.dials).toHaveLength(3)
  })

  test('a telephony configuration taken out of service pauses the campaign with a warning', async () => {
    const { campaign, configurationId } = await createDraft(
      { rate_limit_per_second: 100 },
      { csv: csvOf(['phone_number'], phones(3)) },
    )
    const telephony = scriptedTelephony(t, () => 'completed')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    markInactive(t.ctx, configurationId, 'ari-auth: refused')
    clock.advance(1000) // campaigns see telephony changes within a second
    await scheduler.tickAndSettle()
    const paused = await campaignState(campaign.id)
    expect(paused.state).toBe('paused')
    expect(paused.logs.at(-1)).toMatchObject({ level: 'warning', event: 'telephony_unavailable' })
    expect(paused.warnings).toContain("Telephony configuration 'PBX' is inactive: reactivate it before dialing")
    expect(telephony.dials).toHaveLength(1)
  })

  test('dials every contact once, writes runs first, and completes with exact counters', async () => {
    const { campaign, workflowId } = await createDraft(
      {},
      {
        variables: ['first_name'],
        csv: csvOf(
          ['phone_number', 'first_name'],
          [
            ['+14155550100', 'Ann'],
            ['+14155550101', 'Bob'],
          ],
        ),
      },
    )
    const telephony = scriptedTelephony(t, (request) => {
      const run = t.ctx.sqlite
        .query<{ id: number; campaign_id: number }, [string]>(
          'SELECT id, campaign_id FROM workflow_runs WHERE call_id = ?',
        )
        .get(request.callId)
      expect(run).toMatchObject({ id: request.runId, campaign_id: campaign.id })
      return 'completed'
    })
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(1000, 3)
    expect(telephony.dials.map((dial) => dial.destination)).toEqual(['+14155550100', '+14155550101'])
    const done = await campaignState(campaign.id)
    expect(done).toMatchObject({
      state: 'completed',
      processed_rows: 2,
      executed_count: 2,
      failed_rows: 0,
      total_queued_count: 2,
      completed_at: expect.any(String),
    })
    expect(done.logs.at(-1).event).toBe('campaign_completed')
    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${telephony.dials[0].runId}`)).body
    expect(run).toMatchObject({ is_completed: true, call_type: 'outbound', mode: 'ari', workflow_name: 'Sales agent' })
    expect(run.initial_context).toMatchObject({
      first_name: 'Ann',
      called_number: '+14155550100',
      campaign_id: campaign.id,
      direction: 'outbound',
    })
    expect(run.gathered_context.mapped_call_disposition).toBe('completed')
    const triggerKey = (await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'robot', scope: 'trigger' } }))
      .body.api_key
    expect(
      (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${telephony.dials[0].runId}`, { key: triggerKey }))
        .status,
    ).toBe(200)
    expect((await t.request('GET', `/api/v1/campaign/${campaign.id}`, { key: triggerKey })).status).toBe(403)
  })

  test('a run its conversation completed before the call ended still settles its contact when the call ends', async () => {
    const { campaign } = await createDraft({}, { csv: csvOf(['phone_number'], phones(1)) })
    const telephony = scriptedTelephony(t, () => 'hold')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    const [dial] = telephony.dials
    // as a run session does when the run's models cannot be used
    finishRun(t.ctx, dial.runId, { durationSeconds: 0, disposition: 'pipeline_error' })
    telephony.end(dial.callId, 'completed')
    telephony.end(dial.callId, 'completed')
    const done = await campaignState(campaign.id)
    expect(done).toMatchObject({ executed_count: 1, processed_rows: 1 })
    const contact = t.ctx.sqlite
      .query<{ state: string; last_outcome: string }, []>('SELECT state, last_outcome FROM campaign_contacts')
      .get()
    expect(contact).toEqual({ state: 'done', last_outcome: 'completed' })
  })

  test('rate_limit_per_second: never more than N dial starts at one instant, paced across the second', async () => {
    const { campaign } = await createDraft({ rate_limit_per_second: 2 }, { csv: csvOf(['phone_number'], phones(10)) })
    const telephony = scriptedTelephony(t, () => 'completed')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    clock.advance(500)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(2)
    clock.advance(500)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(3)
  })

  test('max_concurrency caps calls in progress', async () => {
    const { campaign } = await createDraft(
      { max_concurrency: 2, rate_limit_per_second: 100 },
      { csv: csvOf(['phone_number'], phones(5)) },
    )
    const telephony = scriptedTelephony(t, () => 'hold')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(100, 5)
    expect(telephony.dials).toHaveLength(2)
    telephony.end(telephony.dials[0].callId, 'completed', 5000)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(3)
  })

  test('busy and no-answer are retried after the delay; final failures count as failed rows', async () => {
    const retry_config = { max_retries: 1, retry_delay_seconds: 60, retry_on_busy: true, retry_on_no_answer: false }
    const { campaign } = await createDraft(
      { retry_config, rate_limit_per_second: 10 },
      { csv: csvOf(['phone_number'], [['+14155550100'], ['+14155550101']]) },
    )
    const telephony = scriptedTelephony(t, (request) => (request.destination.endsWith('100') ? 'busy' : 'no_answer'))
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    clock.advance(200)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(2)
    // the busy contact waits for its retry, the other is done: the progress counts contacts, its percentage too
    const waiting = (await t.request('GET', `/api/v1/campaign/${campaign.id}/progress`)).body
    expect(waiting.contacts).toEqual({ waiting: 0, dialing: 0, retries_due: 1, done: 1, cancelled: 0 })
    expect(waiting).toMatchObject({ total_rows: 2, processed_rows: 2, progress_percentage: 50 })
    clock.advance(30_000)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(2)
    clock.advance(31_000)
    await scheduler.tickAndSettle()
    expect(telephony.dials.map((dial) => dial.destination)).toEqual(['+14155550100', '+14155550101', '+14155550100'])
    clock.advance(1000)
    await scheduler.tickAndSettle()
    const done = await campaignState(campaign.id)
    expect(done).toMatchObject({
      state: 'completed',
      processed_rows: 3,
      executed_count: 3,
      total_queued_count: 3,
      failed_rows: 2,
    })
    expect((await t.request('GET', `/api/v1/campaign/${campaign.id}/progress`)).body.contacts).toEqual({
      waiting: 0,
      dialing: 0,
      retries_due: 0,
      done: 2,
      cancelled: 0,
    })
    const retryRun = t.ctx.sqlite
      .query<{ initial_context: string }, [number]>('SELECT initial_context FROM workflow_runs WHERE id = ?')
      .get(telephony.dials[2].runId)!
    expect(JSON.parse(retryRun.initial_context)).toMatchObject({
      is_retry: true,
      retry_attempt: 1,
      retry_reason: 'busy',
    })
  })

  test('a refused dial fails the run without a retry', async () => {
    const { campaign } = await createDraft(
      { retry_config: { max_retries: 3 } },
      { csv: csvOf(['phone_number'], phones(1)) },
    )
    const telephony = scriptedTelephony(t, () => 'refuse')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    clock.advance(1000)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    expect(await campaignState(campaign.id)).toMatchObject({ state: 'completed', failed_rows: 1 })
    const logs = t.ctx.sqlite
      .query<{ logs: string }, [number]>('SELECT logs FROM workflow_runs WHERE id = ?')
      .get(telephony.dials[0].runId)!
    expect(JSON.parse(logs.logs).telephony.provider_status).toContain('Allocation failed')
  })

  test('outside the schedule nothing is dialled and outside_schedule is logged once per window', async () => {
    // The manual clock starts on Monday 2026-01-05 10:00 UTC.
    const schedule_config = { timezone: 'UTC', slots: [{ day_of_week: 0, start_time: '11:00', end_time: '12:00' }] }
    const { campaign } = await createDraft({ schedule_config }, { csv: csvOf(['phone_number'], phones(1)) })
    const telephony = scriptedTelephony(t, () => 'completed')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(60_000, 3)
    expect(telephony.dials).toHaveLength(0)
    const waiting = await campaignState(campaign.id)
    expect(waiting.state).toBe('running')
    expect(waiting.logs.filter((entry: { event: string }) => entry.event === 'outside_schedule')).toHaveLength(1)
    clock.set(Date.parse('2026-01-05T11:00:00Z'))
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
  })

  test('the circuit breaker pauses the campaign with a warning carrying the figures', async () => {
    const circuit_breaker = { failure_threshold: 0.5, window_seconds: 60, min_calls_in_window: 3 }
    const { campaign } = await createDraft(
      { circuit_breaker, rate_limit_per_second: 50 },
      { csv: csvOf(['phone_number'], phones(10)) },
    )
    scriptedTelephony(t, () => 'refuse')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(50, 5)
    const paused = await campaignState(campaign.id)
    expect(paused.state).toBe('paused')
    expect(paused.processed_rows).toBe(3)
    const trip = paused.logs.find((entry: { event: string }) => entry.event === 'circuit_breaker_tripped')
    expect(trip).toMatchObject({
      level: 'warning',
      message: 'Paused: failure rate 100.00% (3/3) exceeded threshold 50.00% in 60s window',
    })
    expect(trip.details).toMatchObject({ failure_count: 3, success_count: 0, threshold: 0.5, window_seconds: 60 })
    expect(trip.details.recent_failures).toHaveLength(3)
  })

  test('stopping leaves queued contacts undialled and lets calls in progress finish', async () => {
    const { campaign } = await createDraft({ rate_limit_per_second: 1 }, { csv: csvOf(['phone_number'], phones(3)) })
    const telephony = scriptedTelephony(t, () => 'hold')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    await t.request('POST', `/api/v1/campaign/${campaign.id}/stop`)
    clock.advance(5000)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    telephony.end(telephony.dials[0].callId, 'busy')
    expect(await campaignState(campaign.id)).toMatchObject({
      state: 'stopped',
      executed_count: 1,
      failed_rows: 1,
      total_queued_count: 3,
    })
  })
})

describe('traffic split', () => {
  /** Saves the agent's definition again, which makes a new draft version. */
  async function saveDraft(workflowId: number) {
    const current = (await t.request('GET', `/api/v1/workflow/fetch/${workflowId}`)).body
    const saved = await t.request('PUT', `/api/v1/workflow/${workflowId}`, {
      body: { workflow_definition: current.workflow_definition },
    })
    expect(saved.status).toBe(200)
    expect(saved.body.version_status).toBe('draft')
  }

  async function splitCampaign(contacts: number) {
    const first = await createAgent(t, { name: 'Agent A' })
    const second = await createAgent(t, { name: 'Agent B' })
    await createAriConfiguration(t)
    await configureModelsNeverAsked(t)
    const sourceId = await uploadCsv(t, csvOf(['phone_number'], phones(contacts, 1000)))
    const response = await createCampaign({
      source_id: sourceId,
      rate_limit_per_second: 1000,
      traffic_split: {
        variants: [
          { workflow_id: first, weight: 70 },
          { workflow_id: second, weight: 30 },
        ],
      },
    })
    expect(response.status).toBe(200)
    return { campaign: response.body, first, second }
  }

  test('variants get stable ids, names and versions; drafts cannot be pinned', async () => {
    const { campaign, first } = await splitCampaign(5)
    expect(campaign.traffic_split).toEqual({
      revision: 1,
      variants: [
        {
          id: expect.any(String),
          workflow_id: first,
          weight: 70,
          workflow_name: 'Agent A',
          workflow_definition_id: null,
          version_number: 1,
        },
        {
          id: expect.any(String),
          workflow_id: first + 1,
          weight: 30,
          workflow_name: 'Agent B',
          workflow_definition_id: null,
          version_number: 1,
        },
      ],
    })
    await saveDraft(first)
    const draftId = (await t.request('GET', `/api/v1/workflow/fetch/${first}`)).body.current_definition_id
    const pinned = await t.request('PATCH', `/api/v1/campaign/${campaign.id}`, {
      body: { traffic_split: { variants: [{ workflow_id: first, weight: 100, workflow_definition_id: draftId }] } },
    })
    expect(pinned.status).toBe(422)
    expect(pinned.body.detail[0].loc).toEqual(['body', 'traffic_split', 'variants', 0, 'workflow_definition_id'])
  })

  test('dials follow the split; a PATCH while running applies to the next dial and removed variants stay in stats', async () => {
    const { campaign, first, second } = await splitCampaign(40)
    const telephony = scriptedTelephony(t, () => 'completed')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(1, 20)
    expect(telephony.dials).toHaveLength(20)
    const patched = await t.request('PATCH', `/api/v1/campaign/${campaign.id}`, {
      body: { traffic_split: { variants: [{ workflow_id: second, weight: 100 }] } },
    })
    expect(patched.body.traffic_split.revision).toBe(2)
    expect(patched.body.logs.at(-1).event).toBe('traffic_split_changed')
    await scheduler.tickEvery(1, 40)
    const workflowOfRun = (runId: number) =>
      t.ctx.sqlite
        .query<{ workflow_id: number }, [number]>('SELECT workflow_id FROM workflow_runs WHERE id = ?')
        .get(runId)!.workflow_id
    expect(telephony.dials.slice(20).every((dial) => workflowOfRun(dial.runId) === second)).toBe(true)
    const stats = (await t.request('GET', `/api/v1/campaign/${campaign.id}/traffic-stats`)).body
    expect(stats.revision).toBe(2)
    const removed = stats.variants.find((variant: { workflow_id: number }) => variant.workflow_id === first)
    expect(removed).toMatchObject({ removed: true, weight: 0 })
    expect(removed.calls_placed).toBeGreaterThan(0)
    const totalPlaced = stats.variants.reduce(
      (sum: number, variant: { calls_placed: number }) => sum + variant.calls_placed,
      0,
    )
    expect(totalPlaced).toBe(40)
    expect(
      stats.variants.find((variant: { workflow_id: number }) => variant.workflow_id === second).outcomes,
    ).toMatchObject({ completed: expect.any(Number) })
  })

  test('the latest published version is resolved at dial time', async () => {
    const { campaign, first } = await splitCampaign(30)
    scriptedTelephony(t, () => 'completed')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    await saveDraft(first)
    expect((await t.request('POST', `/api/v1/workflow/${first}/publish`)).status).toBe(200)
    clock.advance(1000) // running campaigns see a newly published version within a second
    await scheduler.tickEvery(1, 40)
    const versions = t.ctx.sqlite
      .query<{ version_number: number }, [number, number]>(
        `SELECT DISTINCT d.version_number FROM workflow_runs r JOIN workflow_definitions d ON d.id = r.definition_id
        WHERE r.campaign_id = ? AND r.workflow_id = ? ORDER BY 1`,
      )
      .all(campaign.id, first)
      .map((row) => row.version_number)
    expect(versions.at(-1)).toBe(2)
  })
})

describe('redial', () => {
  test('calls again the contacts whose last outcome matches, inheriting the split seed; only once', async () => {
    const { campaign } = await createDraft({ rate_limit_per_second: 100 }, { csv: csvOf(['phone_number'], phones(3)) })
    scriptedTelephony(t, (request) =>
      request.destination.endsWith('100') ? 'busy' : request.destination.endsWith('101') ? 'no_answer' : 'completed',
    )
    const scheduler = manualScheduler(t)
    const early = await t.request('POST', `/api/v1/campaign/${campaign.id}/redial`, { body: {} })
    expect(early.status).toBe(400)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickEvery(200_000, 6)
    expect((await campaignState(campaign.id)).state).toBe('completed')
    const child = await t.request('POST', `/api/v1/campaign/${campaign.id}/redial`, {
      body: { retry_on_no_answer: false },
    })
    expect(child.status).toBe(200)
    expect(child.body).toMatchObject({
      state: 'draft',
      total_rows: 1,
      parent_campaign_id: campaign.id,
      name: 'Spring promo (Redial)',
    })
    expect((await campaignState(campaign.id)).redialed_campaign_id).toBe(child.body.id)
    const seeds = t.ctx.sqlite
      .query<{ allocation_seed: string }, []>('SELECT allocation_seed FROM campaigns ORDER BY id')
      .all()
    expect(seeds[0].allocation_seed).toBe(seeds[1].allocation_seed)
    const again = await t.request('POST', `/api/v1/campaign/${campaign.id}/redial`, { body: {} })
    expect(again.body).toEqual({ detail: 'This campaign has already been redialed' })
    const none = await t.request('POST', `/api/v1/campaign/${campaign.id}/redial`, {
      body: { retry_on_busy: false, retry_on_no_answer: false, retry_on_voicemail: false },
    })
    expect(none.status).toBe(422)
  })
})

describe('progress, runs and source download', () => {
  test('progress reports closed contacts; runs are listed; the source link downloads the CSV', async () => {
    const csv = csvOf(['phone_number'], phones(2))
    const { campaign } = await createDraft({ rate_limit_per_second: 100 }, { csv })
    scriptedTelephony(t, () => 'busy')
    const scheduler = manualScheduler(t)
    await t.request('POST', `/api/v1/campaign/${campaign.id}/start`)
    await scheduler.tickAndSettle()
    clock.advance(20)
    await scheduler.tickAndSettle()
    const progress = (await t.request('GET', `/api/v1/campaign/${campaign.id}/progress`)).body
    expect(progress).toMatchObject({
      campaign_id: campaign.id,
      state: 'running',
      total_rows: 2,
      processed_rows: 2,
      failed_calls: 2,
      rate_limit: 100,
    })
    expect(progress.progress_percentage).toBe(0)
    const runs = (await t.request('GET', `/api/v1/campaign/${campaign.id}/runs?limit=1`)).body
    expect(runs).toMatchObject({ total_count: 2, page: 1, limit: 1, total_pages: 2 })
    expect(runs.runs[0].initial_context.campaign_id).toBe(campaign.id)
    const badFilter = await t.request(
      'GET',
      `/api/v1/campaign/${campaign.id}/runs?filters=${encodeURIComponent('[{"attribute":"callerNumber","type":"text","value":{"value":"1"}}]')}`,
    )
    expect(badFilter.status).toBe(403)
    expect(
      (await t.request('GET', `/api/v1/campaign/${campaign.id}/runs`, { key: t.newOrg('other').key })).status,
    ).toBe(404)
    const link = (await t.request('GET', `/api/v1/campaign/${campaign.id}/source-download-url`)).body
    expect(link.expires_in).toBe(3600)
    const download = await t.app.handle(new Request(link.download_url.replace(/^https?:\/\/[^/]+/, 'http://localhost')))
    expect(download.status).toBe(200)
    expect(await download.text()).toBe(csv)
  })
})

describe('interrupted imports', () => {
  test('campaigns left importing by a crash are removed with their contacts at start-up, others are kept', async () => {
    const { campaign } = await createDraft({}, { csv: csvOf(['phone_number'], phones(2)) })
    t.ctx.sqlite.run(`INSERT INTO campaigns (organization_id, name, state, source_type, source_id, retry_config, allocation_seed, circuit_breaker, created_at, updated_at)
      VALUES (1, 'half', 'importing', 'csv', 'k', '{}', 's', '{}', 'now', 'now')`)
    const half = (t.ctx.sqlite.query('SELECT max(id) AS id FROM campaigns').get() as { id: number }).id
    t.ctx.sqlite.run(
      `INSERT INTO campaign_contacts (campaign_id, organization_id, row_number, phone_number, context, state, next_attempt_at) VALUES (${half}, 1, 2, '+14155550999', '{}', 'queued', 0)`,
    )
    expect(discardImportingCampaigns(t.ctx)).toBe(1)
    const counts = t.ctx.sqlite
      .query<{ campaign_id: number; n: number }, []>(
        'SELECT campaign_id, count(*) AS n FROM campaign_contacts GROUP BY campaign_id',
      )
      .all()
    expect(counts).toEqual([{ campaign_id: campaign.id, n: 2 }])
    expect((await t.request('GET', '/api/v1/campaign/')).body.campaigns.map((c: { id: number }) => c.id)).toEqual([
      campaign.id,
    ])
  })

  test('an import still running on another live instance is kept; one whose instance stopped heartbeating is removed', () => {
    const now = new Date(t.ctx.clock.now()).toISOString()
    const longAgo = new Date(t.ctx.clock.now() - 3_600_000).toISOString()
    const instance = t.ctx.sqlite.query(
      "INSERT INTO instances (id, started_at, heartbeat_at, version, hostname) VALUES (?, ?, ?, '0', 'h')",
    )
    instance.run('live-peer', longAgo, now)
    instance.run('dead-peer', longAgo, longAgo)
    const importing = t.ctx.sqlite.query(
      `INSERT INTO campaigns (organization_id, name, state, source_type, source_id, retry_config, allocation_seed, circuit_breaker, import_instance_id, created_at, updated_at)
       VALUES (1, ?, 'importing', 'csv', 'k', '{}', 's', '{}', ?, 'now', 'now')`,
    )
    importing.run('live', 'live-peer')
    importing.run('dead', 'dead-peer')
    expect(discardImportingCampaigns(t.ctx)).toBe(1)
    const left = t.ctx.sqlite.query<{ name: string }, []>("SELECT name FROM campaigns WHERE state = 'importing'").all()
    expect(left).toEqual([{ name: 'live' }])
  })
})
