/**
 * Turns from caller audio, driven by time rather than frame counts: Asterisk sends no frames at all while the bridge
 * is silent, so a missing stretch of audio counts as silence, and `tick(nowMs)` ends an utterance when nothing
 * arrives. Pure: frames and times in, events out. The times are the pipeline's sample clock (sample-clock.ts), not
 * arrival times: frames read in one burst after an event-loop stall come spaced by their length.
 *
 * Defaults follow the reference platform's VAD (start 0.2 s, stop 0.2 s) except the stop window: there the turn ends
 * after a further ≈ 0.6 s transcription timeout, here the stop window alone ends the turn, so it is 0.6 s (an agent's
 * `user_turn_stop_timeout` sets it for its calls).
 */
import { VAD_FRAME_SAMPLES, VAD_SAMPLE_RATE, type Vad } from './vad.ts'

export type TurnParameters = {
  /** Speech must last this long (without a silent frame) before an utterance starts. */
  startMs: number
  /** Silence (quiet frames, or no frames) this long ends the utterance. */
  stopMs: number
  /**
   * Silence this long (shorter than `stopMs`) is a pause: the utterance so far is offered for a speculative end of
   * turn (`pause`), and speech after it is told (`resumed`). At or above `stopMs`: no pauses.
   */
  pauseMs: number
  /** Frames quieter than this RMS level (dBFS) never count as speech, whatever the VAD says. */
  minVolumeDbfs: number
  /** Audio kept from before the start window's first frame, so the first syllable reaches STT whole. */
  preRollMs: number
  /** An utterance this long is cut and emitted even if the caller keeps talking (bounds memory and STT input). */
  maxUtteranceMs: number
}

export const DEFAULT_TURN_PARAMETERS: TurnParameters = {
  startMs: 200,
  stopMs: 600,
  pauseMs: 240,
  minVolumeDbfs: -45,
  preRollMs: 200,
  maxUtteranceMs: 30_000,
}

export type TurnEvent =
  /** Speech passed the start window: the moment to barge in. `atMs` is when the window was complete. */
  | { type: 'speech_started'; atMs: number }
  /** A finished utterance: 16 kHz mono PCM, from its start (with pre-roll) to its last speech frame (plus the silence heard up to the stop). */
  | { type: 'utterance'; pcm: Int16Array; startedAtMs: number; endedAtMs: number; speechEndedAtMs: number }
  /** The caller paused `pauseMs` inside an utterance: its audio so far (`endedAtMs`: when the pause was long enough). */
  | { type: 'pause'; pcm: Int16Array; startedAtMs: number; endedAtMs: number; speechEndedAtMs: number }
  /** Speech again after a pause, in the same utterance. */
  | { type: 'resumed'; atMs: number }
  /**
   * Audio added to the utterance being heard (`liveAudio` only): the pre-roll and start window right after
   * `speech_started`, then every frame as it comes, silences inside it included, before the event it leads to.
   */
  | { type: 'audio'; pcm: Int16Array }

const FRAME_MS = (VAD_FRAME_SAMPLES / VAD_SAMPLE_RATE) * 1000
const SAMPLES_PER_MS = VAD_SAMPLE_RATE / 1000
/**
 * A stretch without frames longer than this is silence (Asterisk stops sending while the bridge is quiet); shorter
 * is arrival jitter, event-loop pauses included, and must not reset a start window.
 */
const GAP_MS = 3 * FRAME_MS

export type TurnDetector = {
  /** Caller audio (16 kHz PCM, any length) that arrived at `atMs`, i.e. ended then. */
  push(pcm16k: Int16Array, atMs: number): TurnEvent[]
  /** Time passes with no audio: may end the current utterance. */
  tick(nowMs: number): TurnEvent[]
  /** When `tick` will end the current utterance if no more speech comes (its last speech + the stop window); null when none is going on. */
  readonly utteranceEndsAtMs: number | null
  /** When `tick` will next have something to tell (a pause, else the end); null when no utterance is going on. */
  readonly nextEventAtMs: number | null
  /** Ends the current utterance now (its end of turn was decided elsewhere); speech after it starts a new one. */
  endUtterance(): void
}

function frameRmsDbfs(frame: Int16Array): number {
  let sum = 0
  for (let i = 0; i < frame.length; i++) sum += frame[i] * frame[i]
  const rms = Math.sqrt(sum / frame.length)
  return rms === 0 ? -Infinity : 20 * Math.log10(rms / 32768)
}

/**
 * The utterance being heard. Its audio is written into one buffer as it comes (doubled when full), and handed out as
 * views of it: what was written is never written again, so a view stays true while the utterance goes on. Joining
 * frames at the end of a turn instead touched fresh memory at that instant, which costs (page faults) when 100 callers
 * stop speaking at once.
 */
type Utterance = {
  audio: Int16Array
  samples: number
  startedAtMs: number
  lastSpeechEndMs: number
  paused: boolean
}

/** An utterance's buffer starts with room for this much speech. */
const INITIAL_UTTERANCE_MS = 4_000

const newUtterance = (startedAtMs: number, lastSpeechEndMs: number): Utterance => ({
  audio: new Int16Array(INITIAL_UTTERANCE_MS * SAMPLES_PER_MS),
  samples: 0,
  startedAtMs,
  lastSpeechEndMs,
  paused: false,
})

/** Appends `audio` to the utterance: samples, or a count of silent ones (a fresh buffer's rest is silence already). */
function append(utterance: Utterance, audio: Int16Array | number): void {
  const length = typeof audio === 'number' ? audio : audio.length
  const needed = utterance.samples + length
  if (needed > utterance.audio.length) {
    const grown = new Int16Array(Math.max(needed, utterance.audio.length * 2))
    grown.set(utterance.audio.subarray(0, utterance.samples))
    utterance.audio = grown
  }
  if (typeof audio !== 'number') utterance.audio.set(audio, utterance.samples)
  utterance.samples = needed
}

/** The utterance's audio so far, as a view (see Utterance). */
const audioOf = (utterance: Utterance) => utterance.audio.subarray(0, utterance.samples)

/** Speech heard up to `endMs`: after a pause, the utterance is told as resumed. */
function speechHeard(utterance: Utterance, endMs: number, events: TurnEvent[]): void {
  utterance.lastSpeechEndMs = endMs
  if (!utterance.paused) return
  utterance.paused = false
  events.push({ type: 'resumed', atMs: endMs })
}

/** `liveAudio`: the utterance's audio is told as it is heard (`audio` events), for a recogniser that streams. */
export function createTurnDetector(
  vad: Vad,
  parameters: Partial<TurnParameters> = {},
  options: { liveAudio?: boolean } = {},
): TurnDetector {
  const { startMs, stopMs, pauseMs, minVolumeDbfs, preRollMs, maxUtteranceMs } = {
    ...DEFAULT_TURN_PARAMETERS,
    ...parameters,
  }
  const pauses = pauseMs < stopMs
  const pending = new Int16Array(VAD_FRAME_SAMPLES)
  let pendingLength = 0
  /** End time of the last frame seen, to spot gaps. */
  let lastFrameEndMs = -Infinity
  /** Recent frames kept while quiet (pre-roll + start window), with their end times. */
  let recent: { pcm: Int16Array; endMs: number }[] = []
  let candidateStartMs: number | null = null
  let utterance: Utterance | null = null

  function finishUtterance(endedAtMs: number): TurnEvent {
    const pcm = audioOf(utterance!)
    const { startedAtMs, lastSpeechEndMs } = utterance!
    forgetUtterance()
    return { type: 'utterance', pcm, startedAtMs, endedAtMs, speechEndedAtMs: lastSpeechEndMs }
  }

  function forgetUtterance(): void {
    utterance = null
    candidateStartMs = null
    recent = []
  }

  /** The live audio event is a view of what was appended: the frame given may be a buffer that is reused. */
  function appendToUtterance(audio: Int16Array | number, events: TurnEvent[]): void {
    const from = utterance!.samples
    append(utterance!, audio)
    if (options.liveAudio) events.push({ type: 'audio', pcm: utterance!.audio.subarray(from, utterance!.samples) })
  }

  function silenceEnds(nowMs: number, events: TurnEvent[]): void {
    if (!utterance) return
    const silentMs = nowMs - utterance.lastSpeechEndMs
    if (pauses && !utterance.paused && silentMs >= pauseMs && silentMs < stopMs) {
      utterance.paused = true
      const { startedAtMs, lastSpeechEndMs } = utterance
      const endedAtMs = lastSpeechEndMs + pauseMs
      events.push({ type: 'pause', pcm: audioOf(utterance), startedAtMs, endedAtMs, speechEndedAtMs: lastSpeechEndMs })
    }
    if (silentMs >= stopMs) events.push(finishUtterance(utterance.lastSpeechEndMs + stopMs))
  }

  function onFrame(frame: Int16Array, endMs: number, events: TurnEvent[]): void {
    const frameStartMs = endMs - FRAME_MS
    const gapMs = frameStartMs - lastFrameEndMs
    if (gapMs > GAP_MS) {
      candidateStartMs = null
      recent = []
      if (utterance) {
        silenceEnds(frameStartMs, events)
        if (utterance) appendToUtterance(Math.round(gapMs * SAMPLES_PER_MS), events)
      }
    }
    lastFrameEndMs = endMs
    const speech = frameRmsDbfs(frame) >= minVolumeDbfs && vad.isSpeech(frame)

    if (utterance) {
      appendToUtterance(frame, events)
      if (speech) speechHeard(utterance, endMs, events)
      else silenceEnds(endMs, events)
      if (utterance && endMs - utterance.startedAtMs >= maxUtteranceMs) events.push(finishUtterance(endMs))
      return
    }

    recent.push({ pcm: frame.slice(), endMs })
    while (recent.length > 0 && recent[0].endMs - FRAME_MS < endMs - preRollMs - startMs - FRAME_MS) recent.shift()
    if (!speech) {
      candidateStartMs = null
      return
    }
    candidateStartMs ??= frameStartMs
    if (endMs - candidateStartMs < startMs) return
    const kept = recent.filter((entry) => entry.endMs - FRAME_MS >= candidateStartMs! - preRollMs)
    utterance = newUtterance(kept[0].endMs - FRAME_MS, endMs)
    events.push({ type: 'speech_started', atMs: endMs })
    for (const entry of kept) appendToUtterance(entry.pcm, events)
    recent = []
  }

  return {
    push(pcm16k, atMs) {
      const events: TurnEvent[] = []
      let offset = 0
      while (pendingLength + pcm16k.length - offset >= VAD_FRAME_SAMPLES) {
        const take = VAD_FRAME_SAMPLES - pendingLength
        pending.set(pcm16k.subarray(offset, offset + take), pendingLength)
        offset += take
        pendingLength = 0
        onFrame(pending, atMs - (pcm16k.length - offset) / SAMPLES_PER_MS, events)
      }
      pending.set(pcm16k.subarray(offset), pendingLength)
      pendingLength += pcm16k.length - offset
      return events
    },
    tick(nowMs) {
      const events: TurnEvent[] = []
      silenceEnds(nowMs, events)
      return events
    },
    get utteranceEndsAtMs() {
      return utterance ? utterance.lastSpeechEndMs + stopMs : null
    },
    get nextEventAtMs() {
      return utterance ? utterance.lastSpeechEndMs + (pauses && !utterance.paused ? pauseMs : stopMs) : null
    },
    endUtterance: forgetUtterance,
  }
}
