/**
 * WebRTC voice activity detection (libfvad compiled to WASM, BSD-3). The WASM file is imported as a file asset,
 * so `bun build --compile` embeds it and it is read from the binary's own filesystem at run time.
 */
import createFvadModule from '@echogarden/fvad-wasm'
import fvadWasmPath from '@echogarden/fvad-wasm/fvad.wasm' with { type: 'file' }

export const VAD_SAMPLE_RATE = 16_000
/** fvad takes 10, 20 or 30 ms frames; the pipeline uses 20 ms (what telephony media carries). */
export const VAD_FRAME_SAMPLES = 320

/** 0 = least aggressive (most audio counted as speech) … 3 = most aggressive (best against line noise). */
export type VadMode = 0 | 1 | 2 | 3

export type Vad = {
  /** Whether one 20 ms frame of 16 kHz PCM holds speech. */
  isSpeech(frame: Int16Array): boolean
  /** Releases the detector's WASM memory; the Vad must not be used afterwards. */
  free(): void
}

/** One loaded WASM instance; it hosts any number of detectors (one per call). */
export type VadEngine = { createVad(mode: VadMode): Vad }

let loadedEngine: Promise<VadEngine> | null = null

/**
 * The process's one engine, loaded on first use. One, not one per server: with an engine per server, a process running
 * many servers (the test suite) kept so many WebAssembly instances alive that JavaScriptCore ran out of its fast
 * memories (eight per process), and the built-in voice, which makes an instance per sentence, then took ~5 s a sentence
 * instead of ~0.15 s.
 */
export function loadVadEngine(): Promise<VadEngine> {
  loadedEngine ??= loadEngine()
  return loadedEngine
}

async function loadEngine(): Promise<VadEngine> {
  const wasmBinary = new Uint8Array(await Bun.file(fvadWasmPath).arrayBuffer())
  const fvad = await createFvadModule({ wasmBinary })
  return {
    createVad(mode) {
      const handle = fvad._fvad_new()
      if (handle === 0) throw new Error('fvad_new failed: out of memory')
      fvad._fvad_set_mode(handle, mode)
      fvad._fvad_set_sample_rate(handle, VAD_SAMPLE_RATE)
      const frameBuffer = fvad._malloc(VAD_FRAME_SAMPLES * 2)
      let freed = false
      return {
        isSpeech(frame) {
          if (freed) throw new Error('VAD used after free()')
          if (frame.length !== VAD_FRAME_SAMPLES)
            throw new Error(`VAD frames are ${VAD_FRAME_SAMPLES} samples, got ${frame.length}`)
          fvad.HEAP16.set(frame, frameBuffer >> 1) // HEAP16 is re-read each time: memory growth replaces it
          const verdict = fvad._fvad_process(handle, frameBuffer, VAD_FRAME_SAMPLES)
          if (verdict < 0) throw new Error('fvad_process rejected the frame')
          return verdict === 1
        },
        free() {
          if (freed) return
          freed = true
          fvad._free(frameBuffer)
          fvad._fvad_free(handle)
        },
      }
    },
  }
}
