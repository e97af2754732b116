/** Signals and measurements for audio tests. */

export function sine(frequencyHz: number, sampleRate: number, durationMs: number, amplitude = 10_000): Int16Array {
  const samples = new Int16Array(Math.round((sampleRate * durationMs) / 1000))
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * i) / sampleRate))
  return samples
}

/** Deterministic white noise (a linear congruential generator), so a failing test fails the same way again. */
export function noise(sampleRate: number, durationMs: number, amplitude: number, seed = 1): Int16Array {
  const samples = new Int16Array(Math.round((sampleRate * durationMs) / 1000))
  let state = seed
  for (let i = 0; i < samples.length; i++) {
    state = (state * 1_103_515_245 + 12_345) >>> 0
    samples[i] = Math.round(((state / 0xffffffff) * 2 - 1) * amplitude)
  }
  return samples
}

export function rms(samples: Int16Array): number {
  let sum = 0
  for (const sample of samples) sum += sample * sample
  return Math.sqrt(sum / Math.max(1, samples.length))
}

/** Amplitude of the `frequencyHz` component (a single DFT bin, Goertzel), comparable between frequencies. */
export function toneAmplitude(samples: Int16Array, frequencyHz: number, sampleRate: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRate)
  let previous = 0
  let beforePrevious = 0
  for (const sample of samples) {
    const current = sample + coefficient * previous - beforePrevious
    beforePrevious = previous
    previous = current
  }
  const power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
  return (2 * Math.sqrt(Math.max(0, power))) / samples.length
}

/** The strongest frequency among 10 Hz steps up to Nyquist. */
export function dominantFrequency(samples: Int16Array, sampleRate: number): number {
  let best = 0
  let bestAmplitude = -1
  for (let frequency = 10; frequency < sampleRate / 2; frequency += 10) {
    const amplitude = toneAmplitude(samples, frequency, sampleRate)
    if (amplitude > bestAmplitude) {
      bestAmplitude = amplitude
      best = frequency
    }
  }
  return best
}

/** The `size` samples (aligned on `size`) with the most energy: where a sound in a mostly silent track is. */
export function loudestWindow(samples: Int16Array, size: number): Int16Array {
  let best = 0
  let bestEnergy = -1
  for (let start = 0; start + size <= samples.length; start += size) {
    let energy = 0
    for (let i = start; i < start + size; i++) energy += samples[i] * samples[i]
    if (energy > bestEnergy) {
      bestEnergy = energy
      best = start
    }
  }
  return samples.subarray(best, best + size)
}
