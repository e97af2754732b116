import { ModelServerError, type LlmClient, type ModelFailureKind, type SttClient } from './types'

/**
 * A model failing mid-call, named for the run's logs (which service, what kind of failure), and the LLM and speech to
 * text clients that tell the channel of a failure before their caller sees it, so the channel can speak to the caller
 * while the conversation still waits (calls/voice.ts).
 */

export type FailingService = 'llm' | 'stt' | 'tts'

/** Each service as messages name it. */
export const SERVICE_NAMES: Record<FailingService, string> = {
  llm: 'LLM',
  stt: 'speech to text',
  tts: 'text to speech',
}

/** A model that failed mid-call; `message` is safe to show (model errors never carry a key). */
/** `kind` is `not_told` for a server on this machine (its message hides the reason too). */
export type ModelFailure = { service: FailingService; kind: ModelFailureKind | 'not_told'; message: string }

/** Names the failure of `service`; an error that is not a model server's (a bug) is `bad_answer` with its message. */
export function modelFailureOf(service: FailingService, error: unknown): ModelFailure {
  if (error instanceof ModelServerError)
    return { service, kind: error.reasonHidden ? 'not_told' : error.kind, message: error.message }
  return { service, kind: 'bad_answer', message: error instanceof Error ? error.message : String(error) }
}

/** Hears a model's failure; the returned promise holds the failed request until the caller has been told. */
export type OnModelFailure = (failure: ModelFailure) => Promise<void>

const abortedBy = (signal: AbortSignal | undefined) => signal?.aborted === true

/**
 * The conversation LLM (behind its `llm_fallback` chain, which has had its turn when this hears of a failure):
 * a failed answer is told to `onFailure` and held until it returns, then rethrown. Aborts are not failures.
 */
export function guardLlm(llm: LlmClient, onFailure: OnModelFailure): LlmClient {
  return {
    get ref() {
      return llm.ref
    },
    async *stream(request) {
      try {
        yield* llm.stream(request)
      } catch (error) {
        if (!abortedBy(request.signal)) await onFailure(modelFailureOf('llm', error))
        throw error
      }
    },
    completeJson: (request) => llm.completeJson(request),
  }
}

/** Speech to text: a failed transcription is told to `onFailure` and held until it returns, then rethrown. */
export function guardStt(stt: SttClient, onFailure: OnModelFailure): SttClient {
  return {
    get ref() {
      return stt.ref
    },
    async transcribe(pcm16k, options) {
      try {
        return await stt.transcribe(pcm16k, options)
      } catch (error) {
        if (!abortedBy(options?.signal)) await onFailure(modelFailureOf('stt', error))
        throw error
      }
    },
    // A stream's failures are not the call's: its segments are uploaded instead, through `transcribe` above.
    ...(stt.openStream ? { openStream: (streamOptions) => stt.openStream!(streamOptions) } : {}),
  }
}
