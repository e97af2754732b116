import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createFliteTts, type FliteTts } from '../../src/voice/flite.ts'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711.ts'
import { createResampler, resample } from '../../src/lib/resample.ts'
import { createTurnDetector, DEFAULT_TURN_PARAMETERS, type TurnEvent } from '../../src/voice/turns.ts'
import { loadVadEngine, VAD_FRAME_SAMPLES, type Vad, type VadEngine } from '../../src/voice/vad.ts'
import { noise, rms, sine } from '../support/audio.ts'

/** A stand-in VAD that calls anything louder than RMS 1000 speech, to test the timing logic on its own. */
const loudIsSpeech: Vad = { isSpeech: (frame) => rms(frame) > 1000, free: () => {} }

const FRAME_MS = 20
const tone = (ms: number) => sine(300, 16000, ms)
const quiet = (ms: number) => new Int16Array((16000 * ms) / 1000)

/** The events about where utterances start and end (pauses and resumptions inside them aside). */
const withoutPauses = (events: TurnEvent[]) =>
  events.filter((event) => event.type !== 'pause' && event.type !== 'resumed')

/** Pushes `audio` as 20 ms frames arriving back to back from `startMs`; returns the events and the time it ended. */
function feed(
  detector: ReturnType<typeof createTurnDetector>,
  audio: Int16Array,
  startMs: number,
): { events: TurnEvent[]; endMs: number } {
  const events: TurnEvent[] = []
  let atMs = startMs
  for (let at = 0; at < audio.length; at += VAD_FRAME_SAMPLES) {
    atMs += FRAME_MS
    events.push(...detector.push(audio.subarray(at, at + VAD_FRAME_SAMPLES), atMs))
  }
  return { events, endMs: atMs }
}

describe('turn detector (timing, with a stand-in VAD)', () => {
  test('speech shorter than the start window starts nothing; longer starts once, at the end of the window', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const cough = feed(detector, tone(100), 0)
    const pause = feed(detector, quiet(200), cough.endMs)
    expect([...cough.events, ...pause.events]).toEqual([])
    const speech = feed(detector, tone(1000), pause.endMs)
    expect(speech.events).toEqual([{ type: 'speech_started', atMs: pause.endMs + DEFAULT_TURN_PARAMETERS.startMs }])
  })

  test('when frames stop arriving, tick() ends the utterance once the stop window after the last speech has passed', () => {
    const detector = createTurnDetector(loudIsSpeech)
    expect(detector.utteranceEndsAtMs).toBeNull()
    const speech = feed(detector, tone(1000), 1000)
    expect(speech.events.map((event) => event.type)).toEqual(['speech_started'])
    expect(detector.utteranceEndsAtMs).toBe(speech.endMs + DEFAULT_TURN_PARAMETERS.stopMs)
    // trailing quiet frames do not move the end: it is counted from the last speech
    const trailing = feed(detector, quiet(200), speech.endMs)
    expect(trailing.events).toEqual([])
    expect(detector.utteranceEndsAtMs).toBe(speech.endMs + DEFAULT_TURN_PARAMETERS.stopMs)
    expect(withoutPauses(detector.tick(speech.endMs + DEFAULT_TURN_PARAMETERS.stopMs - 1))).toEqual([])
    const [utterance] = detector.tick(speech.endMs + DEFAULT_TURN_PARAMETERS.stopMs + 50)
    if (utterance?.type !== 'utterance') throw new Error('expected an utterance')
    expect(utterance.endedAtMs).toBe(speech.endMs + DEFAULT_TURN_PARAMETERS.stopMs)
    expect(utterance.startedAtMs).toBe(1000)
    expect(utterance.pcm.length).toBe(16 * 1200) // the quiet frames that came are kept; nothing is added for the wait
    expect(detector.tick(speech.endMs + 5000)).toEqual([])
    expect(detector.utteranceEndsAtMs).toBeNull()
  })

  test('late and bunched frames (arrival jitter, an event-loop pause) do not reset the start window', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const audio = tone(300)
    const arrivals = [20, 38, 65, 80, 100, 150, 151, 152, 180, 200, 220, 240, 260, 280, 300]
    const events = arrivals.flatMap((atMs, index) =>
      detector.push(audio.subarray(index * VAD_FRAME_SAMPLES, (index + 1) * VAD_FRAME_SAMPLES), atMs),
    )
    expect(events.map((event) => event.type)).toEqual(['speech_started'])
  })

  test('a gap without frames shorter than the stop window stays inside one utterance, filled with silence', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const first = feed(detector, tone(600), 0)
    const gapMs = 400
    const second = feed(detector, tone(600), first.endMs + gapMs)
    expect(detector.tick(second.endMs + 100)).toEqual([])
    const events = withoutPauses(detector.tick(second.endMs + DEFAULT_TURN_PARAMETERS.stopMs))
    expect(events).toHaveLength(1)
    const utterance = events[0] as Extract<TurnEvent, { type: 'utterance' }>
    expect(utterance.pcm.length).toBe(16 * (600 + gapMs + 600))
    expect(rms(utterance.pcm.subarray(16 * 700, 16 * 900))).toBe(0)
    expect(withoutPauses([...first.events, ...second.events]).map((event) => event.type)).toEqual(['speech_started'])
  })

  test('a pause of pauseMs offers the utterance so far once; speech after it is told as resumed, in the same utterance', () => {
    const { pauseMs, stopMs } = DEFAULT_TURN_PARAMETERS
    const detector = createTurnDetector(loudIsSpeech, { preRollMs: 0 })
    const first = feed(detector, tone(600), 0)
    expect(detector.nextEventAtMs).toBe(first.endMs + pauseMs)
    expect(detector.tick(first.endMs + pauseMs - 1)).toEqual([])
    const [pause] = detector.tick(first.endMs + pauseMs)
    if (pause?.type !== 'pause') throw new Error('expected a pause')
    expect(pause).toMatchObject({ startedAtMs: 0, endedAtMs: first.endMs + pauseMs, speechEndedAtMs: first.endMs })
    expect(pause.pcm.length).toBe(16 * 600)
    // told once; the stop window is what comes next
    expect(detector.tick(first.endMs + pauseMs + 50)).toEqual([])
    expect(detector.nextEventAtMs).toBe(first.endMs + stopMs)
    const second = feed(detector, tone(400), first.endMs + pauseMs + 60)
    expect(second.events.map((event) => event.type)).toEqual(['resumed'])
    // a stop window already over needs no pause first
    const ended = detector.tick(second.endMs + stopMs)
    expect(ended.map((event) => event.type)).toEqual(['utterance'])
    const utterance = ended[0] as Extract<TurnEvent, { type: 'utterance' }>
    expect(utterance.startedAtMs).toBe(0)
    expect(utterance.speechEndedAtMs).toBe(second.endMs)
  })

  test("audio handed out stays as it was: the pause's audio after the caller goes on past the first buffer, and the utterance whole", () => {
    const { pauseMs, stopMs } = DEFAULT_TURN_PARAMETERS
    const detector = createTurnDetector(loudIsSpeech, { preRollMs: 0, maxUtteranceMs: 60_000 })
    const first = feed(detector, tone(600), 0)
    const [pause] = detector.tick(first.endMs + pauseMs)
    if (pause?.type !== 'pause') throw new Error('expected a pause')
    const heardAtThePause = pause.pcm.slice()
    // 8 s more of another tone: the utterance outgrows its first buffer
    const goOn = sine(500, 16000, 8000)
    const second = feed(detector, goOn, first.endMs + pauseMs)
    const [utterance] = withoutPauses(detector.tick(second.endMs + stopMs))
    if (utterance?.type !== 'utterance') throw new Error('expected an utterance')
    expect(pause.pcm).toEqual(heardAtThePause)
    expect(utterance.pcm.length).toBe(16 * (600 + pauseMs + 8000))
    expect(utterance.pcm.subarray(0, 16 * 600)).toEqual(tone(600))
    expect(utterance.pcm.subarray(16 * (600 + pauseMs))).toEqual(goOn)
  })

  test('with live audio, the audio events laid end to end are the utterance exactly, gaps as silence', () => {
    const { stopMs } = DEFAULT_TURN_PARAMETERS
    const detector = createTurnDetector(loudIsSpeech, { maxUtteranceMs: 60_000 }, { liveAudio: true })
    const first = feed(detector, sine(500, 16000, 3000), 0)
    const second = feed(detector, sine(700, 16000, 3000), first.endMs + 100)
    const ended = detector.tick(second.endMs + stopMs)
    const utterance = ended.find((event) => event.type === 'utterance')
    if (utterance?.type !== 'utterance') throw new Error('expected an utterance')
    const live = [...first.events, ...second.events, ...ended].flatMap((event) =>
      event.type === 'audio' ? [event.pcm] : [],
    )
    const joined = new Int16Array(live.reduce((sum, pcm) => sum + pcm.length, 0))
    let at = 0
    for (const pcm of live) {
      joined.set(pcm, at)
      at += pcm.length
    }
    expect([...joined]).toEqual([...utterance.pcm])
    expect(rms(utterance.pcm.subarray(16 * 3000, 16 * 3100))).toBe(0)
  })

  test('endUtterance closes the utterance at once: the next speech starts a new one; no pauses when pauseMs ≥ stopMs', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const first = feed(detector, tone(600), 0)
    detector.endUtterance()
    expect(detector.tick(first.endMs + 2000)).toEqual([])
    const second = feed(detector, tone(600), first.endMs + 300)
    expect(second.events.map((event) => event.type)).toEqual(['speech_started'])
    const noPauses = createTurnDetector(loudIsSpeech, { pauseMs: 600, stopMs: 600 })
    const speech = feed(noPauses, tone(600), 0)
    expect(noPauses.tick(speech.endMs + 300)).toEqual([])
    expect(noPauses.tick(speech.endMs + 600).map((event) => event.type)).toEqual(['utterance'])
  })

  test('a gap longer than the stop window ends the utterance when the next frame arrives, even without tick()', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const first = feed(detector, tone(500), 0)
    const second = feed(detector, tone(500), first.endMs + 2000)
    expect(second.events.map((event) => event.type)).toEqual(['utterance', 'speech_started'])
    const utterance = second.events[0] as Extract<TurnEvent, { type: 'utterance' }>
    expect(utterance.endedAtMs).toBe(first.endMs + DEFAULT_TURN_PARAMETERS.stopMs)
  })

  test('quiet frames (silence sent as frames) end the utterance after the stop window and are kept up to it', () => {
    const detector = createTurnDetector(loudIsSpeech, { stopMs: 300, preRollMs: 0 })
    const speech = feed(detector, tone(500), 0)
    const silence = feed(detector, quiet(1000), speech.endMs)
    const utterance = silence.events.find((event) => event.type === 'utterance') as Extract<
      TurnEvent,
      { type: 'utterance' }
    >
    expect(utterance.endedAtMs).toBe(speech.endMs + 300)
    expect(utterance.pcm.length).toBe(16 * (500 + 300))
  })

  test('pre-roll keeps the audio just before the start window', () => {
    const detector = createTurnDetector(loudIsSpeech, { preRollMs: 100 })
    const lead = feed(detector, noise(16000, 500, 500), 0)
    const speech = feed(detector, tone(500), lead.endMs)
    const [utterance] = detector.tick(speech.endMs + 1000)
    if (utterance?.type !== 'utterance') throw new Error('expected an utterance')
    expect(utterance.startedAtMs).toBe(lead.endMs - 100)
    expect(utterance.pcm.length).toBe(16 * 600)
    expect(rms(utterance.pcm.subarray(0, 16 * 100))).toBeLessThan(500)
    expect(rms(utterance.pcm.subarray(16 * 100))).toBeGreaterThan(5000)
  })

  test('sound below the minimum volume is never speech, whatever the VAD says', () => {
    const detector = createTurnDetector({ isSpeech: () => true, free: () => {} }, { minVolumeDbfs: -40 })
    const faint = feed(detector, sine(300, 16000, 1000, 200), 0) // ≈ −47 dBFS
    expect(faint.events).toEqual([])
    const loud = feed(detector, sine(300, 16000, 1000, 3000), faint.endMs)
    expect(loud.events.map((event) => event.type)).toEqual(['speech_started'])
  })

  test('a monologue is cut at maxUtteranceMs', () => {
    const detector = createTurnDetector(loudIsSpeech, { maxUtteranceMs: 2000, preRollMs: 0 })
    const { events } = feed(detector, tone(3000), 0)
    const utterances = events.filter((event) => event.type === 'utterance')
    expect(utterances).toHaveLength(1)
    expect((utterances[0] as Extract<TurnEvent, { type: 'utterance' }>).pcm.length).toBe(16 * 2000)
  })

  test('chunks of any size are regrouped into 20 ms frames with the right arrival times', () => {
    const detector = createTurnDetector(loudIsSpeech)
    const audio = tone(1000)
    const events: TurnEvent[] = []
    for (let at = 0; at < audio.length; at += 480)
      events.push(...detector.push(audio.subarray(at, at + 480), (at + 480) / 16))
    expect(events).toEqual([{ type: 'speech_started', atMs: DEFAULT_TURN_PARAMETERS.startMs }])
  })
})

describe('turn detector on real speech (Flite voice, WebRTC VAD, the telephone path)', () => {
  let tts: FliteTts
  let engine: VadEngine
  beforeAll(async () => {
    ;[tts, engine] = await Promise.all([createFliteTts(), loadVadEngine()])
  })
  afterAll(() => tts.close())

  async function speak(text: string): Promise<Int16Array> {
    const chunks: Int16Array[] = []
    for await (const chunk of tts.synthesize(text)) chunks.push(resample(chunk.pcm, chunk.sampleRate, 16000))
    return chunks[0]
  }

  /** 16 kHz → 8 kHz µ-law (what Asterisk carries) → back to 16 kHz, in 20 ms frames, as the call path does. */
  function overTheLine(pcm16k: Int16Array): Int16Array {
    const toLine = createResampler(16000, 8000)
    const fromLine = createResampler(8000, 16000)
    return fromLine.process(ulawToPcm16(pcm16ToUlaw(toLine.process(pcm16k))))
  }

  test('VAD: speech is mostly speech; silence and steady white noise are not (a fresh detector each)', async () => {
    const voicedShare = (audio: Int16Array) => {
      const vad = engine.createVad(3)
      let voiced = 0
      for (let at = 0; at + VAD_FRAME_SAMPLES <= audio.length; at += VAD_FRAME_SAMPLES)
        if (vad.isSpeech(audio.subarray(at, at + VAD_FRAME_SAMPLES))) voiced++
      vad.free()
      expect(() => vad.isSpeech(quiet(20))).toThrow('after free')
      return voiced / Math.floor(audio.length / VAD_FRAME_SAMPLES)
    }
    expect(
      voicedShare(overTheLine(await speak('I would like to book an appointment for next Tuesday, please.'))),
    ).toBeGreaterThan(0.7)
    expect(voicedShare(quiet(2000))).toBe(0)
    expect(voicedShare(noise(16000, 3000, 2000))).toBeLessThan(0.1)
  })

  test('one spoken sentence between silences is one utterance, starting and ending around the speech', async () => {
    const speech = overTheLine(await speak('Hello, I am calling about my order from last week.'))
    const vad = engine.createVad(3)
    const detector = createTurnDetector(vad)
    const lead = feed(detector, quiet(1000), 0)
    const talk = feed(detector, speech, lead.endMs)
    const tail = feed(detector, quiet(1500), talk.endMs)
    const events = withoutPauses([...lead.events, ...talk.events, ...tail.events])
    expect(events.map((event) => event.type)).toEqual(['speech_started', 'utterance'])
    const utterance = events[1] as Extract<TurnEvent, { type: 'utterance' }>
    expect(utterance.startedAtMs).toBeGreaterThanOrEqual(lead.endMs - DEFAULT_TURN_PARAMETERS.preRollMs)
    expect(utterance.startedAtMs).toBeLessThan(lead.endMs + 300)
    expect(utterance.endedAtMs).toBeGreaterThan(talk.endMs - 500)
    expect(utterance.endedAtMs).toBeLessThanOrEqual(talk.endMs + DEFAULT_TURN_PARAMETERS.stopMs)
    expect(utterance.pcm.length / 16).toBeGreaterThan((speech.length / 16) * 0.8)
    vad.free()
  })

  test('the same sentence sent only while sound flows (no frames in silence) ends by tick()', async () => {
    const speech = overTheLine(await speak('Yes, that works for me.'))
    const vad = engine.createVad(3)
    const detector = createTurnDetector(vad)
    const talk = feed(detector, speech, 5000)
    expect(withoutPauses(talk.events).map((event) => event.type)).toEqual(['speech_started'])
    const ended = withoutPauses(detector.tick(talk.endMs + DEFAULT_TURN_PARAMETERS.stopMs))
    expect(ended.map((event) => event.type)).toEqual(['utterance'])
    vad.free()
  })
})
