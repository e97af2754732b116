/**
 * The caller's side of the line, as small stages: µ-law decoding, the caller's track of the recording, resampling for
 * the VAD, and the turn detector. The pure parts (g711, resample, turns) do the work; these stages only carry frames.
 */
import { ulawToPcm16 } from '../g711'
import type { CallRecorder } from '../recorder'
import { createResampler } from '../../lib/resample'
import { createTurnDetector, type TurnEvent, type TurnParameters } from '../turns'
import type { Vad } from '../vad'
import type { NoiseSuppressor } from '../noise'
import { frameStage, type Stage, type StageContext } from '../stage'

export const LINE_RATE = 8000
export const VAD_RATE = 16000
/** The turn timer's shortest wait: it looks again this soon when the audio up to its moment is not read yet. */
const RECHECK_MS = 20

/** Line µ-law → 8 kHz PCM. */
export const decodeLine = (): Stage =>
  frameStage('decode', (frame, { push }) =>
    frame.kind === 'line_audio'
      ? push({ kind: 'caller_audio', pcm: ulawToPcm16(frame.ulaw), sampleRate: LINE_RATE, atMs: frame.atMs })
      : push(frame),
  )

/** The caller's track (left) of the call's recording. */
export const recordCaller = (recorder: CallRecorder): Stage =>
  frameStage('record caller', (frame, { push }) => {
    if (frame.kind === 'caller_audio') recorder.caller(frame.pcm, frame.atMs)
    return push(frame)
  })

/** Caller audio at `fromRate` → `toRate` (8 → 16 kHz for the VAD). */
export function resampleCaller(fromRate: number, toRate: number): Stage {
  const resampler = createResampler(fromRate, toRate)
  return frameStage('resample', (frame, { push }) =>
    frame.kind === 'caller_audio' && frame.sampleRate === fromRate
      ? push({ ...frame, pcm: resampler.process(frame.pcm), sampleRate: toRate })
      : push(frame),
  )
}

/**
 * Noise suppression (RNNoise, noise.ts) before the turn detector and speech recognition: line audio at `fromRate` →
 * denoised audio at `toRate` (the resampling to the VAD's rate is done here, so the resample stage lets it pass). The
 * recording and the answering-machine detector (a beep is a steady tone RNNoise may soften) hear the line as it is.
 */
export function suppressNoise(suppressor: NoiseSuppressor, fromRate: number, toRate: number): Stage {
  let context: StageContext
  return {
    name: 'noise suppression',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind !== 'caller_audio' || frame.sampleRate !== fromRate) return context.push(frame)
      const pcm = suppressor.process(frame.pcm)
      if (pcm.length > 0) return context.push({ ...frame, pcm, sampleRate: toRate })
    },
    stop() {
      suppressor.free()
    },
  }
}

/**
 * Caller audio (16 kHz) → `speech_started`, `speech_paused` / `speech_resumed` and `utterance` frames (and with
 * `liveAudio` the utterance's audio as it comes, `speech_audio`, for live transcription). Frames stop
 * while the line is silent: a timer tells the pause and ends the utterance when their windows after its last speech
 * have passed (later speech moves that moment: the timer then looks again). `endUtterance` ends it early (a turn
 * whose end was decided from its words, end-of-turn.ts).
 */
export function detectTurns(
  vad: Vad,
  parameters: TurnParameters,
  options: { liveAudio?: boolean } = {},
): Stage & { readonly speaking: boolean; endUtterance(): void } {
  let context: StageContext
  const turns = createTurnDetector(vad, parameters, options)
  let speaking = false
  let stopTimer: ReturnType<typeof setTimeout> | undefined

  function clearStopTimer(): void {
    clearTimeout(stopTimer)
    stopTimer = undefined
  }

  function armStopTimer(): void {
    const nextAtMs = turns.nextEventAtMs
    if (stopTimer !== undefined || nextAtMs === null) return
    // Silence is judged on the audio's clock and only as far as the audio has been read (a stalled loop is not the
    // caller's silence): while that moment is not reached, the timer looks again.
    stopTimer = setTimeout(
      () => {
        stopTimer = undefined
        if (context.ending()) return
        pushTurnEvents(turns.tick(context.heardUpToMs()))
        if (speaking) armStopTimer()
      },
      Math.max(RECHECK_MS, nextAtMs - context.heardUpToMs()),
    )
  }

  function pushTurnEvents(events: TurnEvent[]): void {
    for (const event of events) {
      if (event.type === 'speech_started') {
        speaking = true
        void context.push({ kind: 'speech_started', atMs: event.atMs })
      } else if (event.type === 'audio') void context.push({ kind: 'speech_audio', pcm: event.pcm })
      else if (event.type === 'resumed') void context.push({ kind: 'speech_resumed', atMs: event.atMs })
      else if (event.type === 'pause') void context.push({ ...event, kind: 'speech_paused' })
      else {
        speaking = false
        clearStopTimer()
        void context.push({ ...event, kind: 'utterance' })
      }
    }
  }

  return {
    name: 'turns',
    get speaking() {
      return speaking
    },
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind !== 'caller_audio' || frame.sampleRate !== VAD_RATE) return context.push(frame)
      pushTurnEvents(turns.push(frame.pcm, frame.atMs))
      if (speaking) armStopTimer()
    },
    endUtterance() {
      turns.endUtterance()
      speaking = false
      clearStopTimer()
    },
    stop() {
      clearStopTimer()
      vad.free()
    },
  }
}
