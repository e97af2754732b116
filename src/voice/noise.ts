/**
 * Noise suppression: RNNoise (Xiph/Mozilla, BSD-3) compiled to WASM. Like the VAD (vad.ts), the WASM file is imported
 * as a file asset, so `bun build --compile` embeds it. RNNoise works on 10 ms frames of 48 kHz audio (480 samples,
 * float in the 16-bit range); `createSuppressor` takes telephone audio at any rate, resamples it to 48 kHz, denoises
 * it and gives it back at `outputRate`, a frame (10 ms) behind at most.
 */
import createRnnoiseModule from '@echogarden/rnnoise-wasm'
import rnnoiseWasmPath from '@echogarden/rnnoise-wasm/rnnoise.wasm' with { type: 'file' }
import { createResampler } from '../lib/resample'

export const RNNOISE_RATE = 48_000
const RNNOISE_FRAME = 480

export type NoiseSuppressor = {
  /** Audio at the input rate in; denoised audio at the output rate out (possibly empty while a frame fills). */
  process(pcm: Int16Array): Int16Array
  /** Releases the WASM memory; the suppressor must not be used afterwards. */
  free(): void
}

/** One loaded WASM instance; it hosts any number of suppressors (one per call). */
export type NoiseEngine = { createSuppressor(inputRate: number, outputRate: number): NoiseSuppressor }

let loadedEngine: Promise<NoiseEngine> | null = null

/** The process's one engine, loaded on first use: one, like the VAD's (see loadVadEngine in vad.ts). */
export function loadNoiseEngine(): Promise<NoiseEngine> {
  loadedEngine ??= loadEngine()
  return loadedEngine
}

async function loadEngine(): Promise<NoiseEngine> {
  const wasmBinary = new Uint8Array(await Bun.file(rnnoiseWasmPath).arrayBuffer())
  const rnnoise = await createRnnoiseModule({ wasmBinary })
  return {
    createSuppressor(inputRate, outputRate) {
      const state = rnnoise._rnnoise_create(0)
      if (state === 0) throw new Error('rnnoise_create failed: out of memory')
      const frameBuffer = rnnoise._malloc(RNNOISE_FRAME * 4)
      const upsampler = createResampler(inputRate, RNNOISE_RATE)
      const downsampler = createResampler(RNNOISE_RATE, outputRate)
      const pending = new Float32Array(RNNOISE_FRAME)
      let pendingLength = 0
      let freed = false

      function denoiseFrame(into: Int16Array, at: number): void {
        const heap = rnnoise.HEAPF32 // re-read each time: memory growth replaces it
        heap.set(pending, frameBuffer >> 2)
        rnnoise._rnnoise_process_frame(state, frameBuffer, frameBuffer)
        const out = rnnoise.HEAPF32.subarray(frameBuffer >> 2, (frameBuffer >> 2) + RNNOISE_FRAME)
        for (let i = 0; i < RNNOISE_FRAME; i++) into[at + i] = Math.max(-32768, Math.min(32767, Math.round(out[i])))
      }

      return {
        process(pcm) {
          if (freed) throw new Error('noise suppressor used after free()')
          const upsampled = upsampler.process(pcm)
          const frames = Math.floor((pendingLength + upsampled.length) / RNNOISE_FRAME)
          const denoised = new Int16Array(frames * RNNOISE_FRAME)
          let offset = 0
          for (let frame = 0; frame < frames; frame++) {
            const take = RNNOISE_FRAME - pendingLength
            for (let i = 0; i < take; i++) pending[pendingLength + i] = upsampled[offset + i]
            offset += take
            pendingLength = 0
            denoiseFrame(denoised, frame * RNNOISE_FRAME)
          }
          for (; offset < upsampled.length; offset++) pending[pendingLength++] = upsampled[offset]
          return downsampler.process(denoised)
        },
        free() {
          if (freed) return
          freed = true
          rnnoise._free(frameBuffer)
          rnnoise._rnnoise_destroy(state)
        },
      }
    },
  }
}
