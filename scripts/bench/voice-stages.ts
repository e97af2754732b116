// Cost of each pure voice stage on this machine: `bun scripts/bench/voice-stages.ts`. Prints the median of several
// rounds per stage, per unit of audio, and the share of one core a call would spend on it in real time.
import { createFliteTts } from '../../src/voice/flite'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711'
import { createCallRecorder } from '../../src/voice/recorder'
import { createResampler } from '../../src/lib/resample'
import { createSentenceSplitter } from '../../src/voice/sentences'
import { createTurnDetector } from '../../src/voice/turns'
import { loadVadEngine, VAD_FRAME_SAMPLES } from '../../src/voice/vad'
import { encodeWav } from '../../src/lib/wav'

const ROUNDS = 7

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1]
}

function measure(run: () => void): number {
  run() // warm-up: JIT and WASM tiers
  const times: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now()
    run()
    times.push(performance.now() - started)
  }
  return median(times)
}

function report(stage: string, ms: number, per: string, audioMs?: number): void {
  const share = audioMs ? `  (${((ms / audioMs) * 100).toFixed(3)} % of a core in real time)` : ''
  console.log(`${stage.padEnd(44)} ${ms.toFixed(3).padStart(9)} ms ${per}${share}`)
}

const tone = (rate: number, seconds: number) =>
  Int16Array.from({ length: rate * seconds }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)))

const second8k = tone(8000, 1)
const ulawSecond = pcm16ToUlaw(second8k)
report(
  'µ-law decode, 50 frames of 160 bytes',
  measure(() => {
    for (let f = 0; f < 50; f++) ulawToPcm16(ulawSecond.subarray(f * 160, f * 160 + 160))
  }),
  'per second of audio',
  1000,
)
report(
  'µ-law encode',
  measure(() => pcm16ToUlaw(second8k)),
  'per second of audio',
  1000,
)

for (const [from, to, chunk] of [
  [8000, 16000, 160],
  [24000, 8000, 2400],
  [16000, 8000, 1600],
]) {
  const input = tone(from, 1)
  report(
    `resample ${from / 1000}→${to / 1000} kHz in ${(chunk / from) * 1000} ms chunks`,
    measure(() => {
      const resampler = createResampler(from, to)
      for (let at = 0; at < input.length; at += chunk) resampler.process(input.subarray(at, at + chunk))
    }),
    'per second of audio',
    1000,
  )
}

const engine = await loadVadEngine()
const tts = await createFliteTts()
const text = 'Thank you for calling. I can help you book, move or cancel an appointment today.'
let speech16k: Int16Array = new Int16Array(0)
const fliteTimes: number[] = []
for (let round = 0; round < ROUNDS + 1; round++) {
  const started = performance.now()
  for await (const chunk of tts.synthesize(text)) speech16k = chunk.pcm
  if (round > 0) fliteTimes.push(performance.now() - started)
}
const speechMs = (speech16k.length / 16000) * 1000
report(`Flite (slt), ${(speechMs / 1000).toFixed(1)} s of 16 kHz speech`, median(fliteTimes), 'per sentence')
tts.close()

const vad = engine.createVad(3)
const frames = Math.floor(speech16k.length / VAD_FRAME_SAMPLES)
report(
  `VAD (fvad mode 3), ${frames} frames of 20 ms`,
  measure(() => {
    for (let f = 0; f < frames; f++)
      vad.isSpeech(speech16k.subarray(f * VAD_FRAME_SAMPLES, (f + 1) * VAD_FRAME_SAMPLES))
  }) / frames,
  'per 20 ms frame',
  20,
)

report(
  'turn detector incl. VAD, per 20 ms frame',
  measure(() => {
    const detector = createTurnDetector(vad)
    for (let f = 0; f < frames; f++)
      detector.push(speech16k.subarray(f * VAD_FRAME_SAMPLES, (f + 1) * VAD_FRAME_SAMPLES), f * 20 + 20)
    detector.tick(frames * 20 + 1000)
  }) / frames,
  'per 20 ms frame',
  20,
)

const reply = 'Sure. Dr. Smith can see you on Tuesday at 3.30 p.m., e.g. right after lunch. Shall I book it? '.repeat(5)
const tokens = reply.match(/.{1,4}/g)!
report(
  'sentence splitter, 4-char tokens',
  measure(() => {
    const splitter = createSentenceSplitter()
    for (const token of tokens) splitter.push(token)
    splitter.flush()
  }) / tokens.length,
  'per token',
)

report(
  'recorder: 10-minute call → 3 WAVs',
  measure(() => {
    const recorder = createCallRecorder(0)
    for (let atMs = 20; atMs <= 600_000; atMs += 20) recorder.caller(second8k.subarray(0, 160), atMs)
    for (let atMs = 0; atMs < 600_000; atMs += 1000) recorder.agent(second8k.subarray(0, 4000), atMs)
    recorder.finish()
  }),
  'per call',
)
const utterance = tone(16000, 10)
report(
  'WAV encode, 10 s of 16 kHz mono (an STT upload)',
  measure(() => encodeWav(utterance, 16000)),
  'per utterance',
)
