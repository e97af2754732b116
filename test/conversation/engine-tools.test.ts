import { describe, expect, test } from 'bun:test'
import type { AgentDefinition as WorkflowDefinition } from '../../src/definition/definition'
import { createConversation, type ConversationEvent, type ConversationOptions } from '../../src/conversation/engine'
import type { ConversationTools, TransferOutcome, TransferRequest } from '../../src/conversation/tool-calls'
import { manualClock } from '../../src/lib/clock'
import type { HttpToolOutcome } from '../../src/tools/http-tool'
import type {
  AgentTool,
  EndCallConfig,
  HttpApiConfig,
  ToolDefinition,
  TransferCallConfig,
} from '../../src/tools/schemas'
import { ScriptedLlm } from '../support/scripted-llm'
import { httpApiConfig } from '../support/tools'

type Json = Record<string, any>

const START_MS = Date.parse('2026-03-02T09:30:00.000Z')

const tool = (
  uuid: string,
  name: string,
  definition: ToolDefinition,
  description: string | null = null,
): AgentTool => ({ tool_uuid: uuid, name, description, definition })

const httpConfig = (overrides: Partial<HttpApiConfig> = {}): HttpApiConfig =>
  httpApiConfig({
    url: 'https://shop.example.com/orders/{{order_number}}',
    parameters: [{ name: 'order_number', type: 'string', description: 'The order number', required: true }],
    ...overrides,
  })
const endCallConfig = (overrides: Partial<EndCallConfig> = {}): EndCallConfig => ({
  messageType: 'none',
  customMessage: null,
  audioRecordingId: null,
  endCallReason: false,
  endCallReasonDescription: null,
  ...overrides,
})
const transferConfig = (overrides: Partial<TransferCallConfig> = {}): TransferCallConfig => ({
  messageType: 'none',
  customMessage: null,
  audioRecordingId: null,
  destination_source: 'static',
  destination: '+14155550100',
  destinations: [],
  timeout: 45,
  ...overrides,
})

const ORDERS = tool(
  't-http',
  'Look up order',
  { schema_version: 1, type: 'http_api', config: httpConfig() },
  'Find an order',
)
const CALCULATOR = tool('t-calc', 'Calculator', { schema_version: 1, type: 'calculator', config: {} })
const HANG_UP = tool('t-end', 'End call', { schema_version: 1, type: 'end_call', config: endCallConfig() })
const TRANSFER = tool('t-transfer', 'Transfer to sales', {
  schema_version: 1,
  type: 'transfer_call',
  config: transferConfig(),
})

/** Start (with the given tools) → End. */
function agent(toolUuids: string[], startData: Json = {}): WorkflowDefinition {
  return {
    nodes: [
      {
        id: '1',
        type: 'startCall',
        data: {
          name: 'Start',
          greeting: 'Hello {{first_name}}.',
          prompt: 'Help the caller.',
          tool_uuids: toolUuids,
          ...startData,
        },
      },
      { id: '2', type: 'endCall', data: { name: 'End', prompt: 'Say goodbye.' } },
    ],
    edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'End call', condition: 'The caller is done' } }],
  }
}

type HttpCall = { tool: string; args: Record<string, unknown>; variables: Record<string, unknown> }

function setUp(
  definition: WorkflowDefinition,
  available: AgentTool[],
  extra: Partial<ConversationOptions> & { httpAnswer?: () => Promise<HttpToolOutcome> } = {},
) {
  const llm = new ScriptedLlm()
  const clock = manualClock(START_MS)
  const events: ConversationEvent[] = []
  const httpCalls: HttpCall[] = []
  const tools: ConversationTools = {
    byUuid: new Map(available.map((item) => [item.tool_uuid, item])),
    async callHttp(called, _config, args, variables) {
      httpCalls.push({ tool: called.tool_uuid, args, variables })
      return extra.httpAnswer
        ? extra.httpAnswer()
        : {
            result: { status: 'success', status_code: 200, data: { order: args.order_number, state: 'shipped' } },
            request: { method: 'GET', host: 'shop.example.com', status_code: 200, duration_ms: 12 },
          }
    },
  }
  const conversation = createConversation({
    definition,
    configurations: { max_call_duration_seconds: 300 },
    variables: { first_name: 'Dana' },
    llm,
    clock,
    onEvent: (event) => events.push(event),
    sleep: async () => {
      await Bun.sleep(0)
    },
    tools,
    ...extra,
  })
  const ofType = <T extends ConversationEvent['type']>(type: T) =>
    events.filter((event): event is Extract<ConversationEvent, { type: T }> => event.type === type)
  return { llm, clock, events, httpCalls, conversation, ofType }
}

const lastMessage = (llm: ScriptedLlm, request: number) => llm.requests[request].messages.at(-1)

describe('tools offered to the model', () => {
  test('each node tool is a function beside the edge functions, with its JSON schema; names never collide', async () => {
    const clash = tool('t-clash', 'End call!', { schema_version: 1, type: 'calculator', config: {} })
    const { llm, conversation } = setUp(agent(['t-http', 't-calc', 't-end', 't-clash']), [
      ORDERS,
      CALCULATOR,
      HANG_UP,
      clash,
    ])
    await conversation.start()
    llm.say({ text: 'Sure.' })
    await conversation.userMessage('hi')
    expect(llm.requests[0].tools.map(({ name }) => name)).toEqual([
      'end_call',
      'look_up_order',
      'calculator',
      'end_call_2',
      'end_call_3',
    ])
    expect(llm.requests[0].tools[1]).toEqual({
      name: 'look_up_order',
      description: 'Find an order',
      parameters: {
        type: 'object',
        properties: { order_number: { type: 'string', description: 'The order number' } },
        required: ['order_number'],
      },
    })
    expect(llm.requests[0].tools[2].parameters).toMatchObject({ required: ['expression'] })
    expect(conversation.record().logs.warnings).toEqual([])
  })

  test('transfer tools are offered only where the channel can transfer; elsewhere a warning says so', async () => {
    const chat = setUp(agent(['t-transfer', 't-gone']), [TRANSFER])
    await chat.conversation.start()
    chat.llm.say({ text: 'ok' })
    await chat.conversation.userMessage('hi')
    expect(chat.llm.requests[0].tools.map(({ name }) => name)).toEqual(['end_call'])
    expect(chat.conversation.record().logs.warnings).toEqual([
      "Node 'Start' (1): tool 'Transfer to sales' transfers calls, which this channel cannot do; not offered",
      "Node 'Start' (1): tool t-gone is not an active tool of this organization; not offered",
    ])
    const voice = setUp(agent(['t-transfer']), [TRANSFER], { transferCall: async () => ({ status: 'transferred' }) })
    await voice.conversation.start()
    voice.llm.say({ text: 'ok' })
    await voice.conversation.userMessage('hi')
    expect(voice.llm.requests[0].tools.map(({ name }) => name)).toEqual(['end_call', 'transfer_to_sales'])
  })
})

describe('calculator and http_api', () => {
  test('the calculator answers the model, which then speaks; the call is logged on the run', async () => {
    const { llm, conversation } = setUp(agent(['t-calc']), [CALCULATOR])
    await conversation.start()
    llm.say(
      { calls: [{ name: 'calculator', arguments: { expression: '(1200 + 80) * 0.15' } }] },
      { text: 'That is 192 dollars.' },
    )
    const turns = await conversation.userMessage('What is 15% of 1280?')
    expect(turns.map(({ text }) => text)).toEqual(['That is 192 dollars.'])
    expect(lastMessage(llm, 1)).toEqual({
      role: 'tool',
      toolCallId: 'call_1',
      content: JSON.stringify({ status: 'success', expression: '(1200 + 80) * 0.15', result: 192 }),
    })
    llm.say({ calls: [{ name: 'calculator', arguments: { expression: '1/0' } }] }, { text: 'Cannot divide by zero.' })
    await conversation.userMessage('And 1/0?')
    expect(JSON.parse(lastMessage(llm, 3)!.content as string)).toEqual({ status: 'error', error: 'Division by zero' })
    expect(conversation.record().logs.tool_calls).toEqual([
      {
        timestamp: '2026-03-02T09:30:00.000Z',
        node_id: '1',
        function_name: 'calculator',
        tool_uuid: 't-calc',
        type: 'calculator',
        status: 'success',
        duration_ms: 0,
      },
      {
        timestamp: '2026-03-02T09:30:00.000Z',
        node_id: '1',
        function_name: 'calculator',
        tool_uuid: 't-calc',
        type: 'calculator',
        status: 'error',
        duration_ms: 0,
      },
    ])
  })

  test('http_api: the message is said first, then the request; the model reads the result; variables reach the templates', async () => {
    const withMessage = tool('t-http', 'Look up order', {
      schema_version: 1,
      type: 'http_api',
      config: httpConfig({ customMessageType: 'text', customMessage: 'One moment, {{first_name}}.' }),
    })
    const { llm, conversation, httpCalls, ofType } = setUp(agent(['t-http']), [withMessage])
    await conversation.start()
    llm.say(
      { calls: [{ name: 'look_up_order', arguments: { order_number: 'A-17' } }] },
      { text: 'Your order A-17 has shipped.' },
    )
    const turns = await conversation.userMessage('Where is order A-17?')
    expect(turns.map(({ text }) => text)).toEqual(['One moment, Dana.', 'Your order A-17 has shipped.'])
    expect(ofType('agent_text').map(({ kind }) => kind)).toEqual(['greeting', 'tool_message', 'reply'])
    expect(httpCalls).toEqual([
      {
        tool: 't-http',
        args: { order_number: 'A-17' },
        variables: expect.objectContaining({ first_name: 'Dana', gathered_context: expect.any(Object) }),
      },
    ])
    expect(JSON.parse(lastMessage(llm, 1)!.content as string)).toEqual({
      status: 'success',
      status_code: 200,
      data: { order: 'A-17', state: 'shipped' },
    })
    // The tool message is spoken, not put into the model's context.
    expect(llm.requests[1].messages.some(({ content }) => content === 'One moment, Dana.')).toBe(false)
    expect(conversation.record().logs.tool_calls?.[0]).toMatchObject({
      type: 'http_api',
      status: 'success',
      http: { method: 'GET', host: 'shop.example.com', status_code: 200, duration_ms: 12 },
    })
  })

  test('required arguments are enforced and malformed arguments refused, without a request; the model gets the error', async () => {
    const { llm, conversation, httpCalls } = setUp(agent(['t-http']), [ORDERS])
    await conversation.start()
    llm.say(
      { calls: [{ name: 'look_up_order', arguments: {} }] },
      { calls: [{ name: 'look_up_order', arguments: '{"order_number": ' }] },
      { calls: [{ name: 'look_up_order', arguments: { order_number: 17 } }] },
      { text: 'What is the order number?' },
    )
    await conversation.userMessage('Where is my order?')
    expect(httpCalls).toEqual([])
    expect(
      llm.requests.slice(1).map((request) => JSON.parse(request.messages.at(-1)!.content as string).error),
    ).toEqual([
      'Missing required argument: order_number',
      'The arguments are not valid JSON',
      'Argument order_number must be a string',
    ])
    expect(conversation.record().logs.tool_calls?.map(({ status }) => status)).toEqual(['error', 'error', 'error'])
  })

  test('the caller is muted while a tool runs: a message waits for the answer to the tool instead of cancelling it', async () => {
    let answer!: (outcome: HttpToolOutcome) => void
    const { llm, conversation, httpCalls } = setUp(agent(['t-http']), [ORDERS], {
      httpAnswer: () =>
        new Promise((resolve) => {
          answer = resolve
        }),
    })
    await conversation.start()
    llm.say(
      { calls: [{ name: 'look_up_order', arguments: { order_number: '9' } }] },
      { text: 'Found it.' },
      { text: 'Yes, still here.' },
    )
    const first = conversation.userMessage('Order 9 please')
    while (httpCalls.length === 0) await Bun.sleep(1)
    expect(conversation.canInterrupt()).toBe(false)
    const second = conversation.userMessage('Hello? Are you there?')
    await Bun.sleep(5)
    expect(llm.requests).toHaveLength(1)
    answer({ result: { status: 'success', status_code: 200, data: { state: 'packed' } } })
    expect((await first).map(({ text }) => text)).toEqual(['Found it.'])
    expect((await second).map(({ text }) => text)).toEqual(['Yes, still here.'])
    expect(llm.requests[2].messages.slice(-4).map(({ role }) => role)).toEqual([
      'assistant',
      'tool',
      'assistant',
      'user',
    ])
  })
})

describe('end_call', () => {
  test('without a goodbye or reason: the call ends after that reply, disposition end_call_tool, and the model is not asked again', async () => {
    const { llm, conversation, ofType } = setUp(agent(['t-end']), [HANG_UP])
    await conversation.start()
    llm.say({ calls: ['end_call_2'] })
    await conversation.userMessage('Bye')
    expect(llm.requests).toHaveLength(1)
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'end_call_tool', graceful: true }])
    expect(conversation.record().gathered_context).toMatchObject({
      call_disposition: 'end_call_tool',
      call_tags: ['user_speech', 'end_call_tool'],
    })
  })

  test('with a goodbye and a required reason: the goodbye is said, the call ends once it has been heard, the reason is the disposition', async () => {
    const polite = tool('t-end', 'Hang up', {
      schema_version: 1,
      type: 'end_call',
      config: endCallConfig({ messageType: 'custom', customMessage: 'Goodbye {{first_name}}!', endCallReason: true }),
    })
    const { llm, conversation, ofType } = setUp(agent(['t-end']), [polite])
    await conversation.start()
    llm.say(
      { calls: [{ name: 'hang_up', arguments: {} }] },
      { calls: [{ name: 'hang_up', arguments: { reason: 'issue_resolved' } }] },
    )
    const turns = await conversation.userMessage('That is all, thanks')
    expect(JSON.parse(lastMessage(llm, 1)!.content as string).error).toBe('Missing required argument: reason')
    expect(llm.requests[0].tools[1].parameters).toMatchObject({
      properties: { reason: { type: 'string' } },
      required: ['reason'],
    })
    expect(turns.map(({ text }) => text)).toEqual(['Goodbye Dana!'])
    expect(conversation.ended).toBe(false)
    // The caller is muted now: nothing more reaches the model.
    expect(await conversation.userMessage('wait!')).toEqual([])
    const goodbyeTurn = conversation.record().logs.transcript.length - 1
    conversation.agentSpeechEnded({ turn: 0 })
    expect(conversation.ended).toBe(false)
    conversation.agentSpeechEnded({ turn: goodbyeTurn })
    await Bun.sleep(1)
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'end_call_tool', graceful: true }])
    expect(llm.requests).toHaveLength(2)
    expect(conversation.record().gathered_context).toMatchObject({
      call_disposition: 'issue_resolved',
      mapped_call_disposition: 'issue_resolved',
      call_tags: ['user_speech', 'issue_resolved', 'end_call_tool'],
    })
    expect(conversation.record().end_reason).toBe('end_call_tool')
  })

  test('a recorded goodbye ends the call once played; a channel without speech reports ends at once; an unreported goodbye ends after a minute', async () => {
    const recorded = tool('t-end', 'Hang up', {
      schema_version: 1,
      type: 'end_call',
      config: endCallConfig({ messageType: 'audio', audioRecordingId: 'rec-9' }),
    })
    const voice = setUp(agent(['t-end']), [recorded], { recordings: new Map([['rec-9', { transcript: 'Goodbye!' }]]) })
    await voice.conversation.start()
    voice.llm.say({ calls: ['hang_up'] })
    await voice.conversation.userMessage('bye')
    expect(voice.ofType('agent_text').filter((event) => event.kind === 'tool_message')).toEqual([
      { type: 'agent_text', turn: 2, text: 'Goodbye!', kind: 'tool_message', recording_id: 'rec-9' },
    ])
    expect(voice.conversation.ended).toBe(false)
    voice.conversation.agentSpeechEnded()
    await Bun.sleep(1)
    expect(voice.conversation.ended).toBe(true)

    const spoken = tool('t-end', 'Hang up', {
      schema_version: 1,
      type: 'end_call',
      config: endCallConfig({ messageType: 'custom', customMessage: 'Bye.' }),
    })
    const chat = setUp(agent(['t-end']), [spoken], { awaitSpeechEnd: false })
    await chat.conversation.start()
    chat.llm.say({ calls: ['hang_up'] })
    expect((await chat.conversation.userMessage('bye')).map(({ text }) => text)).toEqual(['Bye.'])
    expect(chat.conversation.ended).toBe(true)

    const silentDriver = setUp(agent(['t-end']), [spoken])
    await silentDriver.conversation.start()
    silentDriver.llm.say({ text: 'Thanks for calling.', calls: ['hang_up'] })
    await silentDriver.conversation.userMessage('bye')
    silentDriver.clock.advance(59_000)
    await silentDriver.conversation.tick()
    expect(silentDriver.conversation.ended).toBe(false)
    silentDriver.clock.advance(1_000)
    await silentDriver.conversation.tick()
    expect(silentDriver.conversation.ended).toBe(true)
  })
})

describe('transfer_call', () => {
  test('a static destination: the channel transfers with the configured timeout; the run records call_transferred and the destination', async () => {
    const requests: TransferRequest[] = []
    const withMessage = tool('t-transfer', 'Transfer to sales', {
      schema_version: 1,
      type: 'transfer_call',
      config: transferConfig({ messageType: 'custom', customMessage: 'Connecting you now.' }),
    })
    const { llm, conversation, ofType } = setUp(agent(['t-transfer']), [withMessage], {
      transferCall: async (request) => {
        requests.push(request)
        return { status: 'transferred' }
      },
    })
    await conversation.start()
    llm.say({ calls: ['transfer_to_sales'] })
    const turns = await conversation.userMessage('Can I talk to sales?')
    expect(turns.map(({ text }) => text)).toEqual(['Connecting you now.'])
    expect(requests).toEqual([{ destination: '+14155550100', timeoutSeconds: 45 }])
    expect(ofType('ended')).toEqual([{ type: 'ended', reason: 'call_transferred', graceful: false }])
    expect(conversation.record()).toMatchObject({
      end_reason: 'call_transferred',
      gathered_context: { transfer_destination: '+14155550100', call_disposition: 'call_transferred' },
    })
    expect(llm.requests).toHaveLength(1)
    expect(conversation.record().logs.tool_calls?.[0]).toMatchObject({ type: 'transfer_call', status: 'success' })
  })

  test('failure (busy) is returned to the model as transfer_failed and the conversation goes on', async () => {
    const outcome: TransferOutcome = { status: 'failed', reason: 'busy', message: 'The line is busy' }
    const { llm, conversation } = setUp(agent(['t-transfer']), [TRANSFER], { transferCall: async () => outcome })
    await conversation.start()
    llm.say({ calls: ['transfer_to_sales'] }, { text: 'Sales is busy; can I help instead?' })
    const turns = await conversation.userMessage('Sales please')
    expect(turns.map(({ text }) => text)).toEqual(['Sales is busy; can I help instead?'])
    expect(JSON.parse(lastMessage(llm, 1)!.content as string)).toEqual({
      status: 'transfer_failed',
      reason: 'busy',
      message: 'The line is busy',
    })
    expect(conversation.ended).toBe(false)
    expect(conversation.record().logs.tool_calls?.[0].status).toBe('error')
  })

  test('the model chooses the destination by name from the configured list; a template destination renders from run variables', async () => {
    const requests: TransferRequest[] = []
    const choice = tool('t-route', 'Route call', {
      schema_version: 1,
      type: 'transfer_call',
      config: transferConfig({
        destination_source: 'llm_choice',
        destination: null,
        destinations: [
          { name: 'billing', destination: '2001', description: 'Invoices' },
          { name: 'support', destination: 'PJSIP/support', description: null },
        ],
      }),
    })
    const templated = tool('t-home', 'Back to agent', {
      schema_version: 1,
      type: 'transfer_call',
      config: transferConfig({ destination: '{{agent_line}}' }),
    })
    const { llm, conversation } = setUp(agent(['t-route', 't-home']), [choice, templated], {
      variables: { first_name: 'Dana', agent_line: '1234' },
      transferCall: async (request) => {
        requests.push(request)
        return { status: 'failed', reason: 'no_answer', message: 'No answer' }
      },
    })
    await conversation.start()
    llm.say(
      { calls: [{ name: 'route_call', arguments: { destination: 'sales' } }] },
      {
        calls: [
          { name: 'route_call', arguments: { destination: 'billing' } },
          { name: 'back_to_agent', arguments: {} },
        ],
      },
      { text: 'Nobody answers.' },
    )
    await conversation.userMessage('Billing please')
    expect(llm.requests[0].tools[1].parameters).toEqual({
      type: 'object',
      properties: {
        destination: {
          type: 'string',
          enum: ['billing', 'support'],
          description: 'Where to transfer the call. billing: Invoices; support',
        },
      },
      required: ['destination'],
    })
    expect(JSON.parse(lastMessage(llm, 1)!.content as string).error).toBe(
      'Argument destination must be one of billing, support',
    )
    expect(requests).toEqual([
      { destination: '2001', timeoutSeconds: 45 },
      { destination: '1234', timeoutSeconds: 45 },
    ])
  })
})
