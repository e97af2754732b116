import type { ExtractedText, ExtractionAnswer, ExtractionRequest } from './extract-text'
import { DOCUMENT_LIMITS } from './formats'

/**
 * Extraction off the main thread: one worker per document, stopped when it answers or after the time limit, so a PDF
 * built to make the parser spin, or one that exhausts it, fails that document only; the server keeps answering.
 */

/**
 * From source the worker sits beside this file; in the compiled binary it is an entry point of its own that keeps its
 * place below src/ (`knowledge/extract-worker.js`, see scripts/build.ts and src/voice/builtin-voice.ts).
 */
const WORKER_URL = new URL(
  import.meta.url.includes('/$bunfs/') ? './knowledge/extract-worker.ts' : './extract-worker.ts',
  import.meta.url,
)

export class ExtractionError extends Error {}

export function extractInWorker(
  request: ExtractionRequest,
  { timeoutMs = DOCUMENT_LIMITS.extractionTimeoutMs, signal }: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ExtractedText> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_URL)
    const onAbort = () => finish(() => reject(signal!.reason))
    const finish = (settle: () => void) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      worker.terminate()
      settle()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(new ExtractionError(`reading the file took longer than ${Math.round(timeoutMs / 1000)} s`)),
        ),
      timeoutMs,
    )
    worker.onmessage = (event: MessageEvent<ExtractionAnswer>) => {
      const answer = event.data
      finish(() => (answer.ok ? resolve(answer) : reject(new ExtractionError(answer.error))))
    }
    worker.onerror = (event) => finish(() => reject(new ExtractionError(`reading the file failed: ${event.message}`)))
    worker.postMessage(request, [request.bytes.buffer as ArrayBuffer])
  })
}
