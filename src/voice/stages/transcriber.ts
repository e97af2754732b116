/**
 * Utterances → caller turns, through speech recognition. Turns reach the stages after in the order they were taken
 * (an utterance after its transcription, a DTMF turn after the utterances before it), each once the one before was
 * taken up by the conversation.
 */
import type { SttClient } from '../../models/types'
import { frameStage, type EarlyTranscript, type Frame, type Stage, type StageContext } from '../stage'
import { VAD_RATE } from './caller-input'

export type TranscriberOptions = { onSttAudio?: (seconds: number) => void }

/** Speech recognition of `pcm16k`, with when its text came; a failure is warned about and heard as nothing. */
export function transcribeAudio(
  stt: SttClient,
  pcm16k: Int16Array,
  context: StageContext,
  options: TranscriberOptions & { signal?: AbortSignal },
): EarlyTranscript {
  options.onSttAudio?.(pcm16k.length / VAD_RATE)
  return stt.transcribe(pcm16k, { signal: options.signal, warn: (message) => context.warn(message) }).then(
    (text) => ({ text: text.trim(), readyAtMs: context.now() }),
    (error: Error) => {
      if (!options.signal?.aborted)
        context.warn(`Speech recognition failed (${stt.ref.service}/${stt.ref.model}): ${error.message}`)
      return { text: '', readyAtMs: context.now() }
    },
  )
}

export function transcribe(stt: SttClient, options: TranscriberOptions = {}): Stage {
  let context: StageContext
  let deliveries: Promise<void> = Promise.resolve()

  function inOrder(deliver: () => Promise<void>): void {
    deliveries = deliveries.then(deliver)
  }

  function transcribeUtterance(utterance: Extract<Frame, { kind: 'utterance' }>): void {
    const transcript = utterance.transcript ?? transcribeAudio(stt, utterance.pcm, context, options)
    inOrder(async () => {
      const { text, readyAtMs } = await transcript
      if (!text || context.ending()) return
      const metric = {
        speechEndedAtMs: utterance.speechEndedAtMs,
        endOfTurnAtMs: utterance.endedAtMs,
        sttMs: Math.max(0, readyAtMs - utterance.endedAtMs),
        speculationSavedMs: utterance.speculationSavedMs ?? 0,
      }
      const timing = {
        startMs: context.clockTime(utterance.startedAtMs),
        endMs: context.clockTime(metric.speechEndedAtMs),
      }
      await context.push({ kind: 'caller_turn', turn: { text, timing, metric, source: 'speech' } })
    })
  }

  return {
    name: 'transcriber',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind === 'utterance') return transcribeUtterance(frame)
      if (frame.kind === 'caller_turn') return inOrder(async () => context.push(frame))
      return context.push(frame)
    },
  }
}

/**
 * Caller speech over an interruptible agent turn with fewer than `minWords` words ("mm-hm") is no turn at all (the
 * reference's `min_words` turn start); the turn detector's start then does not cut the agent either (conversation.ts).
 */
export const dropBackchannels = (minWords: number): Stage =>
  frameStage('backchannels', (frame, context) => {
    const backchannel =
      frame.kind === 'caller_turn' &&
      frame.turn.source === 'speech' &&
      context.agentInterruptible() &&
      frame.turn.text.split(/\s+/).filter(Boolean).length < minWords
    return backchannel ? undefined : context.push(frame)
  })
