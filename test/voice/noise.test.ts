import { beforeAll, describe, expect, test } from 'bun:test'
import { loadNoiseEngine, type NoiseEngine } from '../../src/voice/noise'
import { noise, rms } from '../support/audio'
import { callerSpeech, concatPcm } from '../support/voice'

let engine: NoiseEngine
beforeAll(async () => {
  engine = await loadNoiseEngine()
})

/** Feeds `audio` in 20 ms chunks, as the line brings it; returns everything the suppressor gave back. */
function denoise(audio: Int16Array, inputRate: number, outputRate: number): Int16Array {
  const suppressor = engine.createSuppressor(inputRate, outputRate)
  const chunk = (inputRate / 1000) * 20
  const out: Int16Array[] = []
  for (let at = 0; at < audio.length; at += chunk) out.push(suppressor.process(audio.subarray(at, at + chunk)))
  suppressor.free()
  return concatPcm(out)
}

describe('noise suppression (RNNoise WASM)', () => {
  test('steady noise is mostly removed; speech mixed with it keeps its level; 8 kHz in, 16 kHz out, a frame behind at most', async () => {
    const hiss = noise(8000, 3000, 1500)
    const quiet = denoise(hiss, 8000, 16000)
    expect(quiet.length).toBeGreaterThanOrEqual(16 * 3000 - 16 * 10)
    // the last two seconds (RNNoise needs a moment to learn the noise)
    expect(rms(quiet.subarray(16_000))).toBeLessThan(rms(hiss) / 4)

    const speech = await callerSpeech('Can I book a table for two tonight at eight?')
    const noisy = speech.map((sample, index) => Math.max(-32768, Math.min(32767, sample + hiss[index % hiss.length])))
    const cleaned = denoise(noisy, 8000, 16000)
    expect(rms(cleaned)).toBeGreaterThan(rms(speech) * 0.5)
  })
})
