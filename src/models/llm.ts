import {
  parseJsonAnswer,
  readAnswer,
  requestModel,
  type ModelConnection,
  type ModelLog,
  type ModelTimeouts,
} from './http'
import { readSseData } from './sse'
import {
  ModelServerError,
  type ChatMessage,
  type LlmClient,
  type LlmEvent,
  type LlmSettings,
  type TokenUsage,
  type ToolCall,
  type ToolSpec,
} from './types'

export type LlmClientOptions = {
  /** Defaults: 15 s to the response headers, 15 s without a piece of the answer, 120 s for the whole answer. */
  timeouts?: Partial<ModelTimeouts>
  /** Told when a server sends no token usage (counted as zero). */
  log?: ModelLog
}

const DEFAULT_TIMEOUTS: ModelTimeouts = { firstByteMs: 15_000, idleMs: 15_000, totalMs: 120_000 }

const ZERO_USAGE: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 }

function wireMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.toolCallId, content: message.content }
  if (message.role === 'assistant' && message.toolCalls?.length) {
    return {
      role: 'assistant',
      content: message.content,
      tool_calls: message.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    }
  }
  return { role: message.role, content: message.content }
}

function chatBody(
  settings: LlmSettings,
  messages: ChatMessage[],
  tools: ToolSpec[] | undefined,
): Record<string, unknown> {
  const body: Record<string, unknown> = { model: settings.model, messages: messages.map(wireMessage) }
  if (tools?.length) {
    body.tools = tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }))
  }
  if (settings.temperature !== undefined) body.temperature = settings.temperature
  // `max_tokens` rather than OpenAI's newer `max_completion_tokens`: every OpenAI-compatible server knows it.
  if (settings.maxTokens !== undefined) body.max_tokens = settings.maxTokens
  return body
}

type WireUsage = { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number }

function tokenUsage(usage: WireUsage): TokenUsage {
  const promptTokens = usage.prompt_tokens ?? 0
  const completionTokens = usage.completion_tokens ?? 0
  return { promptTokens, completionTokens, totalTokens: usage.total_tokens ?? promptTokens + completionTokens }
}

type ToolCallDelta = { index?: number; id?: string; function?: { name?: string; arguments?: unknown } }

/** Tool calls arrive in pieces keyed by `index`: id and name first, then fragments of the arguments. */
function toolCallAssembler() {
  const calls = new Map<number, ToolCall>()
  let lastIndex = -1
  return {
    add(delta: ToolCallDelta) {
      // Servers that leave out `index` send one whole call per delta, or continue the last one when no id is given.
      const index = typeof delta.index === 'number' ? delta.index : delta.id || lastIndex < 0 ? calls.size : lastIndex
      lastIndex = index
      const call = calls.get(index) ?? { id: '', name: '', arguments: '' }
      calls.set(index, call)
      if (delta.id) call.id = delta.id
      const name = delta.function?.name
      // Most servers send the name once; some repeat it whole in every delta, a few send it in pieces.
      if (name) call.name = call.name === '' || call.name === name ? name : call.name + name
      const fragment = delta.function?.arguments
      if (typeof fragment === 'string') call.arguments += fragment
      else if (fragment !== undefined && fragment !== null) call.arguments += JSON.stringify(fragment)
    },
    finished(): ToolCall[] {
      return [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, call]) => ({
          id: call.id || `call_${index}`,
          name: call.name,
          arguments: call.arguments || '{}',
        }))
    },
  }
}

/** A chat model behind any OpenAI-compatible `/chat/completions`. */
export function createLlmClient(
  connection: ModelConnection,
  settings: LlmSettings,
  options: LlmClientOptions = {},
): LlmClient {
  const ref = { service: connection.provider, model: settings.model }
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  const usageOrZero = (usage: WireUsage | null | undefined): TokenUsage => {
    if (usage) return tokenUsage(usage)
    options.log?.warn({ ...ref }, 'model server sent no token usage; counted as zero')
    return ZERO_USAGE
  }

  async function* stream({ messages, tools, signal }: Parameters<LlmClient['stream']>[0]): AsyncGenerator<LlmEvent> {
    const what = 'chat completion'
    const exchange = await requestModel(connection, {
      what,
      path: '/chat/completions',
      timeouts,
      signal,
      body: { ...chatBody(settings, messages, tools), stream: true, stream_options: { include_usage: true } },
    })
    const toolCalls = toolCallAssembler()
    let usage: WireUsage | null = null
    let finishReason: string | null = null
    let sawDone = false
    try {
      for await (const events of readSseData(exchange.chunks(), { what })) {
        // the text deltas of one read go on as one text event: a hop through each layer above per read, not per delta
        let text = ''
        let streamedError: string | null = null
        for (const data of events) {
          if (data === '[DONE]') {
            sawDone = true
            break
          }
          const chunk = parseJsonAnswer(data, what)
          if (chunk?.error) {
            streamedError = chunk.error.message ?? JSON.stringify(chunk.error)
            break
          }
          if (chunk?.usage) usage = chunk.usage
          const choice = chunk?.choices?.[0]
          if (!choice) continue
          if (typeof choice.delta?.content === 'string') text += choice.delta.content
          for (const delta of choice.delta?.tool_calls ?? []) toolCalls.add(delta)
          if (choice.finish_reason) finishReason = choice.finish_reason
        }
        if (text !== '') yield { type: 'text', text }
        if (streamedError !== null)
          throw new ModelServerError(`${what} failed: the server streamed an error: ${streamedError}`)
        if (sawDone) break
      }
    } catch (error) {
      throw exchange.failure(error)
    } finally {
      exchange.end()
    }
    if (!sawDone && finishReason === null)
      throw exchange.failure(new ModelServerError(`${what} failed: the stream ended before the answer did`))
    for (const call of toolCalls.finished()) yield { type: 'tool_call', call }
    yield { type: 'done', usage: usageOrZero(usage), finishReason }
  }

  async function completeJson({ messages, schema, schemaName, signal }: Parameters<LlmClient['completeJson']>[0]) {
    const what = 'JSON completion'
    const exchange = await requestModel(connection, {
      what,
      path: '/chat/completions',
      timeouts,
      signal,
      body: {
        ...chatBody(settings, messages, undefined),
        stream: false,
        response_format: { type: 'json_schema', json_schema: { name: schemaName, schema, strict: true } },
      },
    })
    const answer = await readAnswer(exchange, (text) => parseJsonAnswer(text, what))
    const content = answer?.choices?.[0]?.message?.content
    return { text: typeof content === 'string' ? content : '', usage: usageOrZero(answer?.usage) }
  }

  return { ref, stream, completeJson }
}
