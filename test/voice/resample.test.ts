import { describe, expect, test } from 'bun:test'
import { createResampler, rateConverter, resample } from '../../src/lib/resample.ts'
import { dominantFrequency, sine, toneAmplitude } from '../support/audio.ts'

/** Skips the filter's start-up (its history starts silent). */
function settled(samples: Int16Array, sampleRate: number): Int16Array {
  return samples.subarray(Math.round(sampleRate * 0.05))
}

describe('resampler', () => {
  for (const [fromRate, toRate] of [
    [8000, 16000],
    [24000, 8000],
    [16000, 8000],
  ]) {
    test(`${fromRate} → ${toRate} Hz: a 1 kHz tone stays 1 kHz at the same level, duration kept`, () => {
      const input = sine(1000, fromRate, 500)
      const output = resample(input, fromRate, toRate)
      expect(output.length).toBe((input.length * toRate) / fromRate)
      const steady = settled(output, toRate)
      expect(dominantFrequency(steady, toRate)).toBe(1000)
      expect(toneAmplitude(steady, 1000, toRate)).toBeGreaterThan(10_000 * 0.97)
      expect(toneAmplitude(steady, 1000, toRate)).toBeLessThan(10_000 * 1.03)
    })
  }

  test('speech-band content survives 24 → 8 kHz: 3.3 kHz keeps ≥ 90 % of its level', () => {
    const output = settled(resample(sine(3300, 24000, 500), 24000, 8000), 8000)
    expect(toneAmplitude(output, 3300, 8000)).toBeGreaterThan(9000)
  })

  test('24 → 8 kHz suppresses aliasing: a 6 kHz tone does not fold onto 2 kHz (≥ 60 dB down)', () => {
    const output = settled(resample(sine(6000, 24000, 500), 24000, 8000), 8000)
    expect(toneAmplitude(output, 2000, 8000)).toBeLessThan(10_000 / 1000)
  })

  test('16 → 8 kHz suppresses aliasing: a 5 kHz tone does not fold onto 3 kHz (≥ 60 dB down)', () => {
    const output = settled(resample(sine(5000, 16000, 500), 16000, 8000), 8000)
    expect(toneAmplitude(output, 3000, 8000)).toBeLessThan(10_000 / 1000)
  })

  test.each([24000, 16000])(
    '%i → 8 kHz folds nothing into the telephone band: a 4.7 kHz tone does not land on 3.3 kHz (≥ 60 dB down)',
    (fromRate) => {
      const output = settled(resample(sine(4700, fromRate, 500), fromRate, 8000), 8000)
      expect(toneAmplitude(output, 3300, 8000)).toBeLessThan(10_000 / 1000)
    },
  )

  test('8 → 16 kHz stops at 4 kHz: a 3.3 kHz tone gets no 4.7 kHz image (≥ 60 dB down)', () => {
    const output = settled(resample(sine(3300, 8000, 500), 8000, 16000), 16000)
    expect(toneAmplitude(output, 4700, 16000)).toBeLessThan(10_000 / 1000)
  })

  test('8 → 16 kHz leaves no image: a 1 kHz tone gets no 7 kHz mirror (≥ 60 dB down)', () => {
    const output = settled(resample(sine(1000, 8000, 500), 8000, 16000), 16000)
    expect(toneAmplitude(output, 7000, 16000)).toBeLessThan(10_000 / 1000)
  })

  test('streaming in uneven chunks gives exactly the one-shot result', () => {
    const input = sine(700, 24000, 300)
    const whole = resample(input, 24000, 8000)
    const streaming = createResampler(24000, 8000)
    const pieces: Int16Array[] = []
    for (let at = 0, size = 1; at < input.length; at += size, size = ((size * 7) % 997) + 1) {
      pieces.push(streaming.process(input.subarray(at, at + size)))
    }
    const joined = new Int16Array(pieces.reduce((total, piece) => total + piece.length, 0))
    let offset = 0
    for (const piece of pieces) joined.set(piece, offset), (offset += piece.length)
    expect(whole).toEqual(joined)
  })

  test('a reset resampler starts a new stream: its output is exactly a fresh resampler’s', () => {
    const first = sine(700, 24000, 300)
    const second = sine(1300, 24000, 200)
    const reused = createResampler(24000, 8000)
    reused.process(first)
    reused.reset()
    // in two uneven pieces, one of them longer than a work block
    const again = [reused.process(second.subarray(0, 4700)), reused.process(second.subarray(4700))]
    expect([...again[0], ...again[1]]).toEqual([...createResampler(24000, 8000).process(second)])
  })

  test('a rate converter keeps one stream across pieces (no restart of the filter at each), and passes the line rate as is', () => {
    const toLine = rateConverter(8000)
    const speech = sine(700, 16000, 300)
    // pieces of a stream (the built-in voice's chunks): together exactly the one-shot result
    const pieces = [speech.subarray(0, 1000), speech.subarray(1000, 3300), speech.subarray(3300)]
    expect(pieces.flatMap((piece) => [...toLine.convert(piece, 16000)])).toEqual([...resample(speech, 16000, 8000)])
    const line = sine(700, 8000, 20)
    expect(toLine.convert(line, 8000)).toBe(line)
    toLine.restart()
    expect(toLine.convert(speech, 16000)).toEqual(resample(speech, 16000, 8000))
  })

  test('160 samples of 8 kHz always become 320 samples of 16 kHz', () => {
    const resampler = createResampler(8000, 16000)
    for (let frame = 0; frame < 10; frame++) expect(resampler.process(new Int16Array(160)).length).toBe(320)
  })
})
