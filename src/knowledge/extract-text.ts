import { parse as parseCsv } from 'csv-parse/sync'
import mammoth from 'mammoth'
import { extractText, getDocumentProxy } from 'unpdf'
import { readZip, writeZip, ZipError } from '../lib/zip'
import { DOCUMENT_LIMITS, type DocumentFormat } from './formats'

/**
 * A file's text, by format, as blocks (a PDF page, a CSV row, the rest whole) for the chunker. Markdown headings stay
 * in the text (`# Title`) so chunks can carry their section; DOCX headings become Markdown ones. Runs in the
 * extraction worker; every failure is an Error whose message tells the user what is wrong with the file.
 */

export type ExtractionRequest = { format: DocumentFormat; bytes: Uint8Array }
export type TextBlock = { text: string; page?: number }
export type ExtractedText = { blocks: TextBlock[]; numPages: number | null; markdown: boolean }
export type ExtractionAnswer = ({ ok: true } & ExtractedText) | { ok: false; error: string }

const PDF_MAGIC = '%PDF-'

async function pdfText(bytes: Uint8Array): Promise<ExtractedText> {
  if (new TextDecoder().decode(bytes.subarray(0, 1024)).indexOf(PDF_MAGIC) === -1)
    throw new Error('the file is not a PDF (no %PDF- header)')
  let proxy
  try {
    proxy = await getDocumentProxy(bytes, { verbosity: 0 })
  } catch (error) {
    throw new Error(`the PDF cannot be read: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (proxy.numPages > DOCUMENT_LIMITS.maxPages)
    throw new Error(`the PDF has ${proxy.numPages} pages, more than ${DOCUMENT_LIMITS.maxPages}`)
  const { text } = await extractText(proxy, { mergePages: false })
  return {
    blocks: text.map((page, index) => ({ text: page, page: index + 1 })),
    numPages: proxy.numPages,
    markdown: false,
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' }

/** mammoth's HTML (h1–h6, p, li, table cells) as Markdown-ish text: headings as `#`, one paragraph per block line. */
function htmlToText(html: string): string {
  return html
    .replace(/<h([1-6])[^>]*>/g, (_, level: string) => `\n\n${'#'.repeat(Number(level))} `)
    .replace(/<li[^>]*>/g, '\n- ')
    .replace(/<\/(p|h[1-6]|li|tr|table|ul|ol)>/g, '\n\n')
    .replace(/<\/t[dh]>/g, ' | ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, name: string) => ENTITIES[name])
}

async function docxText(bytes: Uint8Array): Promise<ExtractedText> {
  let entries
  try {
    entries = readZip(bytes, {
      maxTotalBytes: DOCUMENT_LIMITS.maxUnpackedBytes,
      maxEntries: DOCUMENT_LIMITS.maxZipEntries,
    })
  } catch (error) {
    if (error instanceof ZipError) throw new Error(`the file is not a readable DOCX: ${error.message}`)
    throw error
  }
  // Only what mammoth reads, re-packed uncompressed: it then unpacks nothing we have not already bounded.
  const wanted = entries.filter(({ name }) => name.endsWith('.xml') || name.endsWith('.rels'))
  if (!wanted.some(({ name }) => name === 'word/document.xml'))
    throw new Error('the file is not a DOCX (no word/document.xml)')
  const { value } = await mammoth.convertToHtml({ buffer: Buffer.from(writeZip(wanted)) })
  return { blocks: [{ text: htmlToText(value) }], numPages: null, markdown: true }
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '')
  } catch {
    throw new Error('the file is not UTF-8 text')
  }
}

function csvText(bytes: Uint8Array): ExtractedText {
  let rows: string[][]
  try {
    rows = parseCsv(decodeUtf8(bytes), { relax_column_count: true, skip_empty_lines: true, bom: true })
  } catch (error) {
    throw new Error(`the CSV cannot be read: ${error instanceof Error ? error.message : String(error)}`)
  }
  const [header = [], ...records] = rows
  // Each row names its columns, so a chunk of rows reads on its own.
  const blocks = records.map((record) => ({
    text: record.map((value, index) => `${header[index] ?? `column ${index + 1}`}: ${value}`).join('; '),
  }))
  return { blocks, numPages: null, markdown: false }
}

function jsonText(bytes: Uint8Array): ExtractedText {
  const text = decodeUtf8(bytes)
  let pretty = text
  try {
    pretty = JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    // The reference keeps invalid JSON as it is.
  }
  return { blocks: [{ text: pretty }], numPages: null, markdown: false }
}

export async function extractDocumentText({ format, bytes }: ExtractionRequest): Promise<ExtractedText> {
  if (bytes.byteLength === 0) throw new Error('the file is empty')
  switch (format) {
    case 'pdf':
      return pdfText(bytes)
    case 'docx':
      return docxText(bytes)
    case 'csv':
      return csvText(bytes)
    case 'json':
      return jsonText(bytes)
    case 'text':
      return { blocks: [{ text: decodeUtf8(bytes) }], numPages: null, markdown: false }
    case 'markdown':
      return { blocks: [{ text: decodeUtf8(bytes) }], numPages: null, markdown: true }
  }
}
