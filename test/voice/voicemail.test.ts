import { beforeAll, describe, expect, test } from 'bun:test'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711'
import { analyseTone, createVoicemailDetector, DEFAULT_VOICEMAIL_PARAMETERS, type VoicemailDetector } from '../../src/voice/voicemail'
import { noise, sine } from '../support/audio'
import { callerSpeech, concatPcm, silence8k } from '../support/voice'

/** Pushes `audio` as 20 ms frames back to back from `startMs` (over µ-law, as the line carries it). */
function feed(detector: VoicemailDetector, audio: Int16Array, startMs: number): { decidedAtMs: number | null; endMs: number } {
  const line = ulawToPcm16(pcm16ToUlaw(audio))
  let atMs = startMs
  for (let at = 0; at + 160 <= line.length; at += 160) {
    atMs += 20
    if (detector.push(line.subarray(at, at + 160), atMs)) return { decidedAtMs: atMs, endMs: atMs }
  }
  return { decidedAtMs: null, endMs: atMs }
}

const beep = (ms: number, frequency = 1000) => sine(frequency, 8000, ms, 8000)

describe('tone analysis', () => {
  test('a sine is one pure frequency, found within 0.5 %; noise is not', () => {
    for (const frequency of [440, 997, 1400, 2100]) {
      const tone = analyseTone(beep(20, frequency))
      expect(Math.abs(tone.frequencyHz - frequency)).toBeLessThan(frequency * 0.005)
      expect(tone.purity).toBeGreaterThan(0.95)
    }
    expect(analyseTone(noise(8000, 20, 4000)).purity).toBeLessThan(0.2)
    expect(analyseTone(new Int16Array(160)).levelDbfs).toBe(-Infinity)
  })
})

describe('answering-machine detector', () => {
  let greeting: Int16Array
  let hello: Int16Array
  beforeAll(async () => {
    greeting = await callerSpeech('Hi, you have reached Jordan. Please leave your name and number after the tone.')
    hello = await callerSpeech('Hello? Who is this?')
  })

  test('a long greeting then a beep: decided on the first frame after the beep', () => {
    const detector = createVoicemailDetector()
    const spoken = feed(detector, concatPcm([greeting, silence8k(400), beep(400)]), 300)
    expect(spoken.decidedAtMs).toBeNull()
    expect(detector.beepSounding).toBe(true)
    const after = feed(detector, silence8k(100), spoken.endMs)
    expect(after.decidedAtMs).toBe(spoken.endMs + 20)
    expect(detector.push(beep(20), after.endMs + 20)).toBe(false)
  })

  test('when frames stop after the beep (a silent line sends none), tick decides once the gap is clear', () => {
    const detector = createVoicemailDetector()
    const { endMs } = feed(detector, concatPcm([greeting, beep(300)]), 0)
    expect(detector.tick(endMs + 20)).toBe(false)
    expect(detector.tick(endMs + 100)).toBe(true)
  })

  test('a beep lasting maxBeepMs decides without waiting for its end', () => {
    const detector = createVoicemailDetector({ maxBeepMs: 500 })
    const { decidedAtMs, endMs } = feed(detector, concatPcm([greeting, beep(2000)]), 0)
    expect(decidedAtMs).not.toBeNull()
    expect(endMs - decidedAtMs!).toBe(0)
    expect(decidedAtMs).toBeLessThan(greeting.length / 8 + 600)
  })

  test('a person: a short hello, even followed by a tone, is no machine', () => {
    const detector = createVoicemailDetector()
    const { endMs } = feed(detector, concatPcm([hello, beep(400), silence8k(200)]), 0)
    expect(detector.tick(endMs + 1000)).toBe(false)
  })

  test('a long greeting without a beep, a beep too short, or one too late is no machine', () => {
    const noBeep = createVoicemailDetector()
    expect(feed(noBeep, concatPcm([greeting, silence8k(2000), greeting]), 0).decidedAtMs).toBeNull()

    const shortBeep = createVoicemailDetector()
    expect(feed(shortBeep, concatPcm([greeting, beep(100), silence8k(200)]), 0).decidedAtMs).toBeNull()

    const lateBeep = createVoicemailDetector()
    const late = feed(lateBeep, concatPcm([greeting, silence8k(DEFAULT_VOICEMAIL_PARAMETERS.maxBeepDelayMs + 500), beep(400)]), 0)
    expect(lateBeep.tick(late.endMs + 200)).toBe(false)
  })

  test('a greeting starting after the window is not watched', () => {
    const detector = createVoicemailDetector({ windowMs: 1000 })
    const { endMs } = feed(detector, concatPcm([greeting, beep(400)]), 2000)
    expect(detector.tick(endMs + 200)).toBe(false)
    expect(detector.expiresAfterMs).toBe(1000 + DEFAULT_VOICEMAIL_PARAMETERS.maxBeepDelayMs + DEFAULT_VOICEMAIL_PARAMETERS.maxBeepMs)
  })
})
