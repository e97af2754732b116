/**
 * Streaming rational resampler (polyphase FIR, Kaiser-windowed sinc). One instance per audio stream: it keeps the
 * filter history across chunks, so chunk boundaries leave no clicks. The low-pass sits below the lower of the two
 * Nyquist frequencies, so downsampling is anti-aliased and upsampling removes the images.
 *
 * Used rates: 8 kHz → 16 kHz (caller audio for VAD/STT), 24 kHz → 8 kHz (OpenAI-compatible PCM speech),
 * 16 kHz → 8 kHz (built-in voice). Any integer pair works.
 */

export type Resampler = {
  readonly fromRate: number
  readonly toRate: number
  /** Resamples the next chunk of the stream. The result is a fresh array (its length varies by ±1 between chunks). */
  process(input: Int16Array): Int16Array
  /**
   * Starts a new stream (silent history, no pending output) on the same filter and work memory: the next output is
   * exactly a fresh resampler's. One resampler serves every sentence of a call.
   */
  reset(): void
}

/** Kaiser window β for ≈ 80 dB stopband attenuation. */
const KAISER_BETA = 8
const STOPBAND_DB = 80
/**
 * The passband ends this fraction of the lower Nyquist frequency below it: at 8 kHz, 3.4 kHz (the telephone band).
 * Upsampling stops at Nyquist (4 kHz: no image at all). Downsampling stops as far above it (4.6 kHz): what lies
 * between folds back onto 3.4–4 kHz only, above the band, and the filter needs half the taps. Converting each call's
 * synthesised speech to the line is the voice's largest share of CPU.
 */
const TRANSITION_FRACTION = 0.15

function greatestCommonDivisor(a: number, b: number): number {
  return b === 0 ? a : greatestCommonDivisor(b, a % b)
}

function besselI0(x: number): number {
  let sum = 1
  let term = 1
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2
    sum += term
    if (term < sum * 1e-12) break
  }
  return sum
}

/**
 * Low-pass taps for the upsampled rate `up × fromRate`, grouped by phase: `phases[p][q]` multiplies input sample
 * `i − q` for output phase `p`. Gain `up` compensates the zeros that upsampling inserts.
 */
function designPolyphaseFilter(up: number, down: number): Float64Array[] {
  const lowerNyquist = 0.5 / Math.max(up, down) // as a fraction of the upsampled rate
  const passEdge = lowerNyquist * (1 - TRANSITION_FRACTION)
  const stopEdge = down > up ? lowerNyquist * (1 + TRANSITION_FRACTION) : lowerNyquist
  const transition = stopEdge - passEdge
  const cutoff = (passEdge + stopEdge) / 2
  const length = Math.ceil((STOPBAND_DB - 8) / (2.285 * 2 * Math.PI * transition) / up) * up + 1
  const tapsPerPhase = Math.ceil(length / up)
  const phases = Array.from({ length: up }, () => new Float64Array(tapsPerPhase))
  const middle = (length - 1) / 2
  const windowNorm = besselI0(KAISER_BETA)
  for (let n = 0; n < length; n++) {
    const offset = n - middle
    const sinc = offset === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * offset) / (Math.PI * offset)
    const window = besselI0(KAISER_BETA * Math.sqrt(1 - (offset / middle) ** 2)) / windowNorm
    phases[n % up][Math.floor(n / up)] = sinc * window * up
  }
  return phases
}

/**
 * Input samples filtered per pass: the work memory is fixed (history + one block, ≈ 35 KB of doubles), whatever the
 * chunk size: a whole synthesised sentence (≈ 30,000 samples) costs no allocation but its output.
 */
const BLOCK_SAMPLES = 4096

export function createResampler(fromRate: number, toRate: number): Resampler {
  const divisor = greatestCommonDivisor(fromRate, toRate)
  const up = toRate / divisor
  const down = fromRate / divisor
  const phases = designPolyphaseFilter(up, down)
  const historyLength = phases[0].length - 1
  // the last historyLength input samples, then the block being filtered
  const work = new Float64Array(historyLength + BLOCK_SAMPLES)
  // position of the next output in the upsampled domain, counted from the first sample of the next block
  let nextPosition = 0

  /** Filters `block` (at most BLOCK_SAMPLES) into `output` from `written`; returns the new count written. */
  function filterBlock(block: Int16Array, output: Int16Array, written: number): number {
    for (let i = 0; i < block.length; i++) work[historyLength + i] = block[i]
    const end = block.length * up
    let position = nextPosition
    for (; position < end; position += down) {
      const newest = historyLength + Math.floor(position / up)
      const sum = up === 1 ? symmetricSum(phases[0], work, newest) : phaseSum(phases[position % up], work, newest)
      output[written++] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : Math.round(sum)
    }
    nextPosition = position - end
    work.copyWithin(0, block.length, historyLength + block.length)
    return written
  }

  return {
    fromRate,
    toRate,
    process(input) {
      const end = input.length * up
      const output = new Int16Array(nextPosition < end ? Math.ceil((end - nextPosition) / down) : 0)
      let written = 0
      for (let start = 0; start < input.length; start += BLOCK_SAMPLES)
        written = filterBlock(input.subarray(start, start + BLOCK_SAMPLES), output, written)
      return output
    },
    reset() {
      work.fill(0, 0, historyLength)
      nextPosition = 0
    },
  }
}

function phaseSum(taps: Float64Array, work: Float64Array, newest: number): number {
  let sum = 0
  for (let q = 0; q < taps.length; q++) sum += taps[q] * work[newest - q]
  return sum
}

/**
 * The same sum for a symmetric filter (a pure decimation's single phase: the windowed sinc mirrors around its
 * middle): half the multiplications. Resampling synthesised speech is the voice's hottest loop.
 */
function symmetricSum(taps: Float64Array, work: Float64Array, newest: number): number {
  const last = taps.length - 1
  const oldest = newest - last
  let sum = last % 2 === 0 ? taps[last / 2] * work[newest - last / 2] : 0
  for (let q = 0; q < (last + 1) >> 1; q++) sum += taps[q] * (work[newest - q] + work[oldest + q])
  return sum
}

/** One stream of audio (a call's speech) to `toRate`, whatever rate each piece comes in. */
export type RateConverter = {
  /** A new stream of audio (a sentence): its output is exactly a fresh resampler's. */
  restart(): void
  convert(pcm: Int16Array, sampleRate: number): Int16Array
}

/**
 * Its resampler is made once, at the first rate it meets (again only if the rate changes), and keeps its history
 * across pieces, so piece boundaries leave no clicks. A fresh one per sentence or piece cost its filter design and a
 * work buffer each time, which with 100 calls answering at once held the event loop long enough to make agent audio
 * late.
 */
export function rateConverter(toRate: number): RateConverter {
  let resampler: Resampler | undefined
  return {
    restart: () => resampler?.reset(),
    convert(pcm, sampleRate) {
      if (sampleRate === toRate) return pcm
      if (resampler?.fromRate !== sampleRate) resampler = createResampler(sampleRate, toRate)
      return resampler.process(pcm)
    },
  }
}

/** Resamples a whole signal at once (a fresh resampler; the filter delay is included). */
export function resample(input: Int16Array, fromRate: number, toRate: number): Int16Array {
  return fromRate === toRate ? input.slice() : createResampler(fromRate, toRate).process(input)
}
