import { modelFailureOf, type ModelFailure } from '../models/failures'
import type { TtsClient } from '../models/types'
import { createBuiltinVoice } from './builtin-voice'
import { pcm16ToUlaw } from './g711'
import type { MarkOutcome, MediaTransport } from './media-transport'
import { rateConverter } from '../lib/resample'

/**
 * What a call's audio does when its models fail (models/failures.ts names the failure): a line said in the built-in voice
 * (Flite, inside the binary, so it works when every model server is down) rather than silence, and text to speech that
 * goes on in the built-in voice. The lines themselves are the agent's (definition/fallback-lines.ts).
 */

const LINE_RATE = 8000

/**
 * Says `text` in the built-in voice over `transport` and resolves once it was heard (or will never be: the call ended
 * or its audio was flushed). Never rejects: a built-in voice that fails leaves the call as it was, told to `onError`.
 */
export async function speakBuiltinLine(
  transport: MediaTransport,
  text: string,
  onError: (error: unknown) => void,
): Promise<MarkOutcome> {
  const toLine = rateConverter(LINE_RATE)
  try {
    for await (const chunk of createBuiltinVoice().synthesize(text)) {
      if (transport.closed) return 'closed'
      transport.send(pcm16ToUlaw(toLine.convert(chunk.pcm, chunk.sampleRate)))
    }
  } catch (error) {
    onError(error)
  }
  return transport.closed ? 'closed' : transport.mark()
}

/**
 * Text to speech that falls back to the built-in voice for the rest of the call once the configured one failed: the
 * sentence it failed on is said again in the built-in voice unless part of it was already sent. `onFailure` hears the
 * first failure (the call goes on).
 */
export function ttsWithBuiltinFallback(tts: TtsClient, onFailure: (failure: ModelFailure) => void): TtsClient {
  let speaking = tts
  const builtin = createBuiltinVoice()
  return {
    get ref() {
      return speaking.ref
    },
    async *synthesize(text, options) {
      let sent = false
      try {
        for await (const chunk of speaking.synthesize(text, options)) {
          sent = true
          yield chunk
        }
        return
      } catch (error) {
        if (speaking === builtin || options?.signal?.aborted) throw error
        onFailure(modelFailureOf('tts', error))
        speaking = builtin
        if (sent) return
      }
      yield* builtin.synthesize(text, options)
    },
  }
}
