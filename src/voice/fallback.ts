import { ModelServerError, type ModelFailureKind } from '../models/types'
import { createBuiltinVoice } from './builtin-voice'
import { pcm16ToUlaw } from './g711'
import type { MarkOutcome, MediaTransport } from './media-transport'
import { resample } from './resample'

/**
 * What a call does when its models fail: the failure named (which service, what kind of failure) for the run's logs,
 * and a line said in the built-in voice (Flite, inside the binary, so it works when every model server is down) rather
 * than silence. The lines themselves are the agent's (agents/fallback-lines.ts).
 */

export type FailingService = 'llm' | 'stt' | 'tts'

/** A model that failed mid-call; `message` is safe to show (model errors never carry a key). */
export type ModelFailure = { service: FailingService; kind: ModelFailureKind; message: string }

const LINE_RATE = 8000

/** Names the failure of `service`; an error that is not a model server's (a bug) is `bad_answer` with its message. */
export function modelFailureOf(service: FailingService, error: unknown): ModelFailure {
  if (error instanceof ModelServerError) return { service, kind: error.kind, message: error.message }
  return { service, kind: 'bad_answer', message: error instanceof Error ? error.message : String(error) }
}

/**
 * Says `text` in the built-in voice over `transport` and resolves once it was heard (or will never be: the call ended
 * or its audio was flushed). Never rejects: a built-in voice that fails leaves the call as it was, told to `onError`.
 */
export async function speakBuiltinLine(transport: MediaTransport, text: string, onError: (error: unknown) => void): Promise<MarkOutcome> {
  try {
    for await (const chunk of createBuiltinVoice().synthesize(text)) {
      if (transport.closed) return 'closed'
      const pcm8k = chunk.sampleRate === LINE_RATE ? chunk.pcm : resample(chunk.pcm, chunk.sampleRate, LINE_RATE)
      transport.send(pcm16ToUlaw(pcm8k))
    }
  } catch (error) {
    onError(error)
  }
  return transport.closed ? 'closed' : transport.mark()
}
