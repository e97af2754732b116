import { describe, expect, test } from 'bun:test'
import type { EdgeData, AgentDefinition as WorkflowDefinition } from '../../src/definition/definition'
import { createConversation, type ConversationEvent, type ConversationOptions } from '../../src/conversation/engine'
import { transcriptText } from '../../src/conversation/record'
import { manualClock } from '../../src/lib/clock'
import { ScriptedLlm } from '../support/scripted-llm'

type Json = Record<string, any>

const START_MS = Date.parse('2026-03-02T09:30:00.000Z') // a Monday

const node = (id: string, type: string, data: Json) => ({ id, type, position: { x: 0, y: 0 }, data })
const edge = (source: string, target: string, data: EdgeData) => ({ id: `${source}-${target}`, source, target, data })

/** Start → Qualify → Schedule → End, with a shortcut Start → End. */
function salesAgent(overrides: { start?: Json; qualify?: Json; end?: Json } = {}): WorkflowDefinition {
  return {
    nodes: [
      node('1', 'startCall', {
        name: 'Start',
        greeting: 'Hello {{first_name | there}}, this is {{company}}.',
        prompt: 'Ask whether {{first_name}} wants a demo.',
        ...overrides.start,
      }),
      node('2', 'agentNode', {
        name: 'Qualify',
        prompt: 'Collect name, age, budget and whether they want a demo. Today is {{current_weekday}}.',
        extraction_enabled: true,
        extraction_prompt: 'Read the details the caller gave.',
        extraction_variables: [
          { name: 'customer_name', type: 'string', prompt: 'Full name' },
          { name: 'age', type: 'integer' },
          { name: 'budget', type: 'number' },
          { name: 'wants_demo', type: 'boolean' },
        ],
        ...overrides.qualify,
      }),
      node('3', 'agentNode', {
        name: 'Schedule',
        prompt: 'Book a demo for {{customer_name}} ({{age}}), budget {{budget | unknown}}.',
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
        ...overrides.end,
      }),
      node('9', 'globalNode', { name: 'Persona', prompt: 'You are Ava from {{company}}. Now: {{current_time}}.' }),
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
}

function setUp(definition: WorkflowDefinition, extra: Partial<ConversationOptions> & { variables?: Json } = {}) {
  const llm = new ScriptedLlm()
  const clock = manualClock(START_MS)
  const events: ConversationEvent[] = []
  const sleeps: number[] = []
  const conversation = createConversation({
    definition,
    configurations: { max_call_duration_seconds: 300 },
    variables: { first_name: 'Dana', company: 'Acme' },
    llm,
    clock,
    onEvent: (event) => events.push(event),
    // Resolves after pending microtasks, so scripted extractions finish before the bounded wait at the end gives up.
    sleep: async (ms) => {
      sleeps.push(ms)
      await Bun.sleep(0)
    },
    ...extra,
  })
  const ofType = <T extends ConversationEvent['type']>(type: T) =>
    events.filter((event): event is Extract<ConversationEvent, { type: T }> => event.type === type)
  return { llm, clock, events, sleeps, conversation, ofType }
}

const systemPromptOf = (llm: ScriptedLlm, index: number) => llm.requests[index].messages[0].content
const toolNames = (llm: ScriptedLlm, index: number) => llm.requests[index].tools.map(({ name }) => name)

const QUALIFY_ANSWER = JSON.stringify({ customer_name: 'Dana Smith', age: '41.2', budget: '1500.5', wants_demo: 'yes' })

describe('walking the graph', () => {
  test('every transition, transition speech, templates, extraction and the End node closing line', async () => {
    const { llm, conversation, ofType, clock } = setUp(salesAgent())
    llm.answerJson(QUALIFY_ANSWER, JSON.stringify({ call_disposition: 'demo_booked', tag_interest: 'high' }))

    const greeting = await conversation.start()
    expect(greeting.map(({ text }) => text)).toEqual(['Hello Dana, this is Acme.'])
    expect(llm.requests).toHaveLength(0)

    clock.advance(2000)
    llm.say({ text: 'Great,', calls: ['wants_a_demo'] }, { text: ['What is your ', 'name?'] })
    const first = await conversation.userMessage('Yes, I want a demo', {
      startMs: START_MS + 1500,
      endMs: START_MS + 2000,
    })
    expect(first.map(({ text, node_id }) => [text, node_id])).toEqual([
      ['Great,', '1'],
      ['What is your name?', '2'],
    ])

    // Start node: global prompt first, rendered; one function per edge, named from the label.
    expect(systemPromptOf(llm, 0)).toBe(
      'You are Ava from Acme. Now: 2026-03-02 09:30 UTC.\n\nAsk whether Dana wants a demo.',
    )
    expect(toolNames(llm, 0)).toEqual(['wants_a_demo', 'not_interested'])
    expect(llm.requests[0].tools[0].description).toBe('The caller wants a demo')
    // Qualify node: its own prompt and only its own function; history carried over with the function result.
    expect(systemPromptOf(llm, 1)).toEndWith('Today is Monday.')
    expect(toolNames(llm, 1)).toEqual(['details_collected'])
    expect(llm.requests[1].messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Hello Dana, this is Acme.' },
      { role: 'user', content: 'Yes, I want a demo' },
      { role: 'assistant', content: 'Great,', toolCalls: [{ id: 'call_1', name: 'wants_a_demo', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'call_1', content: '{"status":"done"}' },
    ])

    llm.say({ calls: ['details_collected'] }, { text: 'Which day suits you?' })
    const second = await conversation.userMessage('Dana Smith, 41, about 1500 and yes')
    expect(second.map(({ text }) => text)).toEqual(['One moment, Dana.', 'Which day suits you?'])
    // The Schedule prompt names extracted values, so it waited for the extraction; no global prompt there.
    expect(systemPromptOf(llm, 3)).toBe('Book a demo for Dana Smith (41), budget 1500.5.')
    expect(toolNames(llm, 3)).toEqual(['booked'])
    // Transition speech is said but is not part of the LLM context.
    expect(llm.requests[3].messages.some((message) => message.content === 'One moment, Dana.')).toBe(false)

    llm.say({ calls: ['booked'] }, { text: 'Thank you Dana Smith, goodbye!' })
    const last = await conversation.userMessage('Tuesday please')
    expect(last.map(({ text, node_id }) => [text, node_id])).toEqual([['Thank you Dana Smith, goodbye!', '4']])
    expect(toolNames(llm, 5)).toEqual([])
    expect(systemPromptOf(llm, 5)).toContain('Thank Dana Smith and say goodbye.')
    expect(conversation.ended).toBe(true)
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'user_qualified', graceful: true }])
    expect(ofType('transition').map(({ function_name }) => function_name)).toEqual([
      'wants_a_demo',
      'details_collected',
      'booked',
    ])

    const record = conversation.record()
    expect(record.state).toBe('completed')
    expect(record.end_reason).toBe('user_qualified')
    expect(record.gathered_context).toMatchObject({
      nodes_visited: ['Start', 'Qualify', 'Schedule', 'Goodbye'],
      customer_name: 'Dana Smith',
      age: 41,
      budget: 1500.5,
      wants_demo: true,
      call_disposition: 'demo_booked',
      mapped_call_disposition: 'demo_booked',
      call_tags: ['user_speech', 'high', 'demo_booked'],
      extracted_variables: {
        customer_name: 'Dana Smith',
        age: 41,
        budget: 1500.5,
        wants_demo: true,
        call_disposition: 'demo_booked',
      },
    })
    expect(record.logs.transcript[1]).toEqual({
      role: 'user',
      text: 'Yes, I want a demo',
      start_ms: 1500,
      end_ms: 2000,
      node_id: '1',
      interrupted: false,
    })
    expect(record.logs.transcript.map(({ role }) => role)).toEqual([
      'agent',
      'user',
      'agent',
      'agent',
      'user',
      'agent',
      'agent',
      'user',
      'agent',
    ])
    expect(transcriptText(record).split('\n').slice(0, 2)).toEqual([
      '[2026-03-02T09:30:00.000Z] assistant: Hello Dana, this is Acme.',
      '[2026-03-02T09:30:01.500Z] user: Yes, I want a demo',
    ])
    expect(transcriptText(record, { includeEndTimestamps: true })).toContain(
      '[2026-03-02T09:30:01.500Z -> 2026-03-02T09:30:02.000Z] user: Yes',
    )

    const feedbackTypes = record.logs.realtime_feedback_events.map(({ type }) => type)
    expect(feedbackTypes.filter((type) => type === 'rtf-node-transition')).toHaveLength(4)
    expect(feedbackTypes).toContain('rtf-function-call-start')
    expect(feedbackTypes).toContain('rtf-user-transcription')
    expect(feedbackTypes).toContain('rtf-ttfb-metric')
    const stamps = record.logs.realtime_feedback_events.map(({ timestamp }) => timestamp)
    expect(stamps).toEqual([...stamps].sort())
    const transition = record.logs.realtime_feedback_events.find(
      ({ type, node_id }) => type === 'rtf-node-transition' && node_id === '2',
    )!
    expect(transition.payload).toEqual({
      node_id: '2',
      node_name: 'Qualify',
      previous_node_id: '1',
      previous_node_name: 'Start',
      allow_interrupt: true,
    })

    // Usage: one event per completion, keyed by the model that answered.
    expect(ofType('usage').filter(({ purpose }) => purpose === 'conversation')).toHaveLength(6)
    expect(ofType('usage').filter(({ purpose }) => purpose === 'extraction')).toHaveLength(2)
    expect(ofType('usage')[0].ref).toEqual({ service: 'ScriptedLLM', model: 'scripted-1' })
  })

  test('an edge label made of symbols or repeated gets a valid, unique function name', async () => {
    const definition = salesAgent()
    definition.edges[0].data.label = '¡¡Demo!!'
    definition.edges[1].data.label = 'demo'
    const { llm, conversation } = setUp(definition)
    await conversation.start()
    llm.say({ text: 'ok' })
    await conversation.userMessage('hi')
    expect(toolNames(llm, 0)).toEqual(['demo', 'demo_2'])
    for (const name of toolNames(llm, 0)) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
  })

  test('greeting_override per contact wins over the node greeting; without a greeting the LLM speaks first', async () => {
    const overridden = setUp(salesAgent(), {
      variables: { first_name: 'Lee', greeting_override: { type: 'text', text: 'Hi {{first_name}}!' } },
    })
    expect((await overridden.conversation.start()).map(({ text }) => text)).toEqual(['Hi Lee!'])

    const invalid = setUp(salesAgent(), { variables: { greeting_override: { type: 'text', text: '' } } })
    expect((await invalid.conversation.start()).map(({ text }) => text)).toEqual(['Hello there, this is .'])

    const recordings = new Map([['welcome_7', { transcript: 'Welcome to Acme.' }]])
    const audio = setUp(salesAgent(), {
      recordings,
      variables: { greeting_override: { type: 'audio', recording_id: 'welcome_7' } },
    })
    expect((await audio.conversation.start()).map(({ text }) => text)).toEqual(['Welcome to Acme.'])
    expect(audio.ofType('agent_text')).toEqual([
      { type: 'agent_text', turn: 0, text: 'Welcome to Acme.', kind: 'greeting', recording_id: 'welcome_7' },
    ])

    // A recording the organization does not have (a CSV row naming none): a warning, and the model speaks first.
    const missing = setUp(salesAgent(), {
      recordings,
      variables: { greeting_override: { type: 'audio', recording_id: 'gone' } },
    })
    missing.llm.say({ text: 'Good day!' })
    expect((await missing.conversation.start()).map(({ text }) => text)).toEqual(['Good day!'])
    expect(missing.conversation.record().logs.warnings).toEqual([
      "Recording 'gone' (greeting) does not exist in this organization: not played",
    ])

    const silent = setUp(salesAgent({ start: { greeting: '' } }))
    silent.llm.say({ text: 'Good morning!' })
    expect((await silent.conversation.start()).map(({ text }) => text)).toEqual(['Good morning!'])
    expect(toolNames(silent.llm, 0)).toEqual(['wants_a_demo', 'not_interested'])
  })

  test('delayed_start waits before the Start node, through the injected sleep', async () => {
    const { conversation, sleeps } = setUp(salesAgent({ start: { delayed_start: true, delayed_start_duration: 1.5 } }))
    await conversation.start()
    expect(sleeps).toEqual([1500])
    const plain = setUp(salesAgent())
    await plain.conversation.start()
    expect(plain.sleeps).toEqual([])
  })

  test("a node without functions offers none, so the previous node's functions are gone", async () => {
    const definition = salesAgent()
    definition.edges = definition.edges.filter(({ source }) => source !== '2')
    const { llm, conversation } = setUp(definition)
    llm.answerJson(QUALIFY_ANSWER)
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Tell me more.' }, { text: 'Noted.' })
    await conversation.userMessage('demo please')
    await conversation.userMessage('I am Dana')
    expect(toolNames(llm, 1)).toEqual([])
    expect(toolNames(llm, 2)).toEqual([])
  })

  test('an unknown function is answered with an error and the model speaks again', async () => {
    const { llm, conversation } = setUp(salesAgent())
    await conversation.start()
    llm.say({ calls: ['book_flight'] }, { text: 'Sorry, I cannot do that.' })
    const turns = await conversation.userMessage('book me a flight')
    expect(turns.map(({ text }) => text)).toEqual(['Sorry, I cannot do that.'])
    expect(llm.requests[1].messages.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_1',
      content: expect.stringContaining('"status":"error"'),
    })
    expect(conversation.record().current_node_id).toBe('1')
  })

  test('a model that keeps calling functions is stopped after six completions, with a warning', async () => {
    const { llm, conversation } = setUp(salesAgent())
    await conversation.start()
    llm.say(...Array.from({ length: 7 }, () => ({ calls: ['book_flight'] })))
    expect(await conversation.userMessage('loop')).toEqual([])
    expect(llm.requests).toHaveLength(6)
    expect(conversation.record().logs.warnings).toEqual([
      'The LLM called functions 6 times in a row; its reply was cut short',
    ])
    expect(conversation.ended).toBe(false)
  })
})

describe('extraction', () => {
  test('the schema is built from the declared variables and the request shows them and the history', async () => {
    const { llm, conversation } = setUp(salesAgent())
    llm.answerJson(QUALIFY_ANSWER)
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' }, { calls: ['details_collected'] }, { text: 'When?' })
    await conversation.userMessage('demo')
    await conversation.userMessage('Dana, 41')
    const request = llm.jsonRequests[0]
    expect(request.schema).toEqual({
      type: 'object',
      properties: {
        customer_name: { type: ['string', 'null'], description: 'Full name' },
        age: { type: ['integer', 'null'] },
        budget: { type: ['number', 'null'] },
        wants_demo: { type: ['boolean', 'null'] },
      },
      required: ['customer_name', 'age', 'budget', 'wants_demo'],
      additionalProperties: false,
    })
    expect(request.messages[0].content).toContain('Read the details the caller gave.')
    expect(request.messages[1].content).toContain('- age (integer)')
    expect(request.messages[1].content).toContain('user: Dana, 41')
    expect(request.messages[1].content).not.toContain('status')
  })

  test('invalid JSON is retried once; values that cannot be read as their type are left out', async () => {
    const { llm, conversation } = setUp(salesAgent())
    llm.answerJson('not json', JSON.stringify({ customer_name: 42, age: 'forty', budget: null, wants_demo: 'maybe' }))
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' }, { calls: ['details_collected'] }, { text: 'When?' })
    await conversation.userMessage('demo')
    await conversation.userMessage('me')
    expect(llm.jsonRequests).toHaveLength(2)
    expect(conversation.record().gathered_context.extracted_variables).toEqual({ customer_name: '42' })
    expect(systemPromptOf(llm, 3)).toBe('Book a demo for 42 (), budget unknown.')
  })

  test('an extracted variable named like a runtime key does not overwrite it', async () => {
    const { llm, conversation } = setUp(
      salesAgent({ qualify: { extraction_variables: [{ name: 'nodes_visited', type: 'string' }] } }),
    )
    llm.answerJson('{"nodes_visited": "everywhere"}')
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' }, { calls: ['details_collected'] }, { text: 'When?' })
    await conversation.userMessage('demo')
    await conversation.userMessage('me')
    const gathered = conversation.record().gathered_context
    expect(gathered.nodes_visited).toEqual(['Start', 'Qualify', 'Schedule'])
    expect(gathered.extracted_variables).toEqual({ nodes_visited: 'everywhere' })
  })

  test('twice invalid JSON is logged as a warning and nothing is stored, never {raw}', async () => {
    const { llm, conversation, ofType } = setUp(salesAgent())
    llm.answerJson('nope', '[1, 2]')
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' }, { calls: ['details_collected'] }, { text: 'When?' })
    await conversation.userMessage('demo')
    await conversation.userMessage('me')
    const record = conversation.record()
    expect(record.gathered_context.extracted_variables).toEqual({})
    expect(JSON.stringify(record.gathered_context)).not.toContain('raw')
    expect(record.logs.warnings).toEqual([expect.stringContaining("Extraction for node 'Qualify' failed")])
    expect(ofType('warning')).toHaveLength(1)
  })

  test('the end extracts the current node; without an extracted disposition the end reason is the disposition', async () => {
    const { llm, conversation } = setUp(
      salesAgent({ qualify: { extraction_variables: [{ name: 'customer_name', type: 'string' }] } }),
    )
    llm.answerJson('{"customer_name": "Kim"}')
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' })
    await conversation.userMessage('demo')
    await conversation.end('user_hangup')
    const gathered = conversation.record().gathered_context
    expect(gathered).toMatchObject({
      customer_name: 'Kim',
      call_disposition: 'user_hangup',
      mapped_call_disposition: 'user_hangup',
      call_tags: ['user_speech', 'user_hangup'],
    })
  })

  test('the end waits for a hanging extraction only for a bounded time, then warns', async () => {
    const { llm, conversation, sleeps } = setUp(salesAgent())
    llm.answerJson(new Promise<string>(() => {}))
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' })
    await conversation.userMessage('demo')
    await conversation.end('user_hangup')
    expect(sleeps).toEqual([30_000])
    expect(conversation.record().logs.warnings).toEqual(['Variable extraction did not finish before the call ended'])
    expect(conversation.record().gathered_context.call_disposition).toBe('user_hangup')
  })

  test('no final extraction after a pipeline error', async () => {
    const { llm, conversation, ofType } = setUp(salesAgent())
    await conversation.start()
    llm.say({ calls: ['wants_a_demo'] }, { error: new Error('server down') })
    await conversation.userMessage('demo')
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'pipeline_error', graceful: false }])
    expect(llm.jsonRequests).toHaveLength(0) // the Qualify node it was in extracts, except after a pipeline error
    const record = conversation.record()
    expect(record.logs.warnings).toContain('The LLM failed: server down')
    expect(record.logs.realtime_feedback_events.map(({ type }) => type)).toContain('rtf-pipeline-error')
  })
})

describe('ending on time and silence', () => {
  test('the time limit (calls/time-limit.ts) ends the call at once, aborting the pending reply; a hang-up after it does not rename the end', async () => {
    const { llm, clock, conversation, ofType } = setUp(salesAgent(), { idleRules: false })
    await conversation.start()
    clock.advance(299_000)
    await conversation.tick()
    expect(conversation.ended).toBe(false)
    llm.say({ text: 'Let me explain', hang: true })
    const replying = conversation.userMessage('tell me everything')
    await Bun.sleep(0)
    clock.advance(1000)
    await Promise.all([conversation.end('call_duration_exceeded'), conversation.end('user_hangup')])
    await replying
    expect(llm.requests[0].aborted).toBe(true)
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'call_duration_exceeded', graceful: false }])
    const record = conversation.record()
    expect(record.call_duration_seconds).toBe(300)
    expect(record.logs.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'Let me explain', interrupted: true })
    expect(record.gathered_context.call_disposition).toBe('call_duration_exceeded')
  })

  test('idle: first the agent asks whether the caller is there, then says goodbye and ends', async () => {
    const { llm, clock, conversation, ofType } = setUp(salesAgent(), {
      configurations: { max_call_duration_seconds: 300, max_user_idle_timeout_seconds: 8 },
    })
    await conversation.start()
    clock.advance(7_999)
    await conversation.tick()
    expect(llm.requests).toHaveLength(0)

    clock.advance(1)
    llm.say({ text: 'Are you still there?' })
    expect((await conversation.tick()).map(({ text }) => text)).toEqual(['Are you still there?'])
    expect(systemPromptOf(llm, 0)).toContain('still there')
    expect(toolNames(llm, 0)).toEqual([])

    // Speech from the caller resets the count.
    clock.advance(5_000)
    conversation.noteUserActivity()
    clock.advance(8_000)
    llm.say({ text: 'Hello?' })
    await conversation.tick()
    expect(conversation.ended).toBe(false)

    clock.advance(8_000)
    llm.say({ text: 'Goodbye!' })
    expect((await conversation.tick()).map(({ text }) => text)).toEqual(['Goodbye!'])
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'user_idle_max_duration_exceeded', graceful: true }])
  })

  test('user_idle_reprompts sets how many times the agent asks before the goodbye (0: the goodbye comes first)', async () => {
    for (const reprompts of [0, 2]) {
      const { llm, clock, conversation, ofType } = setUp(salesAgent(), {
        configurations: {
          max_call_duration_seconds: 300,
          max_user_idle_timeout_seconds: 8,
          user_idle_reprompts: reprompts,
        },
      })
      await conversation.start()
      for (let ask = 0; ask < reprompts; ask++) {
        clock.advance(8_000)
        llm.say({ text: `Still there (${ask + 1})?` })
        await conversation.tick()
        expect(conversation.ended).toBe(false)
      }
      clock.advance(8_000)
      llm.say({ text: 'Goodbye!' })
      await conversation.tick()
      expect(llm.requests.map(({ messages }) => String(messages[0].content).includes('goodbye'))).toEqual([
        ...Array(reprompts).fill(false),
        true,
      ])
      expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'user_idle_max_duration_exceeded', graceful: true }])
    }
  })

  test('the voice driver reports when speech really ended: the turn end moves and the idle timer starts there', async () => {
    const { llm, clock, conversation } = setUp(salesAgent())
    await conversation.start()
    clock.advance(3_000)
    conversation.agentSpeechEnded({ turn: 0 })
    expect(conversation.record().logs.transcript[0].end_ms).toBe(3_000)
    clock.advance(9_999)
    await conversation.tick()
    expect(llm.requests).toHaveLength(0)
    clock.advance(1)
    llm.say({ text: 'Still there?' })
    await conversation.tick()
    expect(llm.requests).toHaveLength(1)
  })

  test('idle rules off (text chat): silence never ends the conversation', async () => {
    const { llm, clock, conversation } = setUp(salesAgent(), { idleRules: false })
    await conversation.start()
    clock.advance(60_000)
    await conversation.tick()
    await conversation.tick()
    expect(llm.requests).toHaveLength(0)
    expect(conversation.ended).toBe(false)
  })

  test('after the end every method is a no-op', async () => {
    const { llm, conversation } = setUp(salesAgent())
    await conversation.start()
    await conversation.end('user_hangup')
    expect(await conversation.userMessage('hello?')).toEqual([])
    await conversation.end('pipeline_error')
    expect(conversation.record().end_reason).toBe('user_hangup')
    expect(llm.requests).toHaveLength(0)
  })
})

describe('interruption', () => {
  test('a barge-in aborts the stream and records what was heard, in the transcript and the LLM context', async () => {
    const { llm, conversation, ofType } = setUp(salesAgent())
    await conversation.start()
    llm.say({ text: ['Our plans start ', 'at ten dollars and go up'], hang: true })
    const replying = conversation.userMessage('How much is it?')
    while (ofType('agent_text').length < 3) await Bun.sleep(0)
    expect(conversation.canInterrupt()).toBe(true)
    expect(await conversation.interrupt({ heardText: 'Our plans start' })).toBe(true)
    await replying
    expect(llm.requests[0].aborted).toBe(true)
    expect(conversation.record().logs.transcript.at(-1)).toMatchObject({
      role: 'agent',
      text: 'Our plans start',
      interrupted: true,
    })
    expect(ofType('agent_turn_done').at(-1)).toMatchObject({ text: 'Our plans start', interrupted: true })

    llm.say({ text: 'Sure.' })
    await conversation.userMessage('Wait, is there a trial?')
    expect(llm.requests[1].messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'Our plans start' },
      { role: 'user', content: 'Wait, is there a trial?' },
    ])
    const bot = conversation
      .record()
      .logs.realtime_feedback_events.filter(({ type }) => type === 'rtf-bot-text')
      .at(-2)!
    expect(bot.payload).toMatchObject({ text: 'Our plans start', interrupted: true })
  })

  test('a barge-in after the text was complete (still playing) rewrites that turn', async () => {
    const { llm, conversation } = setUp(salesAgent())
    await conversation.start()
    llm.say({ text: 'We have three plans: basic, pro and enterprise.' })
    const [said] = await conversation.userMessage('Plans?')
    expect(await conversation.interrupt({ heardText: 'We have three plans' })).toBe(true)
    llm.say({ text: 'Go ahead.' })
    await conversation.userMessage('Just the price')
    expect(llm.requests[1].messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'We have three plans' },
      { role: 'user', content: 'Just the price' },
    ])
    expect(conversation.record().logs.transcript[2]).toMatchObject({ text: 'We have three plans', interrupted: true })
    expect(said.text).toBe('We have three plans: basic, pro and enterprise.') // what start/userMessage return are copies
  })

  test('the greeting, transition speech and nodes with allow_interrupt false cannot be interrupted', async () => {
    const { llm, conversation } = setUp(salesAgent({ qualify: { allow_interrupt: false } }))
    llm.answerJson(QUALIFY_ANSWER)
    await conversation.start()
    expect(conversation.canInterrupt()).toBe(false)
    expect(await conversation.interrupt({ heardText: 'Hel' })).toBe(false)
    expect(conversation.record().logs.transcript[0]).toMatchObject({
      text: 'Hello Dana, this is Acme.',
      interrupted: false,
    })
    llm.say({ calls: ['wants_a_demo'] }, { text: 'Name?' })
    await conversation.userMessage('demo')
    expect(conversation.canInterrupt()).toBe(false)
  })

  test('a new user message while the reply streams (chat) cuts it where it was', async () => {
    const { llm, conversation, ofType } = setUp(salesAgent(), { idleRules: false })
    await conversation.start()
    llm.say({ text: 'Let me think', hang: true }, { text: 'OK, cancelled.' })
    const first = conversation.userMessage('Question one')
    while (ofType('agent_text').length < 2) await Bun.sleep(0)
    const second = await conversation.userMessage('Never mind')
    await first
    expect(second.map(({ text }) => text)).toEqual(['OK, cancelled.'])
    expect(conversation.record().logs.transcript.map(({ text, interrupted }) => [text, interrupted])).toEqual([
      ['Hello Dana, this is Acme.', false],
      ['Question one', false],
      ['Let me think', true],
      ['Never mind', false],
      ['OK, cancelled.', false],
    ])
  })
})

describe('warnings', () => {
  test('tools the run was not given are listed as unavailable and not offered; document_uuids offer retrieve_from_knowledge_base', async () => {
    const { llm, conversation, ofType } = setUp(
      salesAgent({ start: { tool_uuids: ['t-1'], document_uuids: ['d-1', 'd-2'] } }),
    )
    await conversation.start()
    llm.say({ text: 'ok' })
    await conversation.userMessage('hi')
    expect(conversation.record().logs.warnings).toEqual([
      "Node 'Start' (1): tool t-1 is not an active tool of this organization; not offered",
    ])
    expect(ofType('warning')).toHaveLength(1)
    expect(toolNames(llm, 0)).toEqual(['wants_a_demo', 'not_interested', 'retrieve_from_knowledge_base'])
  })
})
