/**
 * Speculative end of turn. When the caller pauses (the turn detector's short `pauseMs` window) the utterance so far is
 * transcribed at once (uploaded, or with live transcription the text of what the stream was sent, which the pause frame
 * carries). If its words read as a finished turn (turn-text.ts), the turn ends there: the turn detector's
 * utterance is closed and the transcript goes on as the turn, without waiting for the full stop window. Otherwise the
 * reply is prepared (the conversation sends the LLM request the turn would make, `prepareReply`) while the stop window
 * runs out; the utterance that ends it reuses the transcript and the conversation takes the prepared request.
 *
 * If the caller goes on speaking first, the speculation is dropped: the transcription and the prepared LLM request are
 * aborted; nothing was said, recorded or counted as a turn. Counts (for `logs.voice`): pauses transcribed, prepared LLM
 * requests, those dropped, turns ended early.
 */
import type { SttClient } from '../../models/types'
import type { EarlyTranscript, Frame, Stage, StageContext } from '../stage'
import { readsAsFinishedTurn } from '../turn-text'
import { transcribeAudio, type TranscriberOptions } from './transcriber'

export type SpeculationCounts = {
  /** Pauses whose audio was transcribed ahead of the end of the turn. */
  transcribed: number
  /** LLM requests sent for a reply before the turn was over. */
  prepared: number
  /** Of those, dropped because the caller went on (the request aborted). */
  dropped: number
  /** Turns ended at the pause because their words read as finished. */
  endedEarly: number
}

type Pause = Extract<Frame, { kind: 'speech_paused' }>

/** The speculation on one pause, until the caller resumes or the turn ends. */
type Speculation = {
  pause: Pause
  controller: AbortController
  transcript: EarlyTranscript
  preparedAtMs: number | null
}

export type EndOfTurn = Stage & { readonly counts: SpeculationCounts }

export function speculateEndOfTurn(
  stt: SttClient,
  options: TranscriberOptions & { stopMs: number; endUtterance(): void },
): EndOfTurn {
  let context: StageContext
  let current: Speculation | null = null
  const counts: SpeculationCounts = { transcribed: 0, prepared: 0, dropped: 0, endedEarly: 0 }

  function onPause(pause: Pause): void {
    drop()
    const controller = new AbortController()
    const transcript =
      pause.transcript ?? transcribeAudio(stt, pause.pcm, context, { ...options, signal: controller.signal })
    const speculation: Speculation = { pause, controller, transcript, preparedAtMs: null }
    current = speculation
    counts.transcribed += 1
    void transcript.then(({ text, readyAtMs }) => {
      if (current !== speculation || context.ending() || !text) return
      if (readsAsFinishedTurn(text)) return endEarly(speculation, readyAtMs)
      if (!context.conversation.prepareReply(text)) return
      speculation.preparedAtMs = context.now()
      counts.prepared += 1
    })
  }

  function endEarly(speculation: Speculation, readyAtMs: number): void {
    current = null
    counts.endedEarly += 1
    options.endUtterance()
    const { pause } = speculation
    void context.push({
      kind: 'utterance',
      pcm: pause.pcm,
      startedAtMs: pause.startedAtMs,
      endedAtMs: pause.endedAtMs,
      speechEndedAtMs: pause.speechEndedAtMs,
      transcript: speculation.transcript,
      speculationSavedMs: Math.max(0, pause.speechEndedAtMs + options.stopMs - readyAtMs),
    })
  }

  /** The caller went on: whatever was started for the pause is aborted. */
  function drop(): void {
    const speculation = current
    current = null
    if (!speculation) return
    speculation.controller.abort()
    if (speculation.preparedAtMs === null) return
    context.conversation.dropPreparedReply()
    counts.dropped += 1
  }

  /** The stop window ended the utterance: the pause's transcript (and prepared reply) are its own when no speech came since. */
  function onUtterance(utterance: Extract<Frame, { kind: 'utterance' }>) {
    const speculation = current
    current = null
    if (!speculation) return context.push(utterance)
    const headStartMs = speculation.preparedAtMs === null ? 0 : utterance.endedAtMs - speculation.preparedAtMs
    return context.push({
      ...utterance,
      transcript: speculation.transcript,
      speculationSavedMs: Math.max(0, headStartMs),
    })
  }

  return {
    name: 'end of turn',
    counts,
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind === 'speech_paused') return onPause(frame)
      if (frame.kind === 'speech_resumed') return drop()
      if (frame.kind === 'utterance') return onUtterance(frame)
      return context.push(frame)
    },
    stop() {
      drop()
    },
  }
}
