/**
 * A reply prepared before the user message is given (speculative turn-taking in voice calls): the LLM request the
 * message would make is sent at once and its events are kept. When `userMessage` then makes exactly the same request
 * (same messages, same functions), it takes the kept events and the rest of the stream instead of asking again; any
 * other request, a new preparation, a reply being stopped or the end drops it (its request is aborted). A dropped
 * preparation leaves nothing behind: no transcript turn, no history, no usage event (usage is told when the engine
 * reads the completion's `done`).
 */
import type { ChatMessage, ChatRequest, LlmEvent } from '../models/types'
import { isActive, type EngineState, type PreparedReply } from './engine-state'
import { nodeFunctions, type NodeFunction } from './graph'
import { systemPrompt } from './nodes'

/** The request of one completion under the current node, with `history` as the context. */
export function completionRequest(
  s: EngineState,
  functions: NodeFunction[],
  instruction?: string,
  history: ChatMessage[] = s.history,
): Omit<ChatRequest, 'signal'> {
  const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt(s, instruction) }, ...history]
  return { messages, ...(functions.length ? { tools: functions.map(({ spec }) => spec) } : {}) }
}

const keyOf = (request: Omit<ChatRequest, 'signal'>) =>
  JSON.stringify({ messages: request.messages, tools: request.tools ?? [] })

/**
 * Sends the first completion request of the reply `text` would get, unless the agent is replying or the conversation
 * cannot answer now. True when a request for it is on its way (a new one, or the same one already prepared).
 */
export function prepareReply(s: EngineState, text: string): boolean {
  const content = text.trim()
  if (!isActive(s) || s.pending || content === '') return false
  const request = completionRequest(s, nodeFunctions(s.graph, s.node, s.tools), undefined, [
    ...s.history,
    { role: 'user', content },
  ])
  const key = keyOf(request)
  if (s.prepared?.key === key) return true
  dropPreparedReply(s)
  const prepared: PreparedReply = {
    key,
    controller: new AbortController(),
    events: [],
    failure: null,
    finished: false,
    wake: () => {},
  }
  s.prepared = prepared
  void (async () => {
    try {
      for await (const event of s.llm.stream({ ...request, signal: prepared.controller.signal })) {
        prepared.events.push(event)
        prepared.wake()
      }
    } catch (error) {
      prepared.failure = { error }
    } finally {
      prepared.finished = true
      prepared.wake()
    }
  })()
  return true
}

export function dropPreparedReply(s: EngineState): void {
  s.prepared?.controller.abort()
  s.prepared = null
}

/**
 * The prepared stream when `request` is the one prepared (the caller's `signal` then aborts it); null otherwise. Either
 * way the preparation is used up.
 */
export function takePreparedReply(
  s: EngineState,
  request: Omit<ChatRequest, 'signal'>,
  signal: AbortSignal,
): AsyncIterable<LlmEvent> | null {
  const prepared = s.prepared
  s.prepared = null
  if (!prepared) return null
  if (prepared.key !== keyOf(request) || signal.aborted) {
    prepared.controller.abort()
    return null
  }
  signal.addEventListener('abort', () => prepared.controller.abort(), { once: true })
  return replay(prepared)
}

async function* replay(prepared: PreparedReply): AsyncGenerator<LlmEvent> {
  let index = 0
  while (true) {
    if (index < prepared.events.length) {
      yield prepared.events[index++]
      continue
    }
    if (prepared.failure) throw prepared.failure.error
    if (prepared.finished) return
    await new Promise<void>((resolve) => {
      prepared.wake = resolve
    })
  }
}
