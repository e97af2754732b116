import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { PUBLIC_LINK_TTL_MS } from '../../src/runs/artifacts'
import { finishRun, getRun, markRunRunning, updateRun } from '../../src/runs/service'
import { findRunTarget, RUN_TARGET_PROBLEMS } from '../../src/runs/target'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition, seedRun } from '../support/agents'

const START = Date.parse('2026-01-05T10:00:00Z')
let clock: ReturnType<typeof manualClock>
let t: TestApp
beforeEach(() => {
  clock = manualClock(START)
  t = createTestApp({ flags: { 'public-url': 'https://pbx.example.test' }, clock })
})
afterEach(() => t.close())

const finished = {
  durationSeconds: 61.6,
  disposition: 'XFER',
  cost: { service_token_usage: 12, charge_usd: 0.25 },
  usage: { llm: { total_tokens: 300 } },
}

describe('run detail', () => {
  test('a finished run with a recording: every field, workflow name and version, a minted public link', async () => {
    const agent = await createAgent(t, 'Support')
    const run = seedRun(t, {
      organizationId: 1,
      agent,
      name: 'WR-API-1234',
      mode: 'twilio',
      callType: 'outbound',
      campaignId: 7,
      initialContext: { phone_number: '+14155550100', called_number: '+14155550100', first_name: 'Ada' },
      outcome: { ...finished, gatheredContext: { call_id: 'CA1' }, logs: { events: 3 } },
      artifacts: { recording: 'recordings/1/1.wav' },
    })
    const response = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)
    expect(response.status).toBe(200)
    const token = response.body.public_access_token
    expect(token).toMatch(/^[0-9a-f-]{36}$/)
    expect(response.body).toEqual({
      id: run.id,
      workflow_id: agent.id,
      workflow_name: 'Support',
      name: 'WR-API-1234',
      mode: 'twilio',
      call_type: 'outbound',
      created_at: '2026-01-05T10:00:00.000Z',
      is_completed: true,
      definition_id: agent.current_definition_id,
      version_number: 1,
      initial_context: { phone_number: '+14155550100', called_number: '+14155550100', first_name: 'Ada' },
      gathered_context: { call_id: 'CA1', call_disposition: 'XFER', mapped_call_disposition: 'XFER' },
      usage_info: { llm: { total_tokens: 300 }, call_duration_seconds: 61.6 },
      cost_info: { service_token_usage: 12, charge_usd: 0.25 },
      logs: { events: 3 },
      annotations: {},
      recording_url: 'recordings/1/1.wav',
      transcript_url: null,
      user_recording_url: null,
      bot_recording_url: null,
      recording_public_url: `https://pbx.example.test/api/v1/public/download/workflow/${token}/recording`,
      transcript_public_url: null,
      user_recording_public_url: null,
      bot_recording_public_url: null,
      public_access_token: token,
    })
    // Reading again keeps the same token while it is valid.
    expect((await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)).body.public_access_token).toBe(token)
  })

  test('a run in progress without artifacts has no token and empty objects', async () => {
    const agent = await createAgent(t, 'A')
    const run = seedRun(t, { organizationId: 1, agent, callType: 'inbound', mode: 'ari' })
    const response = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)
    expect(response.body).toMatchObject({
      is_completed: false,
      call_type: 'inbound',
      usage_info: {},
      cost_info: {},
      public_access_token: null,
      recording_url: null,
      recording_public_url: null,
      transcript_public_url: null,
    })
  })

  test('404 "Workflow run not found" for an unknown run, a run of another agent, and a run of another organization', async () => {
    const mine = await createAgent(t, 'Mine')
    const sibling = await createAgent(t, 'Sibling')
    const other = t.newOrg('acme')
    const theirs = await createAgent(t, 'Theirs', other.key)
    const myRun = seedRun(t, { organizationId: 1, agent: mine })
    const theirRun = seedRun(t, { organizationId: other.organizationId, agent: theirs })
    for (const path of [
      `/api/v1/workflow/${mine.id}/runs/999`,
      `/api/v1/workflow/${sibling.id}/runs/${myRun.id}`,
      `/api/v1/workflow/${theirs.id}/runs/${theirRun.id}`,
      `/api/v1/workflow/${mine.id}/runs/${theirRun.id}`,
    ]) {
      const response = await t.request('GET', path)
      expect({ path, status: response.status, body: response.body }).toEqual({
        path,
        status: 404,
        body: { detail: 'Workflow run not found' },
      })
    }
    expect(
      (await t.request('GET', `/api/v1/workflow/${theirs.id}/runs/${theirRun.id}`, { key: other.key })).status,
    ).toBe(200)
  })

  test('path ids are validated', async () => {
    const response = await t.request('GET', '/api/v1/workflow/1/runs/abc')
    expect(response.status).toBe(422)
    expect(response.body.detail[0]).toMatchObject({ type: 'int_parsing', loc: ['path', 'run_id'] })
  })
})

describe('public download', () => {
  async function runWithArtifacts() {
    const agent = await createAgent(t, 'A')
    await t.ctx.objects.put('recordings/1/1.wav', 'RIFF-audio')
    await t.ctx.objects.put('transcripts/1/1.txt', 'agent: hello')
    const run = seedRun(t, {
      organizationId: 1,
      agent,
      outcome: finished,
      artifacts: {
        recording: 'recordings/1/1.wav',
        transcript: 'transcripts/1/1.txt',
        bot_recording: 'recordings/1/1-bot.wav',
      },
    })
    const detail = (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)).body
    return { agent, run, detail, path: (url: string) => new URL(url).pathname }
  }

  test('streams the artifact without an API key, as an attachment or inline', async () => {
    const { run, detail, path } = await runWithArtifacts()
    const recording = await t.request('GET', path(detail.recording_public_url), { key: null })
    expect(recording.status).toBe(200)
    expect(recording.text).toBe('RIFF-audio')
    expect(recording.headers.get('content-type')).toContain('audio/')
    expect(recording.headers.get('content-disposition')).toBe(`attachment; filename="run-${run.id}-recording.wav"`)
    expect(recording.headers.get('cache-control')).toBe('private, no-store')
    const transcript = await t.request('GET', `${path(detail.transcript_public_url)}?inline=true`, { key: null })
    expect(transcript.text).toBe('agent: hello')
    expect(transcript.headers.get('content-disposition')).toStartWith('inline;')
  })

  test.each([
    [
      'an unknown token',
      (token: string) => `/api/v1/public/download/workflow/not-${token}/recording`,
      404,
      'Invalid or expired token',
    ],
    [
      'an unsupported artifact',
      (token: string) => `/api/v1/public/download/workflow/${token}/video`,
      400,
      'Unsupported artifact type',
    ],
    [
      'an artifact the run does not have',
      (token: string) => `/api/v1/public/download/workflow/${token}/user_recording`,
      404,
      'No user_recording available for this workflow run',
    ],
    [
      'an artifact whose object is missing',
      (token: string) => `/api/v1/public/download/workflow/${token}/bot_recording`,
      404,
      'No bot_recording available for this workflow run',
    ],
  ])('%s is refused', async (_label, pathFor, status, detail) => {
    const { detail: run } = await runWithArtifacts()
    const response = await t.request('GET', pathFor(run.public_access_token), { key: null })
    expect(response.status).toBe(status)
    expect(response.body).toEqual({ detail })
  })

  test('links expire; reading the run afterwards mints a new token and the old link stays dead', async () => {
    const { agent, run, detail, path } = await runWithArtifacts()
    clock.advance(PUBLIC_LINK_TTL_MS - 1000)
    expect((await t.request('GET', path(detail.recording_public_url), { key: null })).status).toBe(200)
    clock.advance(2000)
    const expired = await t.request('GET', path(detail.recording_public_url), { key: null })
    expect(expired.status).toBe(404)
    expect(expired.body).toEqual({ detail: 'Invalid or expired token' })
    // The list shows no link for an expired token; it does not mint one.
    const listed = (await t.request('GET', `/api/v1/workflow/${agent.id}/runs`)).body.runs[0]
    expect(listed).toMatchObject({
      public_access_token: null,
      recording_public_url: null,
      recording_url: 'recordings/1/1.wav',
    })
    const fresh = (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)).body
    expect(fresh.public_access_token).not.toBe(detail.public_access_token)
    expect((await t.request('GET', path(fresh.recording_public_url), { key: null })).status).toBe(200)
    expect((await t.request('GET', path(detail.recording_public_url), { key: null })).status).toBe(404)
  })
})

describe('agent run list', () => {
  /** Five runs a minute apart: durations 10..50 s, dispositions alternate, the last one still in progress. */
  async function seedList() {
    const agent = await createAgent(t, 'Lister')
    const other = await createAgent(t, 'Other')
    const runs = []
    for (let index = 0; index < 5; index++) {
      const inProgress = index === 4
      runs.push(
        seedRun(t, {
          organizationId: 1,
          agent,
          name: `R${index}`,
          outcome: inProgress
            ? undefined
            : {
                durationSeconds: (index + 1) * 10,
                disposition: index % 2 === 0 ? 'XFER' : 'DNC',
                cost: { service_token_usage: index * 100 },
              },
        }),
      )
      clock.advance(60_000)
    }
    seedRun(t, { organizationId: 1, agent: other, outcome: finished })
    return { agent, names: (body: any) => body.runs.map((run: any) => run.name) }
  }

  const list = (agentId: number, query: Record<string, string> = {}) =>
    t.request('GET', `/api/v1/workflow/${agentId}/runs?${new URLSearchParams(query)}`)
  const filters = (...items: unknown[]) => JSON.stringify(items)

  test("pages the agent's runs of every state, newest first, with the full run objects", async () => {
    const { agent, names } = await seedList()
    const first = await list(agent.id, { limit: '2' })
    expect(first.status).toBe(200)
    expect(names(first.body)).toEqual(['R4', 'R3'])
    expect(first.body).toMatchObject({ total_count: 5, page: 1, limit: 2, total_pages: 3, applied_filters: [] })
    expect(first.body.runs[0]).toMatchObject({ workflow_name: 'Lister', version_number: 1, is_completed: false })
    expect(names((await list(agent.id, { limit: '2', page: '3' })).body)).toEqual(['R0'])
    expect(names((await list(agent.id, { limit: '2', page: '4' })).body)).toEqual([])
    expect(names((await list(agent.id, { sort_by: 'duration', sort_order: 'asc' })).body)).toEqual([
      'R4',
      'R0',
      'R1',
      'R2',
      'R3',
    ])
    expect(names((await list(agent.id, { sort_by: 'duration' })).body)).toEqual(['R3', 'R2', 'R1', 'R0', 'R4'])
  })

  test.each([
    [
      'dateRange',
      [
        {
          attribute: 'dateRange',
          type: 'dateRange',
          value: { from: '2026-01-05T10:01:00Z', to: '2026-01-05T10:03:00Z' },
        },
      ],
      ['R3', 'R2', 'R1'],
    ],
    [
      'dispositionCode',
      [{ attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['DNC'] } }],
      ['R3', 'R1'],
    ],
    ['duration', [{ attribute: 'duration', type: 'numberRange', value: { min: 20, max: 30 } }], ['R2', 'R1']],
    [
      'status completed',
      [{ attribute: 'status', type: 'radio', value: { status: 'completed' } }],
      ['R3', 'R2', 'R1', 'R0'],
    ],
    ['status in_progress', [{ attribute: 'status', type: 'radio', value: { status: 'in_progress' } }], ['R4']],
    ['tokenUsage', [{ attribute: 'tokenUsage', type: 'numberRange', value: { min: 150 } }], ['R3', 'R2']],
    [
      'combined',
      [
        { attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['XFER'] } },
        { attribute: 'duration', type: 'numberRange', value: { max: 30 } },
      ],
      ['R2', 'R0'],
    ],
    [
      'a mismatched type (ignored)',
      [{ attribute: 'duration', type: 'text', value: { value: '10' } }],
      ['R4', 'R3', 'R2', 'R1', 'R0'],
    ],
  ])('filter %s', async (_label, items, expected) => {
    const { agent, names } = await seedList()
    const response = await list(agent.id, { filters: filters(...items) })
    expect(response.status).toBe(200)
    expect(names(response.body)).toEqual(expected)
    expect(response.body.total_count).toBe(expected.length)
    expect(response.body.applied_filters).toEqual(items)
  })

  test('errors: unknown attribute 403, bad JSON 400, bad sort order 422, unknown or foreign agent 404', async () => {
    const { agent } = await seedList()
    const unknown = await list(agent.id, {
      filters: filters({ attribute: 'callerNumber', type: 'text', value: { value: '1' } }),
    })
    expect(unknown.status).toBe(403)
    expect(unknown.body).toEqual({ detail: "Invalid attribute 'callerNumber'" })
    for (const bad of ['{not json', '{"attribute":"duration"}']) {
      const response = await list(agent.id, { filters: bad })
      expect(response.status).toBe(400)
      expect(response.body).toEqual({ detail: 'Invalid filter format' })
    }
    const order = await list(agent.id, { sort_order: 'up' })
    expect(order.status).toBe(422)
    expect(order.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['query', 'sort_order'] })
    const other = t.newOrg('acme')
    const foreign = await t.request('GET', `/api/v1/workflow/${agent.id}/runs`, { key: other.key })
    expect(foreign.status).toBe(404)
    expect(foreign.body).toEqual({ detail: `Workflow with id ${agent.id} not found` })
    expect((await list(999)).status).toBe(404)
    expect((await t.request('GET', `/api/v1/workflow/${agent.id}/runs`, { key: null })).status).toBe(401)
    expect((await t.request('GET', `/api/v1/workflow/${agent.id}/runs/1`, { key: null })).status).toBe(401)
  })
})

describe('run service', () => {
  test('a run goes initialized → running → completed once; a second finish changes nothing', async () => {
    const agent = await createAgent(t, 'Life')
    const run = seedRun(t, { organizationId: 1, agent, initialContext: { phone_number: '+1' } })
    expect(run.state).toBe('initialized')
    expect(markRunRunning(t.ctx, run.id)).toBe(true)
    expect(markRunRunning(t.ctx, run.id)).toBe(false)
    updateRun(t.ctx, run.id, { initialContext: { caller_number: '+2' }, gatheredContext: { call_id: 'c1' } })
    expect(finishRun(t.ctx, run.id, { durationSeconds: 5, disposition: 'user_hangup' })).toBe(true)
    expect(finishRun(t.ctx, run.id, { durationSeconds: 99, disposition: 'busy' })).toBe(false)
    const stored = getRun(t.ctx, 1, run.id)!
    expect(stored).toMatchObject({
      state: 'completed',
      startedAt: '2026-01-05T10:00:00.000Z',
      completedAt: '2026-01-05T10:00:00.000Z',
      initialContext: { phone_number: '+1', caller_number: '+2' },
      gatheredContext: { call_id: 'c1', call_disposition: 'user_hangup', mapped_call_disposition: 'user_hangup' },
      usageInfo: { call_duration_seconds: 5 },
    })
    expect(getRun(t.ctx, 2, run.id)).toBeNull()
    const fetched = (await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body
    expect(fetched.call_disposition_codes).toEqual({ disposition_codes: ['user_hangup'] })
    expect(fetched.total_runs).toBe(1)
  })

  test('findRunTarget: published version by id, UUID or trigger path; draft only when preferred; every problem', async () => {
    const agent = await createAgent(t, 'Target', undefined, sampleDefinition({ triggerPath: 'go' }))
    const other = t.newOrg('acme')
    await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_definition: sampleDefinition({ triggerPath: 'go', prompt: 'Draft {{x}}' }) },
    })
    const target = (selector: Parameters<typeof findRunTarget>[2], choice = {}, organizationId = 1) =>
      findRunTarget(t.ctx, organizationId, selector, choice)

    const published = target({ triggerPath: 'go' })
    expect(published).toEqual({
      target: expect.objectContaining({
        agentId: agent.id,
        definitionId: agent.current_definition_id,
        versionNumber: 1,
        requiredVariables: ['first_name'],
      }),
    })
    expect(target({ agentUuid: agent.workflow_uuid })).toEqual(published)
    expect(target({ agentId: agent.id }, { preferDraft: true })).toEqual({
      target: expect.objectContaining({ versionNumber: 2, requiredVariables: ['x'] }),
    })
    expect(target({ agentId: agent.id }, { definitionId: agent.current_definition_id })).toEqual(published)

    const draftId = (await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body.current_definition_id
    expect(target({ agentId: agent.id }, { definitionId: draftId })).toEqual({ problem: 'definition_not_found' })
    expect(target({ triggerPath: 'nope' })).toEqual({ problem: 'trigger_not_found' })
    expect(target({ triggerPath: 'go' }, {}, other.organizationId)).toEqual({ problem: 'trigger_not_found' })
    expect(target({ agentUuid: agent.workflow_uuid }, {}, other.organizationId)).toEqual({
      problem: 'workflow_not_found',
    })

    const noTrigger = await createAgent(t, 'Plain', undefined, sampleDefinition({ triggerPath: null }))
    await t.request('PUT', `/api/v1/workflow/${noTrigger.id}`, {
      body: { workflow_definition: sampleDefinition({ triggerPath: 'later' }) },
    })
    expect(target({ triggerPath: 'later' })).toEqual({ problem: 'trigger_not_in_definition' })
    const disabled = sampleDefinition({ triggerPath: 'off' })
    ;(disabled.nodes[2].data as Record<string, unknown>).enabled = false
    await createAgent(t, 'Disabled', undefined, disabled)
    expect(target({ triggerPath: 'off' })).toEqual({ problem: 'trigger_not_active' })

    await t.request('PUT', `/api/v1/workflow/${agent.id}/status`, { body: { status: 'archived' } })
    expect(target({ agentId: agent.id })).toEqual({ problem: 'workflow_not_active' })
    expect(RUN_TARGET_PROBLEMS.workflow_not_active).toBe('Workflow is not active')
  })
})
