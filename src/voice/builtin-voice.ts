/**
 * The built-in voice as calls use it: Flite (flite.ts) running in worker threads, so synthesis never blocks the event
 * loop that carries every call's audio (measured: 50–500 ms per sentence under load, in-thread). The workers are
 * shared by all calls and live as long as the process (unref'd: they never keep it alive); each compiles Flite's
 * WASM once, instead of once per call. Requests go to the worker with the fewest pending.
 */
import { ModelServerError } from '../models/types'
import { FLITE_REF, knownVoice, type FliteTts, type FliteVoice } from './flite'
import type { FliteAnswer, FliteRequest } from './flite-worker'

type Pending = { resolve(answer: { pcm: Int16Array; sampleRate: number }): void; reject(error: Error): void }
type FliteWorker = { worker: Worker; pending: Map<number, Pending> }

/** Flite is CPU-bound: one worker per spare core, at most two (each holds a compiled 21 MB module). */
const WORKER_COUNT = Math.max(1, Math.min(2, navigator.hardwareConcurrency - 1))

/**
 * The worker's code. From source it sits beside this file. In the compiled binary this module is bundled into the
 * executable's one file at the root of its embedded filesystem (`/$bunfs/root/`), and the worker, an entry point of
 * its own (scripts/build.ts), keeps its place below src/: `voice/flite-worker.js`, which Bun finds by its source name.
 */
const WORKER_URL = new URL(
  import.meta.url.includes('/$bunfs/') ? './voice/flite-worker.ts' : './flite-worker.ts',
  import.meta.url,
)

let workers: FliteWorker[] | null = null
let requestCount = 0

function startWorker(): FliteWorker {
  const entry: FliteWorker = { worker: new Worker(WORKER_URL), pending: new Map() }
  entry.worker.unref()
  entry.worker.onmessage = (event: MessageEvent<FliteAnswer>) => {
    const answer = event.data
    const waiting = entry.pending.get(answer.id)
    entry.pending.delete(answer.id)
    if (!waiting) return
    if ('error' in answer)
      waiting.reject(Object.assign(new ModelServerError('the built-in voice failed'), { cause: answer.error }))
    else waiting.resolve(answer)
  }
  entry.worker.onerror = (event) => {
    // A dead worker fails what it had and is replaced.
    for (const waiting of entry.pending.values())
      waiting.reject(Object.assign(new ModelServerError('the built-in voice failed'), { cause: event.message }))
    entry.pending.clear()
    entry.worker.terminate()
    workers = workers?.map((candidate) => (candidate === entry ? startWorker() : candidate)) ?? null
  }
  return entry
}

function synthesizeInWorker(voice: FliteVoice, text: string): Promise<{ pcm: Int16Array; sampleRate: number }> {
  workers ??= Array.from({ length: WORKER_COUNT }, startWorker)
  const entry = workers.reduce((least, candidate) => (candidate.pending.size < least.pending.size ? candidate : least))
  const id = ++requestCount
  return new Promise((resolve, reject) => {
    entry.pending.set(id, { resolve, reject })
    entry.worker.postMessage({ id, voice, text } satisfies FliteRequest)
  })
}

/** A TtsClient speaking with the built-in voice; `close` is a no-op (the workers are shared). */
export function createBuiltinVoice(options: { voice?: FliteVoice } = {}): FliteTts {
  const voice = knownVoice(options.voice)
  return {
    ref: FLITE_REF,
    async *synthesize(text, synthesizeOptions) {
      const signal = synthesizeOptions?.signal
      signal?.throwIfAborted()
      if (text.trim() === '') return
      const speech = await synthesizeInWorker(voice, text)
      signal?.throwIfAborted()
      if (speech.pcm.length > 0) yield speech
    },
    close() {},
  }
}
