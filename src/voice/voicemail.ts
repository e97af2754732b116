/**
 * Answering-machine detection from the callee's audio alone: a machine answers with a long greeting spoken without
 * waiting for anyone, then a beep (a steady pure tone); a person says something short and waits. Pure: 8 kHz frames
 * and their arrival times in, verdicts out; time passes through `tick` because Asterisk sends no frames while the
 * line is silent.
 *
 * The heuristic, with DEFAULT_VOICEMAIL_PARAMETERS:
 * 1. Greeting: sound (frames at or above `minLevelDbfs`, tones excluded) adding up to `minGreetingMs`, where no pause
 *    between sounds lasts `maxPauseMs`, all within `windowMs` of the answer.
 * 2. Beep: after such a greeting, and starting at most `maxBeepDelayMs` after its last sound, a tone lasting at least
 *    `minBeepMs`: consecutive 20 ms frames each holding one sinusoid (`minTonePurity` of the frame's power at one
 *    frequency) between `beepMinHz` and `beepMaxHz`, the frequency steady within `maxToneDriftRatio`.
 * 3. 'machine' comes when the beep ends (a frame without it, or `BEEP_END_GAP_MS` without frames), so a message
 *    left then starts after the beep and is recorded whole. A beep lasting `maxBeepMs` decides without waiting more.
 * 4. 'person' comes as soon as nothing heard can still become rule 1 and 2: the first run of sound ended by a pause
 *    before it made a greeting (a "Hello?" and a wait), a greeting no beep followed in time, or a window without a
 *    sound. It comes at most once and early (the agent's answer waits for it), so it is a best guess, not final: the
 *    detector keeps listening and a greeting with a beep heard later (a machine that paused long after its first
 *    word) still makes it 'machine'.
 * Nothing can be decided after `expiresAfterMs` (window, beep delay and longest beep): drop the detector then.
 */

export type VoicemailParameters = {
  /** The greeting must be heard within this long after the answer. */
  windowMs: number
  /** Sound adding up to this long, without a long pause, is a machine's greeting (a person's "Hello?" is ~1 s). */
  minGreetingMs: number
  /** A pause this long ends a greeting (machines pause ~0.3–0.8 s between sentences; a person waits for an answer). */
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

export type VoicemailVerdict = 'machine' | 'person'

export type VoicemailDetector = {
  /** One frame of callee audio (8 kHz PCM) that arrived at `atMs`, ms since the answer: the verdict reached now, if any. */
  push(pcm8k: Int16Array, atMs: number): VoicemailVerdict | null
  /** Time passes without frames: may end a beep or a pause. */
  tick(nowMs: number): VoicemailVerdict | null
  /** When `tick` may reach a verdict if no frame comes before (ms after the answer); null: only frames can. */
  readonly nextCheckAtMs: number | null
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
    if (i > 0 && frame[i - 1] < 0 !== frame[i] < 0) {
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
  const power = Math.max(
    0,
    previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious,
  )
  const amplitude = (2 * Math.sqrt(power)) / frame.length
  return { frequencyHz, purity: Math.min(1, (amplitude * amplitude) / 2 / meanSquare), levelDbfs }
}

export function createVoicemailDetector(parameters: Partial<VoicemailParameters> = {}): VoicemailDetector {
  const p = { ...DEFAULT_VOICEMAIL_PARAMETERS, ...parameters }
  /** Some sound counted toward a greeting was heard. */
  let heardSound = false
  /** The current run of sound: when its last sound ended, how much sound it holds. */
  let greeting: { soundMs: number; lastSoundEndMs: number } | null = null
  /** Set once a greeting long enough was heard: when its last sound ended. */
  let greetingEndMs: number | null = null
  let beep: { startMs: number; lastEndMs: number; frequencyHz: number } | null = null
  let verdict: VoicemailVerdict | null = null
  const expiresAfterMs = p.windowMs + p.maxBeepDelayMs + p.maxBeepMs
  const beepLongEnough = () => beep !== null && beep.lastEndMs - beep.startMs >= p.minBeepMs

  function decide(): VoicemailVerdict {
    verdict = 'machine'
    beep = null
    return verdict
  }

  /** The beep (if any) is over: voicemail when it was long enough, else it was nothing. */
  function beepEnded(): VoicemailVerdict | null {
    const wasBeep = beepLongEnough()
    beep = null
    return wasBeep ? decide() : null
  }

  /** Whether what was heard by `nowMs` may still become a greeting followed by a beep. */
  function machinePending(nowMs: number): boolean {
    if (beep) return true
    if (greetingEndMs !== null && nowMs - greetingEndMs < p.maxBeepDelayMs) return true
    return greeting !== null && nowMs - greeting.lastSoundEndMs < p.maxPauseMs
  }

  function personVerdict(nowMs: number): VoicemailVerdict | null {
    if (verdict !== null) return null
    if (heardSound ? machinePending(nowMs) : nowMs < p.windowMs) return null
    verdict = 'person'
    return verdict
  }

  function noteSound(startMs: number, endMs: number): void {
    if (greeting && startMs - greeting.lastSoundEndMs >= p.maxPauseMs) greeting = null
    if (!greeting) {
      if (startMs > p.windowMs) return
      greeting = { soundMs: 0, lastSoundEndMs: startMs }
    }
    heardSound = true
    greeting.soundMs += endMs - startMs
    greeting.lastSoundEndMs = endMs
    if (greeting.soundMs >= p.minGreetingMs) greetingEndMs = endMs
  }

  function onTone(tone: ToneAnalysis, startMs: number, endMs: number): VoicemailVerdict | null {
    const steady =
      beep !== null && Math.abs(tone.frequencyHz - beep.frequencyHz) <= beep.frequencyHz * p.maxToneDriftRatio
    if (beep && steady && startMs - beep.lastEndMs <= BEEP_END_GAP_MS) {
      beep.lastEndMs = endMs
      return beep.lastEndMs - beep.startMs >= p.maxBeepMs ? decide() : null
    }
    if (beepEnded()) return verdict
    if (greetingEndMs !== null && startMs - greetingEndMs <= p.maxBeepDelayMs)
      beep = { startMs, lastEndMs: endMs, frequencyHz: tone.frequencyHz }
    return personVerdict(endMs)
  }

  return {
    get nextCheckAtMs() {
      if (verdict === 'machine') return null
      if (beep) return beep.lastEndMs + BEEP_END_GAP_MS
      if (verdict === 'person') return null
      if (!heardSound) return p.windowMs
      const pauseEndsAtMs = greeting ? greeting.lastSoundEndMs + p.maxPauseMs : 0
      const beepDueByMs = greetingEndMs === null ? 0 : greetingEndMs + p.maxBeepDelayMs
      return Math.max(pauseEndsAtMs, beepDueByMs)
    },
    expiresAfterMs,
    push(pcm8k, atMs) {
      if (verdict === 'machine' || atMs > expiresAfterMs) return null
      const startMs = atMs - (pcm8k.length / SAMPLE_RATE) * 1000
      const tone = analyseTone(pcm8k)
      if (tone.levelDbfs < p.minLevelDbfs) return beepEnded() ?? personVerdict(atMs)
      const isTone =
        tone.purity >= p.minTonePurity && tone.frequencyHz >= p.beepMinHz && tone.frequencyHz <= p.beepMaxHz
      if (isTone) return onTone(tone, startMs, atMs)
      if (beepEnded()) return verdict
      noteSound(startMs, atMs)
      return personVerdict(atMs)
    },
    tick(nowMs) {
      if (verdict === 'machine') return null
      if (beep && nowMs - beep.lastEndMs >= BEEP_END_GAP_MS) return beepEnded() ?? personVerdict(nowMs)
      return personVerdict(nowMs)
    },
  }
}
