/**
 * Worker thread of document extraction (see extract.ts): parses one file off the main thread, so a slow or hostile
 * document never holds up calls or HTTP. Its own entrypoint in scripts/build.ts, so the compiled binary carries it.
 */
import { extractDocumentText, type ExtractionAnswer, type ExtractionRequest } from './extract-text'

declare const self: Worker

self.onmessage = async (event: MessageEvent<ExtractionRequest>) => {
  try {
    self.postMessage({ ok: true, ...(await extractDocumentText(event.data)) } satisfies ExtractionAnswer)
  } catch (error) {
    self.postMessage({
      ok: false,
      error: error instanceof Error ? error.message : String(error),
    } satisfies ExtractionAnswer)
  }
}
