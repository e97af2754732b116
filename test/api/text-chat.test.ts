import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sweepTextChats } from '../../src/runs/text-chat'
import type { manualClock } from '../../src/lib/clock'
import { onThisMachineFailed } from '../../src/models/http'
import { createTestApp, type TestApp } from '../support/app'
import {
  callTool,
  failWith,
  say,
  startFakeModels,
  type FakeChatAnswer,
  type FakeModelRequest,
  type FakeModels,
} from '../support/fake-models'

/**
 * Text chat end to end: agents, connections and configurations created over the API, the LLM a fake
 * OpenAI-compatible server on 127.0.0.1, every turn through HTTP, the run read back through the runs API.
 */

const KEY = 'sk-chat-secret-9876'
let t: TestApp
let models: FakeModels
let clock: ReturnType<typeof manualClock>
let conversationAnswers: FakeChatAnswer[]
let jsonAnswers: string[]

const node = (id: string, type: string, data: Record<string, unknown>) => ({ id, type, position: { x: 0, y: 0 }, data })
const edge = (source: string, target: string, data: Record<string, unknown>) => ({
  id: `${source}-${target}`,
  source,
  target,
  data,
})

/** Start → Qualify → Schedule → Goodbye, with Start → Goodbye; a global prompt; extraction in Qualify and Goodbye. */
const salesAgent = {
  nodes: [
    node('1', 'startCall', {
      name: 'Start',
      greeting: 'Hello {{first_name | there}}, this is {{company}}.',
      prompt: 'Ask whether {{first_name}} wants a demo.',
    }),
    node('2', 'agentNode', {
      name: 'Qualify',
      prompt: 'Collect name, age, budget and whether they want a demo. Today is {{current_weekday}}.',
      extraction_enabled: true,
      extraction_prompt: 'Read what {{first_name}} said.',
      extraction_variables: [
        { name: 'customer_name', type: 'string', prompt: 'Full name' },
        { name: 'age', type: 'number' },
        { name: 'budget', type: 'number' },
        { name: 'wants_demo', type: 'boolean' },
      ],
    }),
    node('3', 'agentNode', {
      name: 'Schedule',
      prompt: 'Book a demo for {{customer_name}} ({{age}}), budget {{budget | unknown}}, region {{region | EU}}.',
      add_global_prompt: false,
    }),
    node('4', 'endCall', {
      name: 'Goodbye',
      prompt: 'Thank {{customer_name | the caller}} and say goodbye.',
      extraction_enabled: true,
      extraction_variables: [
        { name: 'call_disposition', type: 'string' },
        { name: 'tag_interest', type: 'string' },
      ],
    }),
    node('9', 'globalNode', { name: 'Persona', prompt: 'You are Ava from {{company}}.' }),
  ],
  edges: [
    edge('1', '2', { label: 'Wants a demo!', condition: 'The caller wants a demo' }),
    edge('1', '4', { label: 'Not interested', condition: 'The caller declines' }),
    edge('2', '3', {
      label: 'Details collected',
      condition: 'All details are known',
      transition_speech: 'One moment, {{first_name}}.',
    }),
    edge('3', '4', { label: 'Booked', condition: 'The demo is booked' }),
  ],
}

async function post(path: string, body: unknown, key = t.adminKey) {
  const response = await t.request('POST', path, { key, body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

async function agent(
  definition: unknown,
  configurations: Record<string, unknown> = {},
  key = t.adminKey,
): Promise<number> {
  return (
    await post(
      '/api/v1/workflow/create/definition',
      { name: 'Sales', workflow_definition: definition, workflow_configurations: configurations },
      key,
    )
  ).id
}

const sessions = (workflowId: number) => `/api/v1/workflow/${workflowId}/text-chat/sessions`
const conversationRequests = () =>
  models.requestsTo('/chat/completions').filter((request) => !request.body.response_format)
const extractionRequests = () =>
  models.requestsTo('/chat/completions').filter((request) => request.body.response_format)
const systemPrompt = (request: FakeModelRequest) => request.body.messages[0].content as string
const toolNames = (request: FakeModelRequest) =>
  (request.body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name)

let connection: string

beforeAll(async () => {
  t = createTestApp()
  clock = t.ctx.clock as ReturnType<typeof manualClock>
  models = startFakeModels()
  connection = (
    await post('/api/v1/organizations/provider-connections', {
      name: 'Fake',
      provider: 'openai',
      base_url: models.baseUrl,
      api_key: KEY,
    })
  ).uuid
  await post('/api/v1/organizations/model-configurations', {
    name: 'Default',
    llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm', temperature: 0.3 } },
  })
  const card = await t.request('PUT', '/api/v1/organizations/price-card', {
    body: { llm_input_per_1k_tokens: 0.5, llm_output_per_1k_tokens: 1.5 },
  })
  expect(card.status).toBe(200)
})
afterAll(() => {
  models.stop()
  t.close()
})
beforeEach(() => {
  models.reset()
  conversationAnswers = []
  jsonAnswers = []
  // Extraction requests (JSON schema) and conversation turns get separate scripts, whatever order they arrive in.
  models.chat.handler = (request) =>
    request.body.response_format
      ? say(jsonAnswers.shift() ?? '{}')
      : (conversationAnswers.shift() ?? failWith(500, { error: { message: 'nothing scripted' } }))
})

describe('a multi-node agent walked by text chat', () => {
  test('every transition, templates, extraction types, the End node, disposition, usage, cost and the transcript', async () => {
    const workflowId = await agent(salesAgent)
    const opened = await post(sessions(workflowId), {
      initial_context: { first_name: 'Ada', company: 'Acme', provider: 'spoofed' },
      annotations: { source: 'test' },
    })
    expect(opened).toMatchObject({
      workflow_id: workflowId,
      mode: 'textchat',
      state: 'running',
      is_completed: false,
      revision: 1,
      initial_context: {
        first_name: 'Ada',
        company: 'Acme',
        runtime_configuration: { llm_provider: 'openai', llm_model: 'fake-llm' },
      },
      annotations: { source: 'test' },
      session_data: { status: 'idle', inactivity_timeout_seconds: 1800, end_reason: null },
    })
    expect(opened.initial_context.provider).toBeUndefined()
    expect(opened.session_data.turns).toHaveLength(1)
    expect(opened.session_data.turns[0]).toMatchObject({
      user_message: null,
      assistant_message: { text: 'Hello Ada, this is Acme.', node_id: '1' },
      status: 'completed',
    })
    expect(opened.session_data.turns[0].id).toMatch(/^turn_[0-9a-f]{12}$/)
    expect(models.requests).toHaveLength(0)
    const runId = opened.workflow_run_id
    const messages = `${sessions(workflowId)}/${runId}/messages`

    conversationAnswers.push(
      callTool('wants_a_demo', {}, { text: 'Great!' }),
      say('What is your name, age and budget?'),
    )
    const first = await post(messages, { text: 'Yes, I want a demo', expected_revision: 1 })
    expect(first.revision).toBe(2)
    expect(first.session_data.turns[1]).toMatchObject({
      user_message: { text: 'Yes, I want a demo' },
      assistant_message: { text: 'Great!\n\nWhat is your name, age and budget?', node_id: '2' },
    })
    expect(first.session_data.turns[1].events.map((event: { type: string }) => event.type)).toContain('transition')
    expect(first.session_data.turns[1].usage.total_tokens).toBeGreaterThan(0)
    const [startRequest, qualifyRequest] = conversationRequests()
    expect(startRequest.body).toMatchObject({ model: 'fake-llm', temperature: 0.3, stream: true })
    expect(startRequest.headers.get('authorization')).toBe(`Bearer ${KEY}`)
    expect(systemPrompt(startRequest)).toBe('You are Ava from Acme.\n\nAsk whether Ada wants a demo.')
    expect(toolNames(startRequest)).toEqual(['wants_a_demo', 'not_interested'])
    expect(startRequest.body.tools[0].function.description).toBe('The caller wants a demo')
    expect(systemPrompt(qualifyRequest)).toBe(
      'You are Ava from Acme.\n\nCollect name, age, budget and whether they want a demo. Today is Monday.',
    )
    expect(toolNames(qualifyRequest)).toEqual(['details_collected'])

    // Leaving Qualify extracts; the first answer is not JSON and is asked again; values are coerced to their types.
    jsonAnswers.push(
      'Sure! Here you go',
      JSON.stringify({ customer_name: 'Ada Lovelace', age: '36', budget: '1500.5', wants_demo: 'yes' }),
    )
    conversationAnswers.push(callTool('details_collected', {}), say('Which day suits you?'))
    const second = await post(messages, { text: 'Ada Lovelace, 36, about 1500, yes', expected_revision: 2 })
    expect(second.session_data.turns[2].assistant_message.text).toBe('One moment, Ada.\n\nWhich day suits you?')
    const extraction = extractionRequests()
    expect(extraction).toHaveLength(2)
    expect(extraction[0].body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'extracted_variables' },
    })
    expect(extraction[0].body.response_format.json_schema.schema.properties.age.type).toEqual(['number', 'null'])
    expect(extraction[0].body.messages[0].content).toContain('Read what Ada said.')
    const scheduleRequest = conversationRequests()[3]
    // Extracted values fill later prompts; a missing value takes its default; no global prompt here.
    expect(systemPrompt(scheduleRequest)).toBe('Book a demo for Ada Lovelace (36), budget 1500.5, region EU.')
    expect(toolNames(scheduleRequest)).toEqual(['booked'])
    expect(
      scheduleRequest.body.messages.some((message: { content: string }) => message.content === 'One moment, Ada.'),
    ).toBe(false)
    expect(second.gathered_context).toMatchObject({
      customer_name: 'Ada Lovelace',
      age: 36,
      budget: 1500.5,
      wants_demo: true,
      nodes_visited: ['Start', 'Qualify', 'Schedule'],
    })

    jsonAnswers.push(JSON.stringify({ call_disposition: 'demo_booked', tag_interest: 'high' }))
    conversationAnswers.push(callTool('booked', {}), say('Thank you Ada Lovelace, goodbye!'))
    clock.advance(65_000)
    const last = await post(messages, { text: 'Tuesday please', expected_revision: 3 })
    const goodbyeRequest = conversationRequests()[5]
    expect(toolNames(goodbyeRequest)).toEqual([])
    expect(systemPrompt(goodbyeRequest)).toBe('You are Ava from Acme.\n\nThank Ada Lovelace and say goodbye.')
    expect(last).toMatchObject({
      state: 'completed',
      is_completed: true,
      revision: 4,
      session_data: { status: 'completed', end_reason: 'user_qualified' },
      gathered_context: {
        nodes_visited: ['Start', 'Qualify', 'Schedule', 'Goodbye'],
        extracted_variables: {
          customer_name: 'Ada Lovelace',
          age: 36,
          budget: 1500.5,
          wants_demo: true,
          call_disposition: 'demo_booked',
          tag_interest: 'high',
        },
        call_disposition: 'demo_booked',
        mapped_call_disposition: 'demo_booked',
      },
    })
    expect(last.gathered_context.call_tags).toEqual(['user_speech', 'high', 'demo_booked'])
    expect(last.session_data.turns[3].assistant_message.text).toBe('Thank you Ada Lovelace, goodbye!')

    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${runId}`)).body
    expect(run).toMatchObject({
      mode: 'textchat',
      is_completed: true,
      call_type: 'inbound',
      annotations: { source: 'test' },
    })
    expect(run.logs.transcript.map((turn: { role: string; text: string }) => `${turn.role}: ${turn.text}`)).toEqual([
      'agent: Hello Ada, this is Acme.',
      'user: Yes, I want a demo',
      'agent: Great!',
      'agent: What is your name, age and budget?',
      'user: Ada Lovelace, 36, about 1500, yes',
      'agent: One moment, Ada.',
      'agent: Which day suits you?',
      'user: Tuesday please',
      'agent: Thank you Ada Lovelace, goodbye!',
    ])
    expect(run.logs.transcript[5]).toMatchObject({ node_id: '2', interrupted: false })
    const eventTypes = new Set(run.logs.realtime_feedback_events.map((event: { type: string }) => event.type))
    for (const type of [
      'rtf-node-transition',
      'rtf-function-call-start',
      'rtf-function-call-end',
      'rtf-bot-text',
      'rtf-user-transcription',
      'rtf-ttfb-metric',
    ]) {
      expect(eventTypes).toContain(type)
    }
    expect(run.logs.session).toMatchObject({ channel: 'chat', end_reason: 'user_qualified' })

    const tokens = models.requestsTo('/chat/completions').length
    expect(Object.keys(run.usage_info.llm)).toEqual(['openai|||fake-llm'])
    const counts = run.usage_info.llm['openai|||fake-llm']
    expect(tokens).toBe(9)
    expect(counts.total_tokens).toBe(counts.prompt_tokens + counts.completion_tokens)
    expect(run.usage_info).toMatchObject({ stt: {}, tts: {}, call_duration_seconds: 65 })
    const expectedCost =
      Math.round(((counts.prompt_tokens / 1000) * 0.5 + (counts.completion_tokens / 1000) * 1.5) * 1e6) / 1e6
    expect(run.cost_info).toEqual({
      currency: 'USD',
      llm: expectedCost,
      stt: 0,
      tts: 0,
      telephony: 0,
      total: expectedCost,
      charge_usd: expectedCost,
    })

    const transcript = await t.app.handle(
      new Request(run.transcript_public_url.replace(/^https?:\/\/[^/]+/, 'http://localhost')),
    )
    const lines = (await transcript.text()).trimEnd().split('\n')
    expect(lines[0]).toBe('[2026-01-05T10:00:00.000Z] assistant: Hello Ada, this is Acme.')
    expect(lines.at(-1)).toMatch(/^\[2026-01-05T10:01:05\.000Z\] assistant: Thank you Ada Lovelace, goodbye!$/)
    expect(lines).toHaveLength(9)

    const usage = await t.request(
      'GET',
      `/api/v1/organizations/usage/runs?filters=${encodeURIComponent(JSON.stringify([{ attribute: 'callChannel', value: { status: 'chat' } }]))}`,
    )
    expect(usage.body.runs.map((item: { id: number }) => item.id)).toContain(runId)

    for (const text of [run, opened, first, last].map((body) => JSON.stringify(body)).concat(t.logText()))
      expect(text).not.toContain(KEY)
  })

  test('an LLM that fails ends the session with pipeline_error; the failed turn says so', async () => {
    const workflowId = await agent(salesAgent)
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Bo', company: 'Acme' } })
    conversationAnswers.push(failWith(503, { error: { message: 'model is loading' } }))
    const answer = await post(`${sessions(workflowId)}/${opened.workflow_run_id}/messages`, { text: 'Hello?' })
    expect(answer).toMatchObject({
      is_completed: true,
      session_data: { status: 'completed', end_reason: 'pipeline_error' },
    })
    expect(answer.session_data.turns[1].status).toBe('failed')
    expect(answer.gathered_context.call_disposition).toBe('pipeline_error')
    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`)).body
    // The fake is on this machine: the run tells only that it failed, the log tells why.
    expect(run.logs.warnings.join()).toContain(onThisMachineFailed('chat completion'))
    expect(t.logText()).toContain('answered 503: model is loading')
  })
})

describe('revisions, one turn at a time, limits', () => {
  test('a stale revision is a 409 with both revisions; a message while one is answered is a 409; text is capped', async () => {
    const workflowId = await agent(salesAgent)
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Cy', company: 'Acme' } })
    const messages = `${sessions(workflowId)}/${opened.workflow_run_id}/messages`
    const stale = await t.request('POST', messages, { body: { text: 'hi', expected_revision: 0 } })
    expect(stale.status).toBe(409)
    expect(stale.body.detail).toEqual({
      message: 'The session has changed since that revision',
      expected_revision: 0,
      actual_revision: 1,
    })

    conversationAnswers.push(say('Slow answer.', { firstTokenDelayMs: 300 }), say('Never used.'))
    const [slow, concurrent] = await Promise.all([
      t.request('POST', messages, { body: { text: 'first', expected_revision: 1 } }),
      Bun.sleep(50).then(() => t.request('POST', messages, { body: { text: 'second' } })),
    ])
    expect(slow.status).toBe(200)
    expect(slow.body.session_data.turns.at(-1).assistant_message.text).toBe('Slow answer.')
    expect(concurrent.status).toBe(409)
    expect(concurrent.body.detail.message).toBe('The previous message is still being answered')
    expect(conversationRequests()).toHaveLength(1)

    const tooLong = await t.request('POST', messages, { body: { text: 'x'.repeat(4001) } })
    expect(tooLong.status).toBe(422)
    expect(tooLong.body.detail[0].loc).toEqual(['body', 'text'])
  })

  test('end completes the run; later messages are refused; end again answers the ended session', async () => {
    const workflowId = await agent(salesAgent)
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Di', company: 'Acme' } })
    const base = `${sessions(workflowId)}/${opened.workflow_run_id}`
    const ended = await post(`${base}/end`, {})
    expect(ended).toMatchObject({
      is_completed: true,
      revision: 2,
      session_data: { status: 'completed', end_reason: 'user_hangup' },
    })
    expect(ended.gathered_context.call_disposition).toBe('user_hangup')
    expect((await t.request('POST', `${base}/messages`, { body: { text: 'hello?' } })).status).toBe(400)
    expect((await post(`${base}/end`, {})).revision).toBe(2)
    expect((await t.request('GET', base)).body.session_data.status).toBe('completed')
  })

  test("another organization's agent and sessions do not exist for you", async () => {
    const workflowId = await agent(salesAgent)
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Ed', company: 'Acme' } })
    const other = t.newOrg('chat-other')
    expect((await t.request('POST', sessions(workflowId), { key: other.key, body: {} })).status).toBe(404)
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/messages'],
      ['POST', '/end'],
    ] as const) {
      const response = await t.request(method, `${sessions(workflowId)}/${opened.workflow_run_id}${suffix}`, {
        key: other.key,
        body: method === 'POST' ? { text: 'x' } : undefined,
      })
      expect({ suffix, status: response.status }).toEqual({ suffix, status: 404 })
    }
    // An organization without models is told so before any run is written.
    const otherAgent = await agent(salesAgent, {}, other.key)
    const refused = await t.request('POST', sessions(otherAgent), { key: other.key, body: {} })
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toContain('no LLM is configured')
  })
})

describe('the clock ends sessions', () => {
  test("inactivity timeout (the agent's, within the reference limits)", async () => {
    const workflowId = await agent(salesAgent, { text_chat_inactivity_timeout_seconds: 5 })
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Fa', company: 'Acme' } })
    expect(opened.session_data.inactivity_timeout_seconds).toBe(60)
    clock.advance(59_000)
    await sweepTextChats(t.ctx)
    expect((await t.request('GET', `${sessions(workflowId)}/${opened.workflow_run_id}`)).body.is_completed).toBe(false)
    clock.advance(1000)
    await sweepTextChats(t.ctx)
    const closed = (await t.request('GET', `${sessions(workflowId)}/${opened.workflow_run_id}`)).body
    expect(closed).toMatchObject({
      is_completed: true,
      revision: 2,
      session_data: { status: 'completed', end_reason: 'user_idle_max_duration_exceeded' },
    })
    expect(closed.gathered_context.call_disposition).toBe('user_idle_max_duration_exceeded')
  })

  test("the agent's max duration", async () => {
    const workflowId = await agent(salesAgent, { max_call_duration_seconds: 30 })
    const opened = await post(sessions(workflowId), { initial_context: { first_name: 'Gil', company: 'Acme' } })
    clock.advance(30_000)
    await sweepTextChats(t.ctx)
    const closed = (await t.request('GET', `${sessions(workflowId)}/${opened.workflow_run_id}`)).body
    expect(closed).toMatchObject({ is_completed: true, session_data: { end_reason: 'call_duration_exceeded' } })
    expect(
      (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`)).body.usage_info
        .call_duration_seconds,
    ).toBe(30)
  })
})

test('llm_fallback: a primary silent past after_ms hands the turn to the target; the switch and usage are on the run', async () => {
  const backup = (
    await post('/api/v1/organizations/provider-connections', {
      name: 'Backup',
      provider: 'openai',
      base_url: models.baseUrl,
    })
  ).uuid
  const workflowId = await agent({ nodes: [node('1', 'startCall', { name: 'Start', prompt: 'Help.' })], edges: [] })
  models.chat.handler = (request) =>
    request.body.model === 'slow-llm' ? say('too late', { firstTokenDelayMs: 5000 }) : say('Fallback here.')
  const opened = await post(sessions(workflowId), {
    model_overrides: {
      llm: { settings: { model: 'slow-llm' } },
      llm_fallback: {
        rules: [
          {
            condition: { type: 'no_output', after_ms: 100 },
            target: { provider_connection_uuid: backup, settings: { model: 'fast-llm' } },
          },
        ],
      },
    },
  })
  expect(opened.session_data.turns[0].assistant_message.text).toBe('Fallback here.')
  expect(opened.initial_context.runtime_configuration).toMatchObject({
    llm_model: 'slow-llm',
    llm_fallback: [{ provider: 'openai', model: 'fast-llm', after_ms: 100 }],
  })
  expect(models.requestsTo('/chat/completions').map((request) => [request.body.model, request.aborted])).toEqual([
    ['slow-llm', true],
    ['fast-llm', false],
  ])
  expect(models.requestsTo('/chat/completions')[1].headers.get('authorization')).toBeNull()
  const ended = await post(`${sessions(workflowId)}/${opened.workflow_run_id}/end`, {})
  const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${ended.workflow_run_id}`)).body
  expect(run.logs.llm_fallback).toEqual([
    expect.objectContaining({ from: 'openai|||slow-llm', to: 'openai|||fast-llm', reason: 'no_output', after_ms: 100 }),
  ])
  expect(Object.keys(run.usage_info.llm)).toEqual(['openai|||fast-llm'])
})
