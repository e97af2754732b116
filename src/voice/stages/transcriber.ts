/**
 * Utterances → caller turns, through speech recognition. Turns reach the stages after in the order they were taken
 * (an utterance after its transcription, a DTMF turn after the utterances before it), each once the one before was
 * taken up by the conversation.
 */
import type { SttClient } from '../../models/types'
import { frameStage, type Stage, type StageContext } from '../stage'
import { VAD_RATE } from './caller-input'

export function transcribe(stt: SttClient, options: { stopMs: number; onSttAudio?: (seconds: number) => void }): Stage {
  let context: StageContext
  let deliveries: Promise<void> = Promise.resolve()

  function inOrder(deliver: () => Promise<void>): void {
    deliveries = deliveries.then(deliver)
  }

  function transcribeUtterance(pcm16k: Int16Array, startedAtMs: number, endedAtMs: number): void {
    const requestedAtMs = context.now()
    options.onSttAudio?.(pcm16k.length / VAD_RATE)
    const text = stt.transcribe(pcm16k).catch((error: Error) => {
      context.warn(`Speech recognition failed (${stt.ref.service}/${stt.ref.model}): ${error.message}`)
      return ''
    })
    inOrder(async () => {
      const heard = (await text).trim()
      if (!heard || context.ending()) return
      const metric = {
        speechEndedAtMs: endedAtMs - options.stopMs,
        endOfTurnAtMs: endedAtMs,
        sttMs: context.now() - requestedAtMs,
      }
      const timing = { startMs: context.clockTime(startedAtMs), endMs: context.clockTime(metric.speechEndedAtMs) }
      await context.push({ kind: 'caller_turn', turn: { text: heard, timing, metric, source: 'speech' } })
    })
  }

  return {
    name: 'transcriber',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind === 'utterance') return transcribeUtterance(frame.pcm, frame.startedAtMs, frame.endedAtMs)
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
