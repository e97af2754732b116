import { expect } from 'bun:test'
import { writeZip } from '../../src/lib/zip'
import { knowledgeBaseChunks, knowledgeBaseDocuments, type KnowledgeDocumentRow } from '../../src/db/schema'
import { vectorBytes } from '../../src/knowledge/vector-index'
import type { AppContext } from '../../src/context'
import type { TestApp } from './app'

/**
 * Knowledge-base fixtures made on the spot (a PDF written as text, a DOCX zipped by src/lib/zip.ts) and the upload
 * flow a client follows: upload URL, signed PUT, process-document.
 */

const encoder = new TextEncoder()

/** A valid PDF with one line of Helvetica text per page. */
export function pdfWithPages(pages: string[]): Uint8Array {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pages.map((_, index) => `${4 + index * 2} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  for (const [index, text] of pages.entries()) {
    const stream = `BT /F1 12 Tf 72 720 Td (${text.replace(/[()\\]/g, '\\$&')}) Tj ET`
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + index * 2} 0 R >>`,
    )
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`)
  }
  let out = '%PDF-1.4\n'
  const offsets = objects.map((body, index) => {
    const offset = out.length
    out += `${index + 1} 0 obj\n${body}\nendobj\n`
    return offset
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return encoder.encode(out)
}

/** A PDF header followed by a million tiny objects and no cross-reference table: the parser has to scan them all. */
export function pdfWithMillionObjects(): Uint8Array {
  const parts = ['%PDF-1.4\n']
  for (let index = 1; index <= 1_000_000; index++) parts.push(`${index} 0 obj null endobj\n`)
  parts.push('trailer\n<< /Root 1 0 R >>\n%%EOF\n')
  return encoder.encode(parts.join(''))
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
const RELS =
  '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** A minimal DOCX with one paragraph per string, deflated like Word writes it. */
export function docxWithParagraphs(paragraphs: string[]): Uint8Array {
  const body = paragraphs
    .map((text) => `<w:p><w:r><w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r></w:p>`)
    .join('')
  const document = `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`
  return writeZip(
    [
      { name: '[Content_Types].xml', data: encoder.encode(CONTENT_TYPES) },
      { name: '_rels/.rels', data: encoder.encode(RELS) },
      { name: 'word/document.xml', data: encoder.encode(document) },
    ],
    { deflate: true },
  )
}

/** A DOCX whose document.xml unpacks to `unpackedBytes` of zeros (about a thousandth of that packed). */
export function zipBombDocx(unpackedBytes: number): Uint8Array {
  return writeZip(
    [
      { name: '[Content_Types].xml', data: encoder.encode(CONTENT_TYPES) },
      { name: '_rels/.rels', data: encoder.encode(RELS) },
      { name: 'word/document.xml', data: new Uint8Array(unpackedBytes) },
    ],
    { deflate: true },
  )
}

export const MIME = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
}

type Client = Pick<TestApp, 'request'> & {
  put(url: string, body: Uint8Array, contentType: string): Promise<{ status: number; text: string }>
}

/** Upload URL → PUT → process-document; answers the process-document response (the document, or the error). */
export async function uploadDocument(
  client: Client,
  key: string,
  filename: string,
  bytes: Uint8Array,
  mimeType: string,
  retrievalMode: 'chunked' | 'full_document' = 'chunked',
) {
  const grant = await client.request('POST', '/api/v1/knowledge-base/upload-url', {
    key,
    body: { filename, mime_type: mimeType },
  })
  expect(grant.status, grant.text).toBe(200)
  const put = await client.put(grant.body.upload_url, bytes, mimeType)
  expect(put.status, put.text).toBe(200)
  return client.request('POST', '/api/v1/knowledge-base/process-document', {
    key,
    body: { document_uuid: grant.body.document_uuid, s3_key: grant.body.s3_key, retrieval_mode: retrievalMode },
  })
}

/** `put` for an in-process test app: the signed URL's path and query through app.handle. */
export function inProcessClient(t: TestApp): Client {
  return {
    request: t.request,
    async put(url, body, contentType) {
      const { pathname, search } = new URL(url)
      const response = await t.app.handle(
        new Request(`http://localhost${pathname}${search}`, {
          method: 'PUT',
          body,
          headers: { 'content-type': contentType },
        }),
      )
      return { status: response.status, text: await response.text() }
    },
  }
}

/** `put` for a server over HTTP at `base`: the signed URL's path and query sent there (the URL may name PUBLIC_URL). */
export function httpClient(t: Pick<TestApp, 'request'>, base: string): Client {
  return {
    request: t.request,
    async put(url, body, contentType) {
      const { pathname, search } = new URL(url, base)
      const response = await fetch(`${base}${pathname}${search}`, {
        method: 'PUT',
        body,
        headers: { 'content-type': contentType },
      })
      return { status: response.status, text: await response.text() }
    },
  }
}

/** The connection and model `storeEmbeddedDocuments` says embedded its documents (no model server involved). */
export const STORED_EMBEDDER = { connectionUuid: 'stored', model: 'stored-embed' }

/**
 * Completed chunked documents of `organizationId` written straight into SQLite as ingest writes them, one per entry of
 * `documents` (its chunks' vectors, normalised by the caller), without extraction or a model server.
 */
export function storeEmbeddedDocuments(
  ctx: AppContext,
  organizationId: number,
  documents: Float32Array[][],
): KnowledgeDocumentRow[] {
  const now = new Date().toISOString()
  return documents.map((vectors, index) =>
    ctx.db.transaction((tx) => {
      const document = tx
        .insert(knowledgeBaseDocuments)
        .values({
          documentUuid: crypto.randomUUID(),
          organizationId,
          filename: `document-${index}.txt`,
          fileKey: `stored/${organizationId}/${index}`,
          mimeType: 'text/plain',
          retrievalMode: 'chunked',
          processingStatus: 'completed',
          totalChunks: vectors.length,
          embeddingConnectionUuid: STORED_EMBEDDER.connectionUuid,
          embeddingModel: STORED_EMBEDDER.model,
          embeddingDimension: vectors[0].length,
          createdAt: now,
          updatedAt: now,
          completedAt: now,
        })
        .returning()
        .get()
      for (let start = 0; start < vectors.length; start += 500)
        tx.insert(knowledgeBaseChunks)
          .values(
            vectors.slice(start, start + 500).map((vector, offset) => ({
              documentId: document.id,
              organizationId,
              chunkIndex: start + offset,
              chunkText: `chunk ${start + offset} of document ${index}`,
              contextualizedText: `chunk ${start + offset} of document ${index}`,
              tokenCount: 8,
              embedding: vectorBytes(vector),
            })),
          )
          .run()
      return document
    }),
  )
}
