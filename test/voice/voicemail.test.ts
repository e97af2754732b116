import { beforeAll, describe, expect, test } from 'bun:test'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711'
import {
  analyseTone,
  createVoicemailDetector,
  DEFAULT_VOICEMAIL_PARAMETERS,
  type VoicemailDetector,
  type VoicemailVerdict,
} from '../../src/voice/voicemail'
import { noise, sine } from '../support/audio'
import { callerSpeech, concatPcm, silence8k } from '../support/voice'

type Fed = { endMs: number; verdicts: { verdict: VoicemailVerdict; atMs: number }[] }

/** Pushes `audio` as 20 ms frames back to back from `startMs` (over µ-law, as the line carries it), noting the verdicts. */
function feed(detector: VoicemailDetector, audio: Int16Array, startMs: number): Fed {
  const line = ulawToPcm16(pcm16ToUlaw(audio))
  const verdicts: Fed['verdicts'] = []
  let atMs = startMs
  for (let at = 0; at + 160 <= line.length; at += 160) {
    atMs += 20
    const verdict = detector.push(line.subarray(at, at + 160), atMs)
    if (verdict) verdicts.push({ verdict, atMs })
  }
  return { endMs: atMs, verdicts }
}

const machineAt = (fed: Fed) => fed.verdicts.find(({ verdict }) => verdict === 'machine')?.atMs ?? null

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
  const { maxPauseMs, maxBeepDelayMs } = DEFAULT_VOICEMAIL_PARAMETERS

  test('a long greeting then a beep: machine on the first frame after the beep, and no person before', () => {
    const detector = createVoicemailDetector()
    const spoken = feed(detector, concatPcm([greeting, silence8k(400), beep(400)]), 300)
    expect(spoken.verdicts).toEqual([])
    // the beep is sounding: its end is to be checked right after the last frame
    expect(detector.nextCheckAtMs).toBeGreaterThan(spoken.endMs)
    expect(detector.nextCheckAtMs).toBeLessThan(spoken.endMs + 100)
    const after = feed(detector, silence8k(100), spoken.endMs)
    expect(after.verdicts).toEqual([{ verdict: 'machine', atMs: spoken.endMs + 20 }])
    expect(detector.push(beep(20), after.endMs + 20)).toBeNull()
    expect(detector.nextCheckAtMs).toBeNull()
  })

  test('when frames stop after the beep (a silent line sends none), tick decides once the gap is clear', () => {
    const detector = createVoicemailDetector()
    const { endMs } = feed(detector, concatPcm([greeting, beep(300)]), 0)
    expect(detector.tick(endMs + 20)).toBeNull()
    expect(detector.tick(endMs + 100)).toBe('machine')
  })

  test('a beep lasting maxBeepMs decides without waiting for its end', () => {
    const detector = createVoicemailDetector({ maxBeepMs: 500 })
    const fed = feed(detector, concatPcm([greeting, beep(2000)]), 0)
    expect(fed.verdicts.map(({ verdict }) => verdict)).toEqual(['machine'])
    expect(machineAt(fed)).toBeLessThan(greeting.length / 8 + 600)
  })

  test('a person: a short hello then a pause is a person once the pause is long enough, even before frames come again', () => {
    const detector = createVoicemailDetector()
    const spoken = feed(detector, hello, 0)
    expect(spoken.verdicts).toEqual([])
    // a silent line sends no frames: the verdict comes from tick at the moment the detector asks for
    const checkAtMs = detector.nextCheckAtMs!
    expect(checkAtMs).toBeGreaterThan(spoken.endMs)
    expect(checkAtMs).toBeLessThanOrEqual(spoken.endMs + maxPauseMs)
    expect(detector.tick(checkAtMs - 20)).toBeNull()
    expect(detector.tick(checkAtMs)).toBe('person')
    expect(detector.tick(checkAtMs + 1000)).toBeNull()
  })

  test('a person: quiet frames after a hello decide too; a tone after it is no beep', () => {
    const detector = createVoicemailDetector()
    const fed = feed(detector, concatPcm([hello, silence8k(maxPauseMs + 100), beep(400), silence8k(200)]), 0)
    expect(fed.verdicts.map(({ verdict }) => verdict)).toEqual(['person'])
    expect(fed.verdicts[0].atMs).toBeLessThanOrEqual(hello.length / 8 + maxPauseMs)
    expect(detector.tick(fed.endMs + 1000)).toBeNull()
  })

  test('a long greeting without a beep is a person once the beep is overdue; a beep too short or too late is no machine', () => {
    const noBeep = createVoicemailDetector()
    const talkative = feed(noBeep, concatPcm([greeting, silence8k(maxBeepDelayMs + 100), greeting]), 0)
    expect(talkative.verdicts.map(({ verdict }) => verdict)).toEqual(['person'])
    // not before the beep could still have come
    expect(talkative.verdicts[0].atMs).toBeGreaterThanOrEqual(greeting.length / 8 - 300 + maxBeepDelayMs)

    const shortBeep = createVoicemailDetector()
    expect(machineAt(feed(shortBeep, concatPcm([greeting, beep(100), silence8k(200)]), 0))).toBeNull()

    const lateBeep = createVoicemailDetector()
    const late = feed(lateBeep, concatPcm([greeting, silence8k(maxBeepDelayMs + 500), beep(400)]), 0)
    expect(machineAt(late)).toBeNull()
    expect(lateBeep.tick(late.endMs + 200)).toBeNull()
  })

  test('a person verdict is no final word: a machine whose greeting starts after a long pause is still found', () => {
    const detector = createVoicemailDetector()
    const fed = feed(
      detector,
      concatPcm([hello, silence8k(maxPauseMs + 500), greeting, silence8k(300), beep(400), silence8k(100)]),
      0,
    )
    expect(fed.verdicts.map(({ verdict }) => verdict)).toEqual(['person', 'machine'])
  })

  test('nothing heard: a person once the window is over, as no greeting may start then', () => {
    const detector = createVoicemailDetector({ windowMs: 1000 })
    expect(detector.nextCheckAtMs).toBe(1000)
    expect(detector.tick(900)).toBeNull()
    expect(detector.tick(1000)).toBe('person')
  })

  test('a greeting starting after the window is not watched', () => {
    const detector = createVoicemailDetector({ windowMs: 1000 })
    const fed = feed(detector, concatPcm([greeting, beep(400)]), 2000)
    expect(machineAt(fed)).toBeNull()
    expect(detector.tick(fed.endMs + 200)).toBeNull()
    expect(detector.expiresAfterMs).toBe(1000 + maxBeepDelayMs + DEFAULT_VOICEMAIL_PARAMETERS.maxBeepMs)
  })
})
