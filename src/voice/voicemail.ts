/**
 * Answering-machine detection from the callee's audio alone: a machine answers with a long greeting spoken without
 * waiting for anyone, then a beep (a steady pure tone); a person says something short and waits. Pure: 8 kHz frames
 * and their arrival times in, a verdict out; time passes through `tick` because Asterisk sends no frames while the
 * line is silent.
 *
 * The heuristic, with DEFAULT_VOICEMAIL_PARAMETERS:
 * 1. Greeting: sound (frames at or above `minLevelDbfs`, tones excluded) adding up to `minGreetingMs`, where no pause
 *    between sounds lasts more than `maxPauseMs`, all within `windowMs` of the answer.
 * 2. Beep: after such a greeting, and starting at most `maxBeepDelayMs` after its last sound, a tone lasting at least
 *    `minBeepMs`: consecutive 20 ms frames each holding one sinusoid (`minTonePurity` of the frame's power at one
 *    frequency) between `beepMinHz` and `beepMaxHz`, the frequency steady within `maxToneDriftRatio`.
 * 3. The verdict comes when the beep ends (a frame without it, or `BEEP_END_GAP_MS` without frames), so a message
 *    left then starts after the beep and is recorded whole. A beep lasting `maxBeepMs` decides without waiting more.
 * Nothing can be decided after `expiresAfterMs` (window, beep delay and longest beep): drop the detector then.
 */

export type VoicemailParameters = {
  /** The greeting must be heard within this long after the answer. */
  windowMs: number
  /** Sound adding up to this long, without a long pause, is a machine's greeting (a person's "Hello?" is ~1 s). */
  minGreetingMs: number
  /** A pause longer than this ends a greeting (machines pause ~0.3–0.8 s between sentences). */
  maxPauseMs: number
  /** The beep must start within this long after the greeting's last sound. */
  maxBeepDelayMs: number
  minBeepMs: number
  /** A tone this long is a beep whatever follows. */
  maxBeepMs: number
  beepMinHz: number
  beepMaxHz: number
  /** Share of a frame's power at its one frequency for the frame to count as tone (a clean sine is ≈ 1). */
  minTonePurity: number
  /** How far the tone's frequency may move between frames, as a ratio. */
  maxToneDriftRatio: number
  /** Quieter frames are silence (line noise, comfort noise). */
  minLevelDbfs: number
}

export const DEFAULT_VOICEMAIL_PARAMETERS: VoicemailParameters = {
  windowMs: 30_000,
  minGreetingMs: 3_000,
  maxPauseMs: 1_000,
  maxBeepDelayMs: 3_000,
  minBeepMs: 160,
  maxBeepMs: 2_000,
  beepMinHz: 300,
  beepMaxHz: 3_000,
  minTonePurity: 0.8,
  maxToneDriftRatio: 0.03,
  minLevelDbfs: -40,
}

const SAMPLE_RATE = 8000
/** No frame for this long ends a beep (frames come every 20 ms while there is sound). */
const BEEP_END_GAP_MS = 60

export type VoicemailDetector = {
  /** One frame of callee audio (8 kHz PCM) that arrived at `atMs`, ms since the answer. True: voicemail, decided now. */
  push(pcm8k: Int16Array, atMs: number): boolean
  /** Time passes without frames: may end a beep. True: voicemail, decided now. */
  tick(nowMs: number): boolean
  /** A beep is sounding: call `tick` soon after frames stop. */
  readonly beepSounding: boolean
  /** Ms after the answer past which nothing can be decided any more. */
  readonly expiresAfterMs: number
}

export type ToneAnalysis = { frequencyHz: number; purity: number; levelDbfs: number }

/**
 * The frame's dominant frequency (from its zero crossings, interpolated between samples), the share of the frame's
 * power at that frequency (Goertzel) and its level. Purity near 1 means a single sinusoid; speech and noise stay low.
 */
export function analyseTone(frame: Int16Array, sampleRate = SAMPLE_RATE): ToneAnalysis {
  let sumSquares = 0
  let crossings = 0
  let first = -1
  let last = -1
  for (let i = 0; i < frame.length; i++) {
    sumSquares += frame[i] * frame[i]
    if (i > 0 && (frame[i - 1] < 0) !== (frame[i] < 0)) {
      const position = i - 1 + frame[i - 1] / (frame[i - 1] - frame[i])
      if (first < 0) first = position
      last = position
      crossings++
    }
  }
  const meanSquare = sumSquares / frame.length
  const levelDbfs = meanSquare === 0 ? -Infinity : 10 * Math.log10(meanSquare / (32768 * 32768))
  if (crossings < 3 || last <= first) return { frequencyHz: 0, purity: 0, levelDbfs }
  const frequencyHz = ((crossings - 1) / 2) * (sampleRate / (last - first))
  const coefficient = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRate)
  let previous = 0
  let beforePrevious = 0
  for (let i = 0; i < frame.length; i++) {
    const current = frame[i] + coefficient * previous - beforePrevious
    beforePrevious = previous
    previous = current
  }
  const power = Math.max(0, previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious)
  const amplitude = (2 * Math.sqrt(power)) / frame.length
  return { frequencyHz, purity: Math.min(1, (amplitude * amplitude) / 2 / meanSquare), levelDbfs }
}

export function createVoicemailDetector(parameters: Partial<VoicemailParameters> = {}): VoicemailDetector {
  const p = { ...DEFAULT_VOICEMAIL_PARAMETERS, ...parameters }
  /** The current run of sound: when it started, when its last sound ended, how much sound it holds. */
  let greeting: { soundMs: number; lastSoundEndMs: number } | null = null
  /** Set once a greeting long enough was heard: when its last sound ended. */
  let greetingEndMs: number | null = null
  let beep: { startMs: number; lastEndMs: number; frequencyHz: number } | null = null
  let decided = false
  const expiresAfterMs = p.windowMs + p.maxBeepDelayMs + p.maxBeepMs
  const beepLongEnough = () => beep !== null && beep.lastEndMs - beep.startMs >= p.minBeepMs

  function decide(): boolean {
    decided = true
    beep = null
    return true
  }

  /** The beep (if any) is over: voicemail when it was long enough, else it was nothing. */
  function beepEnded(): boolean {
    const wasBeep = beepLongEnough()
    beep = null
    return wasBeep ? decide() : false
  }

  function noteSound(startMs: number, endMs: number): void {
    if (greeting && startMs - greeting.lastSoundEndMs > p.maxPauseMs) greeting = null
    if (!greeting) {
      if (startMs > p.windowMs) return
      greeting = { soundMs: 0, lastSoundEndMs: startMs }
    }
    greeting.soundMs += endMs - startMs
    greeting.lastSoundEndMs = endMs
    if (greeting.soundMs >= p.minGreetingMs) greetingEndMs = endMs
  }

  function onTone(tone: ToneAnalysis, startMs: number, endMs: number): boolean {
    const steady = beep !== null && Math.abs(tone.frequencyHz - beep.frequencyHz) <= beep.frequencyHz * p.maxToneDriftRatio
    if (beep && steady && startMs - beep.lastEndMs <= BEEP_END_GAP_MS) {
      beep.lastEndMs = endMs
      return beep.lastEndMs - beep.startMs >= p.maxBeepMs ? decide() : false
    }
    if (beepEnded()) return true
    if (greetingEndMs !== null && startMs - greetingEndMs <= p.maxBeepDelayMs) beep = { startMs, lastEndMs: endMs, frequencyHz: tone.frequencyHz }
    return false
  }

  return {
    get beepSounding() {
      return beep !== null && !decided
    },
    expiresAfterMs,
    push(pcm8k, atMs) {
      if (decided || atMs > expiresAfterMs) return false
      const startMs = atMs - (pcm8k.length / SAMPLE_RATE) * 1000
      const tone = analyseTone(pcm8k)
      if (tone.levelDbfs < p.minLevelDbfs) return beepEnded()
      const isTone = tone.purity >= p.minTonePurity && tone.frequencyHz >= p.beepMinHz && tone.frequencyHz <= p.beepMaxHz
      if (isTone) return onTone(tone, startMs, atMs)
      if (beepEnded()) return true
      noteSound(startMs, atMs)
      return false
    },
    tick(nowMs) {
      if (decided || !beep || nowMs - beep.lastEndMs < BEEP_END_GAP_MS) return false
      return beepEnded()
    },
  }
}
