/**
 * What the knowledge base takes: file types by extension (with the MIME types an upload may declare for them) and the
 * bounds that keep one document from costing the server more than a document should.
 */

export type DocumentFormat = 'pdf' | 'docx' | 'text' | 'markdown' | 'csv' | 'json'

export const FORMATS: Record<string, { format: DocumentFormat; mimeTypes: string[] }> = {
  '.pdf': { format: 'pdf', mimeTypes: ['application/pdf'] },
  '.docx': { format: 'docx', mimeTypes: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document'] },
  '.txt': { format: 'text', mimeTypes: ['text/plain'] },
  '.md': { format: 'markdown', mimeTypes: ['text/markdown', 'text/x-markdown', 'text/plain'] },
  '.markdown': { format: 'markdown', mimeTypes: ['text/markdown', 'text/x-markdown', 'text/plain'] },
  '.csv': { format: 'csv', mimeTypes: ['text/csv', 'application/csv', 'text/plain'] },
  '.json': { format: 'json', mimeTypes: ['application/json', 'text/plain'] },
}

export const EXTENSIONS = Object.keys(FORMATS)

/** Also accepted for every type: what browsers and curl send when they do not know better. */
export const GENERIC_MIME_TYPE = 'application/octet-stream'

export const extensionOf = (filename: string): string => /\.[A-Za-z0-9]+$/.exec(filename)?.[0].toLowerCase() ?? ''

export const formatOf = (filename: string): DocumentFormat | null => FORMATS[extensionOf(filename)]?.format ?? null

export const DOCUMENT_LIMITS = {
  /** The largest file (the reference takes 5 MiB; a 300-page PDF of text is usually 1–10 MB). */
  maxBytes: 25 * 1024 * 1024,
  maxPages: 2000,
  /** Extracted text beyond this fails the document: about 1,500 pages of dense text. */
  maxCharacters: 5_000_000,
  /** A DOCX unpacks to at most this (zip bombs stop here). */
  maxUnpackedBytes: 100 * 1024 * 1024,
  maxZipEntries: 5000,
  /** Extraction runs in a worker thread that is stopped after this long. */
  extractionTimeoutMs: 120_000,
  /** full_document text is sent whole to the model on every retrieval: bounded so one document cannot fill its context. */
  maxFullDocumentCharacters: 60_000,
}
