import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { withLlmFallback, type LlmSwitch } from '../../src/models/fallback'
import { createLlmClient } from '../../src/models/llm'
import type { ChatMessage, LlmClient, LlmEvent } from '../../src/models/types'
import { callTool, failWith, say, startFakeModels } from '../support/fake-models'
import { waitFor } from '../support/wait'

/** Two servers, so each request's destination is unmistakable. */
const primaryServer = startFakeModels()
const backupServer = startFakeModels()
afterAll(() => {
  primaryServer.stop()
  backupServer.stop()
})
beforeEach(() => {
  primaryServer.reset()
  backupServer.reset()
})

const primary = () =>
  createLlmClient({ provider: 'openai', baseUrl: primaryServer.baseUrl, apiKey: 'primary-key-1' }, { model: 'big' })
const backup = () =>
  createLlmClient({ provider: 'groq', baseUrl: backupServer.baseUrl, apiKey: 'backup-key-2' }, { model: 'small' })
const messages: ChatMessage[] = [{ role: 'user', content: 'Hello?' }]
const schema = { type: 'object', properties: { ok: { type: 'boolean' } } }

async function answer(client: LlmClient, signal?: AbortSignal) {
  const events: LlmEvent[] = []
  for await (const event of client.stream({ messages, signal })) events.push(event)
  return { events, text: events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('') }
}

describe('llm_fallback', () => {
  test('a slow first token: the primary is aborted, the target answers, and the switch is told', async () => {
    primaryServer.chat.queue(say('too late', { firstTokenDelayMs: 10_000 }))
    backupServer.chat.queue(say('Backup here.', { usage: { prompt_tokens: 9, completion_tokens: 3 } }))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 100, target: backup() }], (change) =>
      switches.push(change),
    )
    const { events, text } = await answer(llm)
    expect(text).toBe('Backup here.')
    expect(events.at(-1)).toEqual({
      type: 'done',
      usage: { promptTokens: 9, completionTokens: 3, totalTokens: 12 },
      finishReason: 'stop',
    })
    expect(switches).toEqual([
      {
        from: { service: 'openai', model: 'big' },
        to: { service: 'groq', model: 'small' },
        reason: 'no_output',
        afterMs: 100,
      },
    ])
    expect(llm.ref).toEqual({ service: 'openai', model: 'big' })
    await waitFor('the primary request to be dropped', () => primaryServer.requests[0]?.aborted === true)
    expect(backupServer.requests[0].headers.get('authorization')).toBe('Bearer backup-key-2')
    expect(backupServer.requests[0].body.messages).toEqual(primaryServer.requests[0].body.messages)
  })

  test('a primary that answers in time keeps the answer, tool calls included, and nothing is switched', async () => {
    primaryServer.chat.queue(callTool('transfer', { to: 'sales' }))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 5_000, target: backup() }], (change) =>
      switches.push(change),
    )
    const { events } = await answer(llm)
    expect(events[0]).toMatchObject({ type: 'tool_call', call: { name: 'transfer' } })
    expect(switches).toEqual([])
    expect(backupServer.requests).toEqual([])
  })

  test('output that started stays with its model even when the whole answer takes longer than after_ms', async () => {
    // The first word comes 400 ms in (well inside after_ms), the last after 1200 ms.
    primaryServer.chat.queue(say('one two three', { chunkDelayMs: 400 }))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 1_000, target: backup() }], (change) =>
      switches.push(change),
    )
    expect((await answer(llm)).text).toBe('one two three')
    expect(switches).toEqual([])
  })

  test('an error before the first token switches at once, with the reason', async () => {
    primaryServer.chat.queue(failWith(503, { error: { message: 'model is loading' } }))
    backupServer.chat.queue(say('Still here.'))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 10_000, target: backup() }], (change) =>
      switches.push(change),
    )
    expect((await answer(llm)).text).toBe('Still here.')
    expect(switches).toHaveLength(1)
    expect(switches[0]).toMatchObject({ reason: 'error', to: { model: 'small' } })
    expect(switches[0].error).toContain('model is loading')
    expect(switches[0].error).not.toContain('primary-key-1')
  })

  test('a stream that stalls before its first token fails on the idle timeout and switches at once', async () => {
    // The role chunk comes (no text in it), then nothing: the primary's idle timeout ends it long before after_ms.
    primaryServer.chat.queue(say('never said', { stallAfterChunks: 1 }))
    backupServer.chat.queue(say('Backup here.'))
    const stalling = createLlmClient(
      { provider: 'openai', baseUrl: primaryServer.baseUrl },
      { model: 'big' },
      { timeouts: { idleMs: 100 } },
    )
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(stalling, [{ noOutputAfterMs: 60_000, target: backup() }], (change) =>
      switches.push(change),
    )
    expect((await answer(llm)).text).toBe('Backup here.')
    expect(switches).toMatchObject([{ reason: 'error', from: { model: 'big' }, to: { model: 'small' } }])
    expect(switches[0].error).toContain('sent nothing for 100 ms')
  })

  test('rules chain: each target is watched by the next rule; the last target gets no deadline', async () => {
    const third = startFakeModels()
    try {
      primaryServer.chat.queue(say('late', { firstTokenDelayMs: 10_000 }))
      backupServer.chat.queue(say('late too', { firstTokenDelayMs: 10_000 }))
      third.chat.queue(say('Third time lucky.', { firstTokenDelayMs: 150 }))
      const last = createLlmClient({ provider: 'openrouter', baseUrl: third.baseUrl }, { model: 'tiny' })
      const switches: LlmSwitch[] = []
      const llm = withLlmFallback(
        primary(),
        [
          { noOutputAfterMs: 50, target: backup() },
          { noOutputAfterMs: 50, target: last },
        ],
        (change) => switches.push(change),
      )
      expect((await answer(llm)).text).toBe('Third time lucky.')
      expect(switches.map((change) => `${change.from.model}→${change.to.model}`)).toEqual(['big→small', 'small→tiny'])
    } finally {
      third.stop()
    }
  })

  test("the caller's abort ends the answer and is not a switch", async () => {
    primaryServer.chat.queue(say('late', { firstTokenDelayMs: 10_000 }))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 5_000, target: backup() }], (change) =>
      switches.push(change),
    )
    const controller = new AbortController()
    const pending = answer(llm, controller.signal)
    await waitFor('the primary request', () => primaryServer.requests.length === 1)
    controller.abort()
    expect(
      await pending.then(
        () => null,
        (error) => error.name,
      ),
    ).toBe('AbortError')
    expect(switches).toEqual([])
    expect(backupServer.requests).toEqual([])
    await waitFor('the primary request to be dropped', () => primaryServer.requests[0].aborted)
  })

  test('JSON completions fall back the same way', async () => {
    primaryServer.chat.queue(say('{"ok":false}', { firstTokenDelayMs: 10_000 }))
    backupServer.chat.queue(say('{"ok":true}'))
    const switches: LlmSwitch[] = []
    const llm = withLlmFallback(primary(), [{ noOutputAfterMs: 50, target: backup() }], (change) =>
      switches.push(change),
    )
    expect((await llm.completeJson({ messages, schema, schemaName: 'check' })).text).toBe('{"ok":true}')
    expect(switches).toMatchObject([{ reason: 'no_output' }])
    expect(backupServer.requests[0].body.response_format.json_schema.name).toBe('check')
    await waitFor('the primary request to be dropped', () => primaryServer.requests[0]?.aborted === true)
  })
})
