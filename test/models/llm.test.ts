import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { listModels } from '../../src/models/list-models'
import { createLlmClient } from '../../src/models/llm'
import type { ChatMessage, LlmClient, LlmEvent } from '../../src/models/types'
import {
  callTool,
  callTools,
  deadBaseUrl,
  failWith,
  modelServerFailure,
  say,
  startFakeModels,
} from '../support/fake-models'
import { waitFor } from '../support/wait'

const API_KEY = 'sk-test-4f9a2c7e1b'
const models = startFakeModels()
afterAll(() => models.stop())
beforeEach(() => models.reset())

const connection = () => ({ provider: 'openai', baseUrl: models.baseUrl, apiKey: API_KEY })
const hello: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hi' },
]

const textOf = (events: LlmEvent[]) => events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('')
const toolCallsOf = (events: LlmEvent[]) => events.flatMap((event) => (event.type === 'tool_call' ? [event.call] : []))

async function collect(client: LlmClient, messages = hello, signal?: AbortSignal): Promise<LlmEvent[]> {
  const events: LlmEvent[] = []
  for await (const event of client.stream({ messages, signal })) events.push(event)
  return events
}

describe('LLM client: streaming', () => {
  test('text arrives in pieces, then done with the usage of the final chunk', async () => {
    // pieces sent apart (those that arrive together come out together: see below)
    models.chat.queue(
      say('Good morning to you', { usage: { prompt_tokens: 21, completion_tokens: 4 }, chunkDelayMs: 5 }),
    )
    const llm = createLlmClient(connection(), { model: 'llama3.1', temperature: 0.2, maxTokens: 200 })
    const events = await collect(llm)
    const texts = events.filter((event) => event.type === 'text')
    expect(texts.length).toBeGreaterThan(1)
    expect(texts.map((event) => event.text).join('')).toBe('Good morning to you')
    expect(events.at(-1)).toEqual({
      type: 'done',
      usage: { promptTokens: 21, completionTokens: 4, totalTokens: 25 },
      finishReason: 'stop',
    })
    expect(llm.ref).toEqual({ service: 'openai', model: 'llama3.1' })

    const [sent] = models.requestsTo('/chat/completions')
    expect(sent.headers.get('authorization')).toBe(`Bearer ${API_KEY}`)
    expect(sent.body).toEqual({
      model: 'llama3.1',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      temperature: 0.2,
      max_tokens: 200,
      stream: true,
      stream_options: { include_usage: true },
    })
  })

  test('two tool calls streamed in fragments come out whole, in order, after any text', async () => {
    models.chat.queue({
      text: 'Let me check.',
      chunkDelayMs: 5,
      toolCalls: [
        { name: 'check_calendar', arguments: { day: 'monday', slots: ['09:00', '10:30'], note: 'a "quoted" word' } },
        { name: 'qualified', arguments: {} },
      ],
    })
    const llm = createLlmClient(connection(), { model: 'm' })
    const events = await collect(llm)
    // text deltas that share a network read are one event (how many reads depends on timing): all text comes first
    const types = events.map((event) => event.type)
    const texts = types.filter((type) => type === 'text').length
    expect(texts).toBeGreaterThanOrEqual(1)
    expect(types).toEqual([...Array(texts).fill('text'), 'tool_call', 'tool_call', 'done'])
    const calls = toolCallsOf(events)
    expect(calls.map((call) => call.name)).toEqual(['check_calendar', 'qualified'])
    expect(JSON.parse(calls[0].arguments)).toEqual({
      day: 'monday',
      slots: ['09:00', '10:30'],
      note: 'a "quoted" word',
    })
    expect(JSON.parse(calls[1].arguments)).toEqual({})
    expect(new Set(calls.map((call) => call.id)).size).toBe(2)
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'tool_calls' })
  })

  test('tools are offered as OpenAI functions and the history maps to the wire format', async () => {
    models.chat.queue(say('Done.'))
    const llm = createLlmClient({ provider: 'openai', baseUrl: models.baseUrl }, { model: 'm' })
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Book me' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'book', arguments: '{"day":"mon"}' }] },
      { role: 'tool', toolCallId: 'call_1', content: 'booked' },
      { role: 'assistant', content: 'Booked.' },
    ]
    const parameters = { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] }
    for await (const _ of llm.stream({ messages, tools: [{ name: 'book', description: 'Book a slot', parameters }] })) {
      /* drain */
    }
    const [sent] = models.requestsTo('/chat/completions')
    expect(sent.headers.get('authorization')).toBeNull()
    expect(sent.body.tools).toEqual([
      { type: 'function', function: { name: 'book', description: 'Book a slot', parameters } },
    ])
    expect(sent.body.messages).toEqual([
      { role: 'user', content: 'Book me' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'book', arguments: '{"day":"mon"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'booked' },
      { role: 'assistant', content: 'Booked.' },
    ])
    expect('temperature' in sent.body).toBe(false)
  })

  test('tool-call deltas without index, with the name repeated, and arguments as an object still assemble', async () => {
    const delta = (tool_calls: object[], finish_reason: string | null = null) =>
      JSON.stringify({ choices: [{ index: 0, delta: { tool_calls }, finish_reason }] })
    models.chat.queue({
      rawEvents: [
        delta([{ id: 'a1', function: { name: 'lookup', arguments: '{"q":' } }]),
        delta([{ function: { name: 'lookup', arguments: '"x"}' } }]),
        delta([{ id: 'b2', function: { name: 'hang_up', arguments: { reason: 'done' } } }], 'tool_calls'),
        '[DONE]',
      ],
    })
    const events = await collect(createLlmClient(connection(), { model: 'm' }))
    const calls = toolCallsOf(events)
    expect(calls).toEqual([
      { id: 'a1', name: 'lookup', arguments: '{"q":"x"}' },
      { id: 'b2', name: 'hang_up', arguments: '{"reason":"done"}' },
    ])
  })

  test('a stream cut before its end, or carrying something that is not JSON, is an error', async () => {
    const piece = JSON.stringify({ choices: [{ index: 0, delta: { content: 'Half' }, finish_reason: null }] })
    models.chat.queue({ rawEvents: [piece] }, { rawEvents: [piece, '{"choices": ['] })
    const llm = createLlmClient(connection(), { model: 'm' })
    expect((await modelServerFailure(collect(llm))).message).toContain('the stream ended before the answer did')
    expect((await modelServerFailure(collect(llm))).message).toContain('not JSON')
  })

  test('a server that sends no usage counts zero and says so in the log', async () => {
    models.chat.queue(say('Hi', { usage: 'none' }))
    const warnings: object[] = []
    const llm = createLlmClient(connection(), { model: 'quiet' }, { log: { warn: (fields) => warnings.push(fields) } })
    const events = await collect(llm)
    expect(events.at(-1)).toEqual({
      type: 'done',
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      finishReason: 'stop',
    })
    expect(warnings).toEqual([{ service: 'openai', model: 'quiet' }])
  })

  test('stopping early (break) closes the request', async () => {
    models.chat.queue(say('one two three four', { stallAfterChunks: 3 }))
    const llm = createLlmClient(connection(), { model: 'm' })
    for await (const event of llm.stream({ messages: hello })) {
      expect(event.type).toBe('text')
      break
    }
    await waitFor('the server to see the client leave', () => models.requests[0]?.aborted === true)
  })

  test('aborting stops the HTTP request and rejects with the abort reason', async () => {
    models.chat.queue(say('never finished', { stallAfterChunks: 2 }))
    const llm = createLlmClient(connection(), { model: 'm' })
    const controller = new AbortController()
    const texts: string[] = []
    const reason = new Error('caller hung up')
    const outcome = (async () => {
      for await (const event of llm.stream({ messages: hello, signal: controller.signal })) {
        if (event.type === 'text') {
          texts.push(event.text)
          controller.abort(reason)
        }
      }
    })()
    expect(
      await outcome.then(
        () => null,
        (error) => error,
      ),
    ).toBe(reason)
    expect(texts).toEqual(['never '])
    await waitFor('the server to see the client leave', () => models.requests[0]?.aborted === true)
  })

  test('a stream that stalls after its first chunks is cut by the idle timeout, long before the total one', async () => {
    models.chat.queue(say('a b c', { stallAfterChunks: 2 }))
    const llm = createLlmClient(connection(), { model: 'm' }, { timeouts: { idleMs: 150 } })
    const texts: string[] = []
    const failed = (async () => {
      for await (const event of llm.stream({ messages: hello })) if (event.type === 'text') texts.push(event.text)
    })()
    const error = await modelServerFailure(failed)
    expect(error.message).toBe(`chat completion failed: ${models.baseUrl} sent nothing for 150 ms`)
    expect(texts).toEqual(['a '])
    await waitFor('the server to see the client leave', () => models.requests[0]?.aborted === true)
  })

  test('a stream that keeps sending is not cut, however long it takes in all', async () => {
    // 9 chunks 150 ms apart: the answer takes longer than the idle timeout, no pause comes near it (a tenth of it, so
    // a busy machine does not cut it).
    models.chat.queue(say('one two three four five six seven', { chunkDelayMs: 150 }))
    const llm = createLlmClient(connection(), { model: 'm' }, { timeouts: { idleMs: 1_200 } })
    expect(textOf(await collect(llm))).toBe('one two three four five six seven')
  })

  test('a stream that stalls is cut by the total timeout', async () => {
    models.chat.queue(say('a b c', { stallAfterChunks: 2 }))
    const llm = createLlmClient(connection(), { model: 'm' }, { timeouts: { totalMs: 150 } })
    const error = await modelServerFailure(collect(llm))
    expect(error.message).toContain('did not finish within 150 ms')
    await waitFor('the server to see the client leave', () => models.requests[0]?.aborted === true)
  })
})

describe('LLM client: JSON completion', () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
    additionalProperties: false,
  }

  test('asks for the schema as response_format and answers the raw text with usage', async () => {
    models.chat.queue(say('{"name":"Ada"}', { usage: { prompt_tokens: 50, completion_tokens: 6 } }))
    const llm = createLlmClient(connection(), { model: 'm', temperature: 0 })
    const answer = await llm.completeJson({ messages: hello, schema, schemaName: 'extraction' })
    expect(answer).toEqual({
      text: '{"name":"Ada"}',
      usage: { promptTokens: 50, completionTokens: 6, totalTokens: 56 },
    })
    const [sent] = models.requestsTo('/chat/completions')
    expect(sent.body).toEqual({
      model: 'm',
      messages: hello,
      temperature: 0,
      stream: false,
      response_format: { type: 'json_schema', json_schema: { name: 'extraction', schema, strict: true } },
    })
  })

  test('malformed JSON content is handed back as text for the caller to judge', async () => {
    models.chat.queue(say('{"name": "Ada"'))
    const llm = createLlmClient(connection(), { model: 'm' })
    expect((await llm.completeJson({ messages: hello, schema, schemaName: 'x' })).text).toBe('{"name": "Ada"')
  })
})

describe('model list', () => {
  test('the ids a server lists; its errors', async () => {
    models.models.queue({ ids: ['qwen2.5:7b', 'whisper-1'] })
    expect(await listModels(connection())).toEqual(['qwen2.5:7b', 'whisper-1'])
    expect(models.requestsTo('/models')[0].headers.get('authorization')).toBe(`Bearer ${API_KEY}`)
    models.models.queue(failWith(401, { error: { message: 'bad key' } }))
    expect((await modelServerFailure(listModels(connection()))).status).toBe(401)
    models.models.queue(failWith(200, { models: [] }))
    expect((await modelServerFailure(listModels(connection()))).message).toContain('no "data" list')
  })
})

describe('LLM client: errors are ModelServerErrors that never show the key', () => {
  const cases: { name: string; answer: ReturnType<typeof failWith>; status: number; shows: string }[] = [
    {
      name: 'OpenAI 401 echoing the key',
      answer: failWith(401, {
        error: { message: `Incorrect API key provided: ${API_KEY}.`, type: 'invalid_request_error' },
      }),
      status: 401,
      shows: 'Incorrect API key provided: [redacted]',
    },
    {
      name: 'FastAPI 422 detail list',
      answer: failWith(422, { detail: [{ loc: ['body', 'model'], msg: 'field required' }] }),
      status: 422,
      shows: 'field required',
    },
    { name: 'plain text 502', answer: failWith(502, 'upstream went away'), status: 502, shows: 'upstream went away' },
    {
      name: 'string error 404',
      answer: failWith(404, { error: `model "m" not found, try pulling it first (key ${API_KEY})` }),
      status: 404,
      shows: 'model "m" not found',
    },
  ]
  for (const { name, answer, status, shows } of cases) {
    test(name, async () => {
      models.chat.queue(answer, answer)
      const llm = createLlmClient(connection(), { model: 'm' })
      for (const error of [
        await modelServerFailure(collect(llm)),
        await modelServerFailure(llm.completeJson({ messages: hello, schema: {}, schemaName: 'x' })),
      ]) {
        expect(error.status).toBe(status)
        expect(error.message).toContain(String(status))
        expect(error.message).toContain(shows)
        expect(error.message).not.toContain(API_KEY)
      }
    })
  }

  test('an error streamed as an event fails the stream after the text before it', async () => {
    models.chat.queue(say('Partial answer', { streamedError: { message: `upstream overloaded (key ${API_KEY})` } }))
    const llm = createLlmClient(connection(), { model: 'm' })
    const texts: string[] = []
    const error = await modelServerFailure(
      (async () => {
        for await (const event of llm.stream({ messages: hello })) if (event.type === 'text') texts.push(event.text)
      })(),
    )
    expect(texts.join('')).toBe('Partial answer')
    expect(error.message).toContain('upstream overloaded')
    expect(error.message).not.toContain(API_KEY)
  })

  test('deltas that arrive in one read come out as one text event; an error among them after that text', async () => {
    const delta = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`
    const bodies = [
      `${delta('One, ')}${delta('two, ')}${delta('three.')}data: [DONE]\n\n`,
      `${delta('Half ')}${delta('an answer')}data: {"error":{"message":"overloaded"}}\n\n`,
    ]
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response(bodies.shift(), { headers: { 'content-type': 'text/event-stream' } }),
    })
    try {
      const llm = createLlmClient({ provider: 'openai', baseUrl: `http://127.0.0.1:${server.port}/v1` }, { model: 'm' })
      const whole = await collect(llm)
      expect(whole.filter((event) => event.type === 'text')).toEqual([{ type: 'text', text: 'One, two, three.' }])
      expect(whole.at(-1)?.type).toBe('done')

      const texts: string[] = []
      const error = await modelServerFailure(
        (async () => {
          for await (const event of llm.stream({ messages: hello })) if (event.type === 'text') texts.push(event.text)
        })(),
      )
      expect(texts).toEqual(['Half an answer'])
      expect(error.message).toContain('overloaded')
    } finally {
      server.stop(true)
    }
  })

  test('connection refused', async () => {
    const llm = createLlmClient({ provider: 'openai', baseUrl: deadBaseUrl(), apiKey: API_KEY }, { model: 'm' })
    const error = await modelServerFailure(collect(llm))
    expect(error.status).toBeNull()
    expect(error.message).toStartWith('chat completion failed:')
    expect(error.message).toContain('127.0.0.1')
    expect(error.message).not.toContain(API_KEY)
  })

  test('nothing scripted is a visible failure, not a silent answer', async () => {
    const llm = createLlmClient(connection(), { model: 'm' })
    expect((await modelServerFailure(collect(llm))).message).toContain('nothing scripted')
  })
})

describe('the fake server scripted from tests', () => {
  test('a handler answers when the queue is empty', async () => {
    models.chat.handler = (request) => say(`You said: ${request.body.messages.at(-1).content}`)
    const llm = createLlmClient(connection(), { model: 'm' })
    expect(textOf(await collect(llm))).toBe('You said: Hi')
  })

  test('two tool calls via callTool helpers keep their own arguments', async () => {
    models.chat.queue(
      callTools({ name: 'a', arguments: { n: 1 } }, { name: 'b', arguments: { n: 2 } }),
      callTool('c', { n: 3 }),
    )
    const llm = createLlmClient(connection(), { model: 'm' })
    const first = toolCallsOf(await collect(llm))
    const second = toolCallsOf(await collect(llm))
    expect(first.map((call) => [call.name, JSON.parse(call.arguments)])).toEqual([
      ['a', { n: 1 }],
      ['b', { n: 2 }],
    ])
    expect(second.map((call) => [call.name, JSON.parse(call.arguments)])).toEqual([['c', { n: 3 }]])
  })
})
