import type {
  ChatRequest,
  JsonRequest,
  LlmClient,
  LlmEvent,
  ModelRef,
  TokenUsage,
  ToolSpec,
} from '../../src/models/types'

/**
 * An in-memory LlmClient that answers from a script, in order, and remembers every request (messages and the
 * functions offered) so tests can assert what the model was shown.
 */

export type ScriptedReply = {
  /** Streamed as separate text pieces. */
  text?: string | string[]
  /** Function calls by name, or with arguments (an object, or raw text as a model might send); ids are generated. */
  calls?: (string | { name: string; arguments: Record<string, unknown> | string })[]
  /** Streams `text`, then waits until the request is aborted (an answer the caller barges into). */
  hang?: boolean
  /** Throws this instead of answering. */
  error?: Error
}

/** An answer, a failure, or a promise of an answer (one that never settles stands for a server that hangs). */
export type ScriptedJson = string | Error | Promise<string>

export type SeenRequest = { messages: ChatRequest['messages']; tools: ToolSpec[]; aborted: boolean }

const USAGE: TokenUsage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 }

export class ScriptedLlm implements LlmClient {
  readonly ref: ModelRef
  readonly requests: SeenRequest[] = []
  readonly jsonRequests: JsonRequest[] = []
  private callCount = 0

  constructor(
    private replies: ScriptedReply[] = [],
    private jsonReplies: ScriptedJson[] = [],
    ref: ModelRef = { service: 'ScriptedLLM', model: 'scripted-1' },
  ) {
    this.ref = ref
  }

  /** Adds answers to the end of the script. */
  say(...replies: ScriptedReply[]) {
    this.replies.push(...replies)
  }

  answerJson(...answers: ScriptedJson[]) {
    this.jsonReplies.push(...answers)
  }

  get lastRequest(): SeenRequest {
    return this.requests[this.requests.length - 1]
  }

  async *stream(request: ChatRequest): AsyncIterable<LlmEvent> {
    const seen: SeenRequest = {
      messages: structuredClone(request.messages),
      tools: request.tools ?? [],
      aborted: false,
    }
    this.requests.push(seen)
    const reply = this.replies.shift()
    if (!reply) throw new Error(`ScriptedLlm: no scripted reply for request ${this.requests.length}`)
    if (reply.error) throw reply.error
    const pieces = typeof reply.text === 'string' ? [reply.text] : (reply.text ?? [])
    for (const text of pieces) {
      await Promise.resolve()
      yield { type: 'text', text }
    }
    if (reply.hang) {
      await new Promise<void>((resolve) => {
        if (request.signal?.aborted) return resolve()
        request.signal?.addEventListener('abort', () => resolve(), { once: true })
      })
      seen.aborted = true
      throw new DOMException('The operation was aborted', 'AbortError')
    }
    for (const call of reply.calls ?? []) {
      this.callCount += 1
      const { name, arguments: args } = typeof call === 'string' ? { name: call, arguments: {} } : call
      yield {
        type: 'tool_call',
        call: { id: `call_${this.callCount}`, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
      }
    }
    yield { type: 'done', usage: USAGE, finishReason: reply.calls?.length ? 'tool_calls' : 'stop' }
  }

  async completeJson(request: JsonRequest): Promise<{ text: string; usage: TokenUsage }> {
    this.jsonRequests.push(structuredClone({ ...request, signal: undefined }))
    const answer = this.jsonReplies.shift()
    if (answer === undefined)
      throw new Error(`ScriptedLlm: no scripted JSON answer for request ${this.jsonRequests.length}`)
    if (answer instanceof Error) throw answer
    return { text: await answer, usage: USAGE }
  }
}
