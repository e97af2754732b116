import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { manualClock } from '../../src/lib/clock'
import { UsageResponse } from '../../src/api/usage/model'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, seedRun } from '../support/agents'
import { expectedIds, listedIds, type SeededRun } from '../support/usage-oracle'

/**
 * One data set for the file (every test only reads): two agents of organization 1 and one of `acme`, 40 runs each
 * varying every filtered attribute; `acme`'s runs copy organization 1's attributes so a leak would show.
 */
let t: TestApp
let acme: { organizationId: number; key: string }
const seeded: SeededRun[] = []
const clock = manualClock(Date.parse('2026-03-01T00:00:00Z'))

const MODES = ['ari', 'twilio', 'webrtc', 'textchat', 'smallwebrtc', 'plivo']
const DISPOSITIONS = ['XFER', 'DNC', 'user_hangup', 'busy']

beforeAll(
  async () => {
    t = createTestApp({ clock })
    acme = t.newOrg('acme')
    const agents = [
      { organizationId: 1, agent: await createAgent(t, 'Alpha') },
      { organizationId: 1, agent: await createAgent(t, 'Beta') },
      { organizationId: acme.organizationId, agent: await createAgent(t, 'Acme', acme.key) },
    ]
    for (let index = 0; index < 40; index++) {
      for (const { organizationId, agent } of agents) {
        const callType = index % 3 === 0 ? 'inbound' : 'outbound'
        const callerNumber = `+1415555${String(1000 + index * 7).slice(-4)}`
        // Every fifth run has only phone_number: called_number falls back to it.
        const calledNumber = `+4420${String(7000000 + index * 13)}`
        const initialContext =
          index % 5 === 0
            ? { caller_number: callerNumber, phone_number: calledNumber }
            : { caller_number: callerNumber, called_number: calledNumber }
        const finished = index % 8 !== 7
        const disposition = index % 10 === 9 ? null : DISPOSITIONS[index % 4]
        const duration = (index * 17) % 300
        const mode = MODES[index % 6]
        const campaignId = index % 4 === 0 ? 5 : index % 4 === 1 ? 6 : null
        const run = seedRun(t, {
          organizationId,
          agent,
          name: `WR-${index}`,
          mode,
          callType,
          initialContext,
          campaignId: campaignId ?? undefined,
          outcome: finished
            ? {
                durationSeconds: duration + 0.4,
                disposition,
                cost: { service_token_usage: index, charge_usd: index / 100 },
              }
            : undefined,
          artifacts: index === 4 ? { recording: `recordings/${organizationId}/${index}.wav` } : undefined,
        })
        seeded.push({
          id: run.id,
          organizationId,
          workflowId: agent.id,
          campaignId,
          mode,
          callType,
          callerNumber,
          calledNumber,
          disposition: finished ? disposition : null,
          duration: finished ? duration + 0.4 : null,
          createdAt: run.createdAt,
        })
      }
      clock.advance(6 * 60 * 60 * 1000)
    }
  },
  { timeout: 60_000 },
)
afterAll(() => t.close())

type Filter = { attribute: string; type: string; value: any }
const usage = (query: Record<string, string>, key?: string) =>
  t.request('GET', `/api/v1/organizations/usage/runs?${new URLSearchParams(query)}`, { key })
const idOfSeeded = (organizationId: number, index: number) =>
  seeded.filter((run) => run.organizationId === organizationId)[index].id
const seededById = (id: number) => seeded.find((run) => run.id === id)!

describe('filters alone and combined, against the seeded data', () => {
  const scenarios: [string, () => Filter[]][] = [
    ['no filter', () => []],
    ['runId', () => [{ attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } }]],
    ['runId of an unfinished run', () => [{ attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 14) } }]],
    ['workflowId', () => [{ attribute: 'workflowId', type: 'number', value: { value: seeded[1].workflowId } }]],
    ['campaignId', () => [{ attribute: 'campaignId', type: 'number', value: { value: 5 } }]],
    ['callerNumber, 4 digits', () => [{ attribute: 'callerNumber', type: 'text', value: { value: '1056' } }]],
    [
      'callerNumber, padded, long',
      () => [{ attribute: 'callerNumber', type: 'text', value: { value: '  +14155551 ' } }],
    ],
    ['callerNumber, 2 characters', () => [{ attribute: 'callerNumber', type: 'text', value: { value: '17' } }]],
    ['callerNumber with LIKE wildcards', () => [{ attribute: 'callerNumber', type: 'text', value: { value: '%5_' } }]],
    [
      'calledNumber, incl. the phone_number fallback',
      () => [{ attribute: 'calledNumber', type: 'text', value: { value: '70000' } }],
    ],
    [
      'dispositionCode, two codes',
      () => [{ attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['XFER', 'busy'] } }],
    ],
    ['dispositionCode, no codes', () => [{ attribute: 'dispositionCode', type: 'multiSelect', value: { codes: [] } }]],
    ['duration, both bounds', () => [{ attribute: 'duration', type: 'numberRange', value: { min: 50.4, max: 200.4 } }]],
    ['duration, min only', () => [{ attribute: 'duration', type: 'numberRange', value: { min: 250 } }]],
    ['callDirection inbound', () => [{ attribute: 'callDirection', type: 'radio', value: { status: 'inbound' } }]],
    ['callDirection outbound', () => [{ attribute: 'callDirection', type: 'radio', value: { status: 'outbound' } }]],
    ['callDirection other', () => [{ attribute: 'callDirection', type: 'radio', value: { status: 'sideways' } }]],
    ['callChannel telephony', () => [{ attribute: 'callChannel', type: 'radio', value: { status: 'telephony' } }]],
    ['callChannel web', () => [{ attribute: 'callChannel', type: 'radio', value: { status: 'web' } }]],
    ['callChannel chat', () => [{ attribute: 'callChannel', type: 'radio', value: { status: 'chat' } }]],
    ['callChannel other', () => [{ attribute: 'callChannel', type: 'radio', value: { status: 'fax' } }]],
    [
      'workflowId + callDirection',
      () => [
        { attribute: 'workflowId', type: 'number', value: { value: seeded[0].workflowId } },
        { attribute: 'callDirection', type: 'radio', value: { status: 'outbound' } },
      ],
    ],
    [
      'dispositionCode + duration + callChannel',
      () => [
        { attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['XFER', 'DNC'] } },
        { attribute: 'duration', type: 'numberRange', value: { max: 200 } },
        { attribute: 'callChannel', type: 'radio', value: { status: 'telephony' } },
      ],
    ],
    [
      'callerNumber + calledNumber + campaignId',
      () => [
        { attribute: 'callerNumber', type: 'text', value: { value: '555' } },
        { attribute: 'calledNumber', type: 'text', value: { value: '442070' } },
        { attribute: 'campaignId', type: 'number', value: { value: 6 } },
      ],
    ],
    [
      'runId + callerNumber of that run',
      () => [
        { attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } },
        {
          attribute: 'callerNumber',
          type: 'text',
          value: { value: seededById(idOfSeeded(1, 4)).callerNumber!.slice(-5) },
        },
      ],
    ],
    [
      'runId + callerNumber of another run',
      () => [
        { attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } },
        {
          attribute: 'callerNumber',
          type: 'text',
          value: { value: seededById(idOfSeeded(1, 6)).callerNumber!.slice(-5) },
        },
      ],
    ],
    [
      'runId + dispositionCode + callDirection of that run',
      () => [
        { attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } },
        {
          attribute: 'dispositionCode',
          type: 'multiSelect',
          value: { codes: [seededById(idOfSeeded(1, 4)).disposition] },
        },
        { attribute: 'callDirection', type: 'radio', value: { status: seededById(idOfSeeded(1, 4)).callType } },
      ],
    ],
    [
      'unknown attribute and mismatched types (ignored)',
      () => [
        { attribute: 'status', type: 'radio', value: { status: 'completed' } },
        { attribute: 'duration', type: 'radio', value: { status: 'x' } },
        { attribute: 'runId', type: 'text', value: { value: '1' } },
      ],
    ],
  ]

  test.each(scenarios)('%s', async (_label, filtersOf) => {
    const filters = filtersOf()
    const expected = expectedIds(seeded, 1, filters)
    const listed = await listedIds(t, { filters: JSON.stringify(filters) }, undefined, 7)
    expect(listed).toEqual({ ids: expected, total: expected.length })
    const acmeIds = new Set(seeded.filter((run) => run.organizationId === acme.organizationId).map((run) => run.id))
    expect(listed.ids.filter((id) => acmeIds.has(id))).toEqual([])
  })

  test('a scenario matches something: the data set exercises every filter', () => {
    for (const [label, filtersOf] of scenarios.filter(
      ([label]) => !['unfinished', 'wildcards', 'another run'].some((word) => label.includes(word)),
    )) {
      expect({ label, count: expectedIds(seeded, 1, filtersOf()).length > 0 }).toEqual({ label, count: true })
    }
  })

  test("the other organization sees only its own runs, and not organization 1's run by id", async () => {
    const listed = await listedIds(t, {}, acme.key)
    expect(listed.ids).toEqual(expectedIds(seeded, acme.organizationId, []))
    const foreign = await listedIds(
      t,
      { filters: JSON.stringify([{ attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } }]) },
      acme.key,
    )
    expect(foreign).toEqual({ ids: [], total: 0 })
  })
})

describe('dates, sorting and paging', () => {
  test.each([
    [
      'date-times with Z',
      { start_date: '2026-03-03T00:00:00Z', end_date: '2026-03-05T06:00:00Z' },
      '2026-03-03T00:00:00.000Z',
      '2026-03-05T06:00:00.000Z',
    ],
    [
      'no zone means UTC',
      { start_date: '2026-03-03T00:00:00', end_date: '2026-03-05T06:00' },
      '2026-03-03T00:00:00.000Z',
      '2026-03-05T06:00:00.000Z',
    ],
    ['an offset', { start_date: '2026-03-03T02:00:00+02:00' }, '2026-03-03T00:00:00.000Z', undefined],
    [
      'dates alone: the end date includes its whole day',
      { start_date: '2026-03-03', end_date: '2026-03-05' },
      '2026-03-03T00:00:00.000Z',
      '2026-03-05T23:59:59.999Z',
    ],
    [
      'an end before the start',
      { start_date: '2026-03-05', end_date: '2026-03-03' },
      '2026-03-05T00:00:00.000Z',
      '2026-03-03T23:59:59.999Z',
    ],
  ])('start_date/end_date inclusive: %s', async (_label, query, from, to) => {
    const expected = expectedIds(seeded, 1, [], { from, to })
    expect(await listedIds(t, query)).toEqual({ ids: expected, total: expected.length })
  })

  test('the bounds are inclusive to the millisecond', async () => {
    const run = seeded.find((candidate) => candidate.organizationId === 1 && candidate.duration !== null)!
    const exact = await listedIds(t, { start_date: run.createdAt, end_date: run.createdAt })
    expect(exact.ids).toContain(run.id)
  })

  test.each([
    ['duration desc', { sort_by: 'duration' }, { sortBy: 'duration' as const }],
    [
      'duration asc',
      { sort_by: 'duration', sort_order: 'asc' },
      { sortBy: 'duration' as const, order: 'asc' as const },
    ],
    ['created_at asc', { sort_order: 'asc' }, { order: 'asc' as const }],
    ['an unknown sort field sorts by created_at', { sort_by: 'name' }, {}],
  ])('sort: %s', async (_label, query, options) => {
    const filters: Filter[] = [{ attribute: 'callChannel', type: 'radio', value: { status: 'telephony' } }]
    const expected = expectedIds(seeded, 1, filters, options)
    expect(await listedIds(t, { ...query, filters: JSON.stringify(filters) }, undefined, 4)).toEqual({
      ids: expected,
      total: expected.length,
    })
  })

  test('a page: totals of the page, counts of the whole set, an empty page past the end', async () => {
    const all = expectedIds(seeded, 1, [])
    const response = await usage({ page: '2', limit: '10' })
    expect(response.status).toBe(200)
    const pageIds = all.slice(10, 20)
    expect(response.body.runs.map((run: any) => run.id)).toEqual(pageIds)
    const pageRuns = pageIds.map((id) => seeded.find((run) => run.id === id)!)
    expect(response.body).toMatchObject({
      total_count: all.length,
      page: 2,
      limit: 10,
      total_pages: Math.ceil(all.length / 10),
      total_duration_seconds: pageRuns.reduce((sum, run) => sum + Math.round(run.duration!), 0),
      total_service_tokens: response.body.runs.reduce((sum: number, run: any) => sum + run.service_token_usage, 0),
    })
    expect(response.body.total_service_tokens).toBeGreaterThan(0)
    const past = await usage({ page: '99', limit: '10' })
    expect(past.body).toMatchObject({
      runs: [],
      total_count: all.length,
      page: 99,
      total_duration_seconds: 0,
      total_service_tokens: 0,
    })
  })

  test('a run by id: counted on every page, listed on the first', async () => {
    const filters = JSON.stringify([{ attribute: 'runId', type: 'number', value: { value: idOfSeeded(1, 4) } }])
    const first = await usage({ filters, limit: '1' })
    expect(first.body).toMatchObject({ total_count: 1, page: 1, total_pages: 1 })
    expect(first.body.runs.map((run: any) => run.id)).toEqual([idOfSeeded(1, 4)])
    const second = await usage({ filters, page: '2', limit: '1' })
    expect(second.body).toMatchObject({
      runs: [],
      total_count: 1,
      page: 2,
      total_pages: 1,
      total_duration_seconds: 0,
      total_service_tokens: 0,
    })
  })

  test('defaults: page 1, limit 50', async () => {
    const response = await usage({})
    expect(response.body).toMatchObject({ page: 1, limit: 50 })
    expect(response.body.runs).toHaveLength(Math.min(50, expectedIds(seeded, 1, []).length))
  })
})

describe('items', () => {
  test('an item has every field, derived as the spec says', async () => {
    const seededRun = seeded.find(
      (run) =>
        run.organizationId === 1 &&
        run.callType === 'inbound' &&
        run.duration !== null &&
        run.workflowId === seeded[0].workflowId,
    )!
    const outbound = seeded.find(
      (run) =>
        run.organizationId === 1 &&
        run.callType === 'outbound' &&
        run.duration !== null &&
        run.calledNumber?.endsWith('7000000'),
    )
    const filters = [{ attribute: 'runId', type: 'number', value: { value: seededRun.id } }]
    const { body } = await usage({ filters: JSON.stringify(filters) })
    // SQLite writes the report's JSON: the schema the OpenAPI document advertises must hold.
    expect([...Value.Errors(UsageResponse, body)]).toEqual([])
    const [item] = body.runs
    const index = Number(item.name.slice(3))
    expect(item).toEqual({
      id: seededRun.id,
      workflow_id: seededRun.workflowId,
      workflow_name: 'Alpha',
      name: `WR-${index}`,
      created_at: seededRun.createdAt,
      service_token_usage: index,
      embedding_tokens: 0,
      call_duration_seconds: Math.round(seededRun.duration!),
      recording_url: null,
      transcript_url: null,
      user_recording_url: null,
      bot_recording_url: null,
      recording_public_url: null,
      transcript_public_url: null,
      user_recording_public_url: null,
      bot_recording_public_url: null,
      public_access_token: null,
      phone_number: seededRun.callerNumber,
      caller_number: seededRun.callerNumber,
      called_number: seededRun.calledNumber,
      call_type: 'inbound',
      mode: seededRun.mode,
      disposition: seededRun.disposition,
      initial_context: expect.objectContaining({ caller_number: seededRun.callerNumber }),
      gathered_context: seededRun.disposition
        ? { call_disposition: seededRun.disposition, mapped_call_disposition: seededRun.disposition }
        : {},
      charge_usd: index / 100,
    })
    expect(outbound).toBeUndefined()
  })

  test('an outbound item: phone_number is the number dialled; a recording gives public links while its token is valid', async () => {
    const withRecording = seeded.filter((run) => run.organizationId === 1)[4 * 2]
    const byId = {
      filters: JSON.stringify([{ attribute: 'runId', type: 'number', value: { value: withRecording.id } }]),
    }
    // Seeding took ten days of clock: the token minted with the recording has expired, and the report does not mint.
    expect((await usage(byId)).body.runs[0]).toMatchObject({
      recording_url: 'recordings/1/4.wav',
      public_access_token: null,
      recording_public_url: null,
    })
    await t.request('GET', `/api/v1/workflow/${withRecording.workflowId}/runs/${withRecording.id}`)
    const [item] = (await usage(byId)).body.runs
    expect(item.call_type).toBe('outbound')
    expect(item.phone_number).toBe(withRecording.calledNumber)
    expect(item.recording_url).toBe('recordings/1/4.wav')
    expect(item.public_access_token).toMatch(/^[0-9a-f-]{36}$/)
    expect(item.recording_public_url).toEndWith(
      `/api/v1/public/download/workflow/${item.public_access_token}/recording`,
    )
  })

  test('odd stored values: numbers as text, a charge that is not a number as null, a context as stored', async () => {
    const other = t.newOrg('odd-values')
    const agent = await createAgent(t, 'Odd', other.key)
    const initialContext = {
      caller_number: 14155550100,
      phone_number: 4420700,
      nested: { list: [1, 'two', null], unicode: 'é "q"' },
    }
    const run = seedRun(t, {
      organizationId: other.organizationId,
      agent,
      callType: 'outbound',
      initialContext,
      outcome: { durationSeconds: 2.5, cost: { service_token_usage: 7, charge_usd: 'n/a' } },
    })
    const { status, body } = await usage({}, other.key)
    expect(status).toBe(200)
    expect([...Value.Errors(UsageResponse, body)]).toEqual([])
    expect(body).toMatchObject({ total_count: 1, total_service_tokens: 7, total_duration_seconds: 3, total_pages: 1 })
    expect(body.runs[0]).toMatchObject({
      id: run.id,
      caller_number: '14155550100',
      called_number: '4420700',
      phone_number: '4420700',
      charge_usd: null,
      call_duration_seconds: 3,
      initial_context: initialContext,
      gathered_context: {},
    })
  })
})

describe('the summary: runs counted and summed by outcome, agent or day', () => {
  const summary = (query: Record<string, string | number>, key?: string) =>
    t.request(
      'GET',
      `/api/v1/organizations/usage/summary?${new URLSearchParams(Object.entries(query).map(([name, value]): [string, string] => [name, String(value)]))}`,
      { key },
    )

  /** The finished runs of organization 1 within the bounds, grouped by `keyOf`: [key, runs, rounded seconds], largest first. */
  function expectedGroups(keyOf: (run: SeededRun) => string | null, from: string, to: string) {
    const groups = new Map<string | null, { runs: number; seconds: number }>()
    for (const run of seeded) {
      if (run.organizationId !== 1 || run.duration === null || run.createdAt < from || run.createdAt > to) continue
      const group = groups.get(keyOf(run)) ?? { runs: 0, seconds: 0 }
      groups.set(keyOf(run), { runs: group.runs + 1, seconds: group.seconds + run.duration })
    }
    return [...groups]
      .map(([key, group]) => [key, group.runs, Math.round(group.seconds)])
      .sort((a, b) => (b[1] as number) - (a[1] as number) || String(a[0]).localeCompare(String(b[0])))
  }
  const shape = (body: any) => body.groups.map((group: any) => [group.key, group.runs, group.duration_seconds])

  test('by outcome within the dates: every finished run counted once, whatever the page size of the list', async () => {
    const response = await summary({ group_by: 'outcome', start_date: '2026-03-02T00:00:00Z', end_date: '2026-03-06' })
    expect(response.status, response.text).toBe(200)
    const expected = expectedGroups((run) => run.disposition, '2026-03-02T00:00:00.000Z', '2026-03-06T23:59:59.999Z')
    expect(new Set(shape(response.body))).toEqual(new Set(expected))
    expect(response.body.total_runs).toBe(expected.reduce((sum, group) => sum + (group[1] as number), 0))
    expect(response.body.groups.find((group: any) => group.key === null)).toMatchObject({ label: null })
    expect(response.body.groups.every((group: any) => typeof group.charge_usd === 'number')).toBe(true)
  })

  test('by agent, named; by day in the asked offset from UTC', async () => {
    const agents = await summary({ group_by: 'agent' })
    expect(agents.body.groups.map((group: any) => group.label).sort()).toEqual(['Alpha', 'Beta'])
    expect(agents.body.total_runs).toBe(
      seeded.filter((run) => run.organizationId === 1 && run.duration !== null).length,
    )
    // UTC-7: a run at 00:00Z belongs to the day before
    const days = await summary({ group_by: 'day', utc_offset_minutes: -420, end_date: '2026-03-03T23:59:59Z' })
    const localDay = (run: SeededRun) => new Date(Date.parse(run.createdAt) - 420 * 60_000).toISOString().slice(0, 10)
    expect(new Set(shape(days.body))).toEqual(new Set(expectedGroups(localDay, '', '2026-03-03T23:59:59.000Z')))
    expect(days.body.groups.map((group: any) => group.key)).toContain('2026-02-28')
  })

  test("another organization's summary holds only its runs; a bad grouping or date is a 422 naming it", async () => {
    const acmeAgents = await summary({ group_by: 'agent' }, acme.key)
    expect(acmeAgents.body.groups.map((group: any) => group.label)).toEqual(['Acme'])
    const badGroup = await summary({ group_by: 'week' })
    expect(badGroup.status).toBe(422)
    expect(badGroup.body.detail[0].loc).toEqual(['query', 'group_by'])
    const badDate = await summary({ group_by: 'day', start_date: 'yesterday' })
    expect(badDate.status).toBe(422)
    expect(badDate.body.detail[0].loc).toEqual(['query', 'start_date'])
  })
})

describe('validation', () => {
  test.each([
    [
      'start_date',
      'last-month',
      'datetime_from_date_parsing',
      'Input should be a valid datetime or date, invalid character in year',
      'invalid character in year',
    ],
    [
      'start_date',
      '2026-13-01',
      'datetime_from_date_parsing',
      'Input should be a valid datetime or date, month value is outside expected range of 1-12',
      'month value is outside expected range of 1-12',
    ],
    [
      'end_date',
      '2026-02-30',
      'datetime_from_date_parsing',
      'Input should be a valid datetime or date, day value is outside expected range',
      'day value is outside expected range',
    ],
    [
      'end_date',
      '2026',
      'datetime_from_date_parsing',
      'Input should be a valid datetime or date, input is too short',
      'input is too short',
    ],
    [
      'end_date',
      '2026-03-01T25:00',
      'datetime_parsing',
      'Input should be a valid datetime, hour value is outside expected range of 0-23',
      'hour value is outside expected range of 0-23',
    ],
    [
      'start_date',
      '2026-03-01T10:00:00Zjunk',
      'datetime_parsing',
      'Input should be a valid datetime, unexpected extra characters at the end of the input',
      'unexpected extra characters at the end of the input',
    ],
  ])('%s=%j is a 422 item', async (name, value, type, msg, error) => {
    const response = await usage({ [name]: value })
    expect(response.status).toBe(422)
    expect(response.body).toEqual({ detail: [{ type, loc: ['query', name], msg, input: value, ctx: { error } }] })
  })

  test('both dates bad: one item each', async () => {
    const response = await usage({ start_date: 'x', end_date: 'y' })
    expect(response.body.detail.map((item: any) => item.loc)).toEqual([
      ['query', 'start_date'],
      ['query', 'end_date'],
    ])
  })

  test.each([
    [{ page: '0' }, { type: 'greater_than_equal', loc: ['query', 'page'], input: '0', ctx: { ge: 1 } }],
    [{ limit: '0' }, { type: 'greater_than_equal', loc: ['query', 'limit'], input: '0', ctx: { ge: 1 } }],
    [{ limit: '101' }, { type: 'less_than_equal', loc: ['query', 'limit'], input: '101', ctx: { le: 100 } }],
    [{ page: 'two' }, { type: 'int_parsing', loc: ['query', 'page'], input: 'two' }],
    [
      { sort_order: 'up' },
      { type: 'string_pattern_mismatch', loc: ['query', 'sort_order'], input: 'up', ctx: { pattern: '^(asc|desc)$' } },
    ],
  ])('%j is a 422 item', async (query, item) => {
    const response = await usage(query)
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual([expect.objectContaining(item)])
  })

  test.each(['[{"attribute":', '{"attribute":"runId"}', '"runId"'])('filters %j is a 400', async (filters) => {
    const response = await usage({ filters })
    expect(response.status).toBe(400)
    expect(response.body).toEqual({ detail: 'Invalid filters format' })
  })

  test('needs an API key', async () => {
    expect((await usage({}, undefined)).status).toBe(200)
    expect((await t.request('GET', '/api/v1/organizations/usage/runs', { key: null })).status).toBe(401)
  })
})
