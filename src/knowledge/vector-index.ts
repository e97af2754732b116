/**
 * Brute-force nearest chunks in memory. An organization's completed documents' vectors (normalised at ingest, so a
 * dot product is the cosine similarity) are loaded once from SQLite, quantized to int8 with one scale per row, and kept
 * contiguous in one WebAssembly memory per organization, document after document, where int8-scan.ts compares a
 * document's rows with the query in SIMD: a quarter of float32's bytes, and the scan reads nothing else. The int8
 * order finds candidates; the caller ranks them again with the float32 vectors (search.ts), so the similarities it
 * reports are exact.
 *
 * 100,000 chunks of 768 dimensions: ~75 MiB, a few ms of one core per query (scripts/bench/knowledge.ts).
 */
import { SCAN_STEP, scanOver } from './int8-scan'

/** One document's rows in its organization's memory. */
export type IndexedDocument = {
  documentId: number
  /** When the document was completed: a document processed again is loaded again. */
  version: string
  dimension: number
  count: number
  /** Values per row in memory: `dimension` padded with zeros to the scan's step. */
  stride: number
  /** Where its first row starts in the memory, in bytes. */
  offset: number
  /** The chunk id (its row in knowledge_base_chunks) of each row. */
  chunkIds: Float64Array
  /** Each row's int8 step: value ≈ int8 × scale. */
  scales: Float32Array
}

export type VectorHit = { documentId: number; chunkId: number; similarity: number }

/** A vector as stored: its float32 bytes (little-endian on every platform Bun runs on). */
export const vectorBytes = (vector: Float32Array): Buffer =>
  Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)

/** A stored vector back as floats (copied: a BLOB's bytes need not be 4-byte aligned). */
export const vectorOf = (bytes: Uint8Array): Float32Array =>
  new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))

export type StoredVector = { id: number; embedding: Uint8Array }

const PAGE = 65_536
const INT8_MAX = 127
/** Rows scanned in one call into WebAssembly (~0.4 ms at 768 dimensions). */
const SLICE_ROWS = 8192
/** The memory's first page holds the query (int16, up to 16,384 dimensions) and one slice's scores; rows follow. */
const QUERY_AT = 0
const SCORES_AT = SLICE_ROWS * 4
const ROWS_AT = PAGE
export const MAX_DIMENSION = (SCORES_AT - QUERY_AT) / 2

/** One organization's vectors: documents added at the end, removed ones compacted away once they are half of it. */
export function createOrganizationIndex() {
  const memory = new WebAssembly.Memory({ initial: 2 })
  const scan = scanOver(memory)
  const documents = new Map<number, IndexedDocument>()
  let end = ROWS_AT
  let dead = 0
  // Views of the first page, made again only once growing the memory detached their buffer (reading `memory.buffer`
  // on every slice of a scan costs more than the slice's bookkeeping).
  let views = { buffer: new ArrayBuffer(0), query: new Int16Array(0), scores: new Float32Array(0) }
  const pageViews = () => {
    if (views.buffer.byteLength === 0) {
      const buffer = memory.buffer
      views = {
        buffer,
        query: new Int16Array(buffer, QUERY_AT, MAX_DIMENSION),
        scores: new Float32Array(buffer, SCORES_AT, SLICE_ROWS),
      }
    }
    return views
  }

  const ensureCapacity = (bytes: number) => {
    const missing = end + bytes - memory.buffer.byteLength
    if (missing > 0) memory.grow(Math.ceil(missing / PAGE))
  }

  const compact = () => {
    const bytes = new Uint8Array(memory.buffer)
    let to = ROWS_AT
    for (const document of [...documents.values()].sort((a, b) => a.offset - b.offset)) {
      const size = document.count * document.stride
      bytes.copyWithin(to, document.offset, document.offset + size)
      document.offset = to
      to += size
    }
    end = to
    dead = 0
  }

  const remove = (documentId: number) => {
    const document = documents.get(documentId)
    if (!document) return
    documents.delete(documentId)
    dead += document.count * document.stride
    if (dead * 2 > end - ROWS_AT) compact()
  }

  /** Adds (or replaces) a document's rows; false when their length is not `dimension`. */
  const add = (documentId: number, version: string, rows: StoredVector[], dimension: number): boolean => {
    if (dimension <= 0 || dimension > MAX_DIMENSION) return false
    if (rows.some(({ embedding }) => embedding.byteLength !== dimension * 4)) return false
    remove(documentId)
    const stride = Math.ceil(dimension / SCAN_STEP) * SCAN_STEP
    ensureCapacity(rows.length * stride)
    const quantized = new Int8Array(memory.buffer, end, rows.length * stride)
    quantized.fill(0)
    const document: IndexedDocument = {
      documentId,
      version,
      dimension,
      count: rows.length,
      stride,
      offset: end,
      chunkIds: new Float64Array(rows.length),
      scales: new Float32Array(rows.length),
    }
    const vector = new Float32Array(dimension)
    const vectorBytes = new Uint8Array(vector.buffer)
    for (const [row, { id, embedding }] of rows.entries()) {
      vectorBytes.set(embedding)
      let largest = 0
      for (let index = 0; index < dimension; index++) largest = Math.max(largest, Math.abs(vector[index]))
      const toInt8 = largest > 0 ? INT8_MAX / largest : 1
      for (let index = 0, base = row * stride; index < dimension; index++)
        quantized[base + index] = Math.round(vector[index] * toInt8)
      document.scales[row] = 1 / toInt8
      document.chunkIds[row] = id
    }
    end += rows.length * stride
    documents.set(documentId, document)
    return true
  }

  return { scan, documents, add, remove, pageViews, bytes: () => memory.buffer.byteLength }
}

export type OrganizationIndex = ReturnType<typeof createOrganizationIndex>

/** The query as int16 and the factor from a scan's scores back to similarities. */
function quantizeQuery(query: Float32Array, stride: number): { values: Int16Array; toSimilarity: number } {
  let largest = 0
  for (const value of query) largest = Math.max(largest, Math.abs(value))
  // The scan sums `stride` products of int8 × int16 in an int32: the query's range keeps that sum from overflowing.
  const range = Math.min(32_767, Math.floor(0x7fff_ffff / (INT8_MAX * stride)))
  const factor = largest > 0 ? range / largest : 1
  const values = new Int16Array(stride)
  for (let index = 0; index < query.length; index++) values[index] = Math.round(query[index] * factor)
  return { values, toSimilarity: 1 / factor }
}

/** The `size` best (documentIndex, row) pairs seen, in a min-heap on score: the worst kept is at the top. */
function createTopHeap(size: number) {
  const scores = new Float64Array(size)
  const documents = new Int32Array(size)
  const rows = new Int32Array(size)
  let length = 0
  const swap = (a: number, b: number) => {
    ;[scores[a], scores[b]] = [scores[b], scores[a]]
    ;[documents[a], documents[b]] = [documents[b], documents[a]]
    ;[rows[a], rows[b]] = [rows[b], rows[a]]
  }
  const siftDown = () => {
    for (let at = 0; ; ) {
      const left = 2 * at + 1
      let smallest = at
      if (left < length && scores[left] < scores[smallest]) smallest = left
      if (left + 1 < length && scores[left + 1] < scores[smallest]) smallest = left + 1
      if (smallest === at) return
      swap(at, smallest)
      at = smallest
    }
  }
  return {
    /** The score a row must beat to get in. */
    floor: () => (length < size ? -Infinity : scores[0]),
    push(score: number, document: number, row: number) {
      if (length === size) {
        if (score <= scores[0]) return
        scores[0] = score
        documents[0] = document
        rows[0] = row
        siftDown()
        return
      }
      let at = length++
      scores[at] = score
      documents[at] = document
      rows[at] = row
      while (at > 0 && scores[(at - 1) >> 1] > scores[at]) {
        swap(at, (at - 1) >> 1)
        at = (at - 1) >> 1
      }
    },
    /** Best first. */
    drain: () =>
      Array.from({ length }, (_, index) => ({
        score: scores[index],
        document: documents[index],
        row: rows[index],
      })).sort((a, b) => b.score - a.score),
  }
}

/** Work done before the scan lets other tasks (calls' audio, HTTP) run. */
const YIELD_AFTER_MS = 4

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/**
 * The `k` rows most similar to `query` among `documents` of `index` (those of the query's dimension), best first, by
 * the int8 vectors: similarities within ~0.005 of the exact ones, so ask for more than you need and rank those again.
 * A long scan gives the event loop a turn every few milliseconds.
 */
export async function nearest(
  index: OrganizationIndex,
  documents: IndexedDocument[],
  query: Float32Array,
  k: number,
): Promise<VectorHit[]> {
  const top = createTopHeap(k)
  const { scan } = index
  const quantized = new Map<number, ReturnType<typeof quantizeQuery>>()
  let sliceStart = performance.now()
  for (const [documentIndex, document] of documents.entries()) {
    if (document.dimension !== query.length || index.documents.get(document.documentId) !== document) continue
    const { stride, count, scales } = document
    let prepared = quantized.get(stride)
    if (!prepared) {
      prepared = quantizeQuery(query, stride)
      quantized.set(stride, prepared)
    }
    index.pageViews().query.set(prepared.values)
    for (let first = 0; first < count; first += SLICE_ROWS) {
      const rows = Math.min(SLICE_ROWS, count - first)
      // The document's offset is read again after each turn: a compaction may have moved it meanwhile.
      scan(document.offset + first * stride, rows, stride, QUERY_AT, SCORES_AT)
      const { scores } = index.pageViews()
      let floor = top.floor()
      for (let row = 0; row < rows; row++) {
        const score = scores[row] * scales[first + row]
        if (score <= floor) continue
        top.push(score, documentIndex, first + row)
        floor = top.floor()
      }
      if (performance.now() - sliceStart > YIELD_AFTER_MS) {
        await nextTurn()
        sliceStart = performance.now()
        index.pageViews().query.set(prepared.values)
        if (index.documents.get(document.documentId) !== document) break
      }
    }
  }
  return top.drain().map(({ score, document, row }) => ({
    documentId: documents[document].documentId,
    chunkId: documents[document].chunkIds[row],
    similarity: score * quantized.get(documents[document].stride)!.toSimilarity,
  }))
}

/**
 * Organizations' indexes, least recently used dropped whole once all of them pass `maxBytes` (the one in use stays,
 * however large). `documents` answers which of the named documents are loaded as they were completed, loading the
 * missing ones; `drop` forgets a document at once when it is deleted or processed again. Memory only: the database
 * holds the vectors, and every instance loads what it searches.
 */
export function createVectorCache(maxBytes: number) {
  const organizations = new Map<number, OrganizationIndex>()
  const totalBytes = () => [...organizations.values()].reduce((sum, index) => sum + index.bytes(), 0)
  return {
    async documents(
      organizationId: number,
      wanted: { id: number; version: string; dimension: number }[],
      load: (documentId: number) => StoredVector[],
    ): Promise<{ index: OrganizationIndex; loaded: IndexedDocument[] }> {
      let index = organizations.get(organizationId)
      if (index) organizations.delete(organizationId)
      index ??= createOrganizationIndex()
      organizations.set(organizationId, index)
      const loaded: IndexedDocument[] = []
      for (const { id, version, dimension } of wanted) {
        const current = index.documents.get(id)
        if (current?.version === version) {
          loaded.push(current)
          continue
        }
        // Loading reads and quantizes a whole document: a turn of the event loop after each one.
        if (index.add(id, version, load(id), dimension)) loaded.push(index.documents.get(id)!)
        await nextTurn()
      }
      for (const [otherId] of organizations) {
        if (totalBytes() <= maxBytes || otherId === organizationId) break
        organizations.delete(otherId)
      }
      // A document added again while this one yielded replaced what `loaded` holds: the scan skips those.
      return { index, loaded }
    },
    drop(organizationId: number, documentId: number) {
      organizations.get(organizationId)?.remove(documentId)
    },
    stats: () => ({ organizations: organizations.size, bytes: totalBytes() }),
  }
}

export type VectorCache = ReturnType<typeof createVectorCache>
