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
import { nextTurn } from '../lib/next-turn'

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

/**
 * A stored vector back as floats: a view of the BLOB's bytes when they are 4-byte aligned (bun:sqlite gives each BLOB
 * its own buffer), else a copy. A search reads dozens of them: a copy each was a third of its re-ranking time.
 */
export const vectorOf = (bytes: Uint8Array): Float32Array =>
  bytes.byteOffset % 4 === 0
    ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))

/** A chunk's vector as stored, with its place in its document (the order a load reads it in). */
export type StoredVector = { id: number; chunkIndex: number; embedding: Uint8Array }

/** A completed document as the database describes it: `count` rows of `dimension` values. */
export type WantedDocument = { id: number; version: string; dimension: number; count: number }

/** Up to `limit` of a document's stored vectors after chunk index `afterChunk`, in chunk order. */
export type RowReader = (documentId: number, afterChunk: number, limit: number) => StoredVector[]

const PAGE = 65_536
const INT8_MAX = 127
/** Rows scanned in one call into WebAssembly (~0.4 ms at 768 dimensions). */
const SLICE_ROWS = 8192
/** The memory's first page holds the query (int16, up to 16,384 dimensions) and one slice's scores; rows follow. */
const QUERY_AT = 0
const SCORES_AT = SLICE_ROWS * 4
const ROWS_AT = PAGE
export const MAX_DIMENSION = (SCORES_AT - QUERY_AT) / 2

/** A document's place in the memory before its rows are written. */
const emptyDocument = (
  { id, version, dimension, count }: WantedDocument,
  stride: number,
  offset: number,
): IndexedDocument => ({
  documentId: id,
  version,
  dimension,
  count,
  stride,
  offset,
  chunkIds: new Float64Array(count),
  scales: new Float32Array(count),
})

/** Writes `vector` as int8 into `row` (zeros past its end); answers the row's scale: value ≈ int8 × scale. */
function quantizeRow(vector: Float32Array, row: Int8Array): number {
  let largest = 0
  for (const value of vector) largest = Math.max(largest, Math.abs(value))
  const toInt8 = largest > 0 ? INT8_MAX / largest : 1
  for (let index = 0; index < vector.length; index++) row[index] = Math.round(vector[index] * toInt8)
  row.fill(0, vector.length)
  return 1 / toInt8
}

/** One organization's vectors: documents added at the end, removed ones compacted away once they are half of it. */
export function createOrganizationIndex() {
  const memory = new WebAssembly.Memory({ initial: 2 })
  const scan = scanOver(memory)
  const documents = new Map<number, IndexedDocument>()
  /** Documents whose rows are being written: their space is live, though not searchable yet. */
  const loading = new Set<IndexedDocument>()
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
    for (const document of [...documents.values(), ...loading].sort((a, b) => a.offset - b.offset)) {
      const size = document.count * document.stride
      bytes.copyWithin(to, document.offset, document.offset + size)
      document.offset = to
      to += size
    }
    end = to
    dead = 0
  }

  const compactIfHalfDead = () => {
    if (dead * 2 > end - ROWS_AT) compact()
  }

  const remove = (documentId: number) => {
    const document = documents.get(documentId)
    if (!document) return
    documents.delete(documentId)
    dead += document.count * document.stride
    compactIfHalfDead()
  }

  /**
   * Loads a document's rows, `sliceRows` at a time from `readRows` (rows after a chunk id, in id order), with a turn
   * of the event loop between slices: a large document never holds the loop for long. Its space is reserved first,
   * so documents loading at once (a search's and the preload's) each write their own; it becomes searchable (in
   * `documents`) only once whole. False when it cannot be loaded as stated or `cancelled()` says it went meanwhile.
   */
  const load = async (
    wanted: WantedDocument,
    readRows: RowReader,
    { sliceRows, cancelled, onSlice }: { sliceRows: number; cancelled: () => boolean; onSlice: () => void },
  ): Promise<boolean> => {
    const { id: documentId, dimension, count } = wanted
    if (dimension <= 0 || dimension > MAX_DIMENSION || count <= 0) return false
    const stride = Math.ceil(dimension / SCAN_STEP) * SCAN_STEP
    ensureCapacity(count * stride)
    const document = emptyDocument(wanted, stride, end)
    end += count * stride
    loading.add(document)
    const vector = new Float32Array(dimension)
    const vectorBytes = new Uint8Array(vector.buffer)
    let row = 0
    let ok = true
    const abandon = () => {
      loading.delete(document)
      dead += count * stride
      compactIfHalfDead()
    }
    try {
      for (let afterChunk = -1; ok && row < count; ) {
        const rows = readRows(documentId, afterChunk, Math.min(sliceRows, count - row + 1))
        if (rows.length === 0 || row + rows.length > count) break
        // The memory may have grown (detaching views) or been compacted (moving this document) since the last slice.
        const quantized = new Int8Array(memory.buffer, document.offset, count * stride)
        for (const { id, chunkIndex, embedding } of rows) {
          if (embedding.byteLength !== dimension * 4) {
            ok = false
            break
          }
          vectorBytes.set(embedding)
          document.scales[row] = quantizeRow(vector, quantized.subarray(row * stride, (row + 1) * stride))
          document.chunkIds[row++] = id
          afterChunk = chunkIndex
        }
        onSlice()
        await nextTurn()
        if (cancelled()) ok = false
      }
    } catch (error) {
      abandon()
      throw error
    }
    if (!ok || row !== count) {
      abandon()
      return false
    }
    // Still among `loading` while the previous version goes: a compaction that removal starts moves this one too.
    remove(documentId)
    documents.set(documentId, document)
    loading.delete(document)
    return true
  }

  return { scan, documents, load, remove, pageViews, bytes: () => memory.buffer.byteLength }
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

/**
 * Work done before the scan lets other tasks (calls' audio, HTTP) run. Every turn given puts whatever is queued (other
 * requests, the collector's sweeping) into this search's time: 100,000 rows of 768 dimensions take ~4 ms of one quiet
 * core and ~15 ms on a loaded machine, so such a scan runs in one go, and only one several times larger takes turns
 * (no longer apart than a load's slice holds the loop).
 */
const YIELD_AFTER_MS = 16

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

/** Rows read and quantized between two turns of the event loop (~10 ms at 768 dimensions on a loaded 2-core machine). */
export const LOAD_SLICE_ROWS = 512

/** A document's load under way: a search that needs it waits for it rather than loading it again. */
type PendingLoad = { version: string; done: Promise<boolean>; cancelled: boolean }

type LoadedOrganization = { index: OrganizationIndex; pending: Map<number, PendingLoad> }

/**
 * Organizations' indexes, least recently used dropped whole once all of them pass `maxBytes` (the one in use stays,
 * however large). `documents` answers which of the named documents are loaded as they were completed, loading the
 * missing ones (or waiting for their load under way); `preload` loads an organization's documents ahead of its first
 * search while the budget has room; `refresh` loads a just-completed document into an index already in memory; `drop`
 * forgets a document at once when it is deleted or processed again. Loads go `sliceRows` rows at a time. Memory only:
 * the database holds the vectors, and every instance loads what it searches.
 */
export function createVectorCache(maxBytes: number, { sliceRows = LOAD_SLICE_ROWS }: { sliceRows?: number } = {}) {
  const organizations = new Map<number, LoadedOrganization>()
  let slicesLoaded = 0
  const totalBytes = () => [...organizations.values()].reduce((sum, { index }) => sum + index.bytes(), 0)

  /** The organization's index, now the most recently used. */
  const organizationOf = (organizationId: number): LoadedOrganization => {
    const found = organizations.get(organizationId)
    if (found) organizations.delete(organizationId)
    const organization = found ?? { index: createOrganizationIndex(), pending: new Map() }
    organizations.set(organizationId, organization)
    return organization
  }

  const evictBeyondBudget = (keep: number) => {
    for (const [otherId, other] of organizations) {
      if (totalBytes() <= maxBytes || otherId === keep) break
      for (const load of other.pending.values()) load.cancelled = true
      organizations.delete(otherId)
    }
  }

  const loadDocument = ({ index, pending }: LoadedOrganization, wanted: WantedDocument, readRows: RowReader) => {
    if (index.documents.get(wanted.id)?.version === wanted.version) return Promise.resolve(true)
    const running = pending.get(wanted.id)
    if (running?.version === wanted.version) return running.done
    if (running) running.cancelled = true
    const load: PendingLoad = { version: wanted.version, cancelled: false, done: Promise.resolve(false) }
    load.done = index
      .load(wanted, readRows, { sliceRows, cancelled: () => load.cancelled, onSlice: () => slicesLoaded++ })
      .finally(() => {
        if (pending.get(wanted.id) === load) pending.delete(wanted.id)
      })
    pending.set(wanted.id, load)
    return load.done
  }

  const documents = async (
    organizationId: number,
    wanted: WantedDocument[],
    readRows: RowReader,
  ): Promise<{ index: OrganizationIndex; loaded: IndexedDocument[] }> => {
    const organization = organizationOf(organizationId)
    for (const document of wanted) await loadDocument(organization, document, readRows)
    const { index } = organization
    const loaded = wanted.flatMap(({ id, version }) => {
      const document = index.documents.get(id)
      return document?.version === version ? [document] : []
    })
    evictBeyondBudget(organizationId)
    // A document added again while this one yielded replaced what `loaded` holds: the scan skips those.
    return { index, loaded }
  }

  return {
    documents,
    /** Loads the organization's documents unless the budget is already spent; false when it was. */
    async preload(organizationId: number, wanted: WantedDocument[], readRows: RowReader): Promise<boolean> {
      if (!organizations.has(organizationId) && totalBytes() >= maxBytes) return false
      await documents(organizationId, wanted, readRows)
      return true
    },
    /** A document completed again: into its organization's index if that one is in memory (else its first search). */
    async refresh(organizationId: number, wanted: WantedDocument, readRows: RowReader) {
      const organization = organizations.get(organizationId)
      if (organization) await loadDocument(organization, wanted, readRows)
    },
    drop(organizationId: number, documentId: number) {
      const organization = organizations.get(organizationId)
      if (!organization) return
      const running = organization.pending.get(documentId)
      if (running) running.cancelled = true
      organization.index.remove(documentId)
    },
    /** What is in memory: whole organizations, and per organization its searchable and still-loading documents. */
    stats: () => ({ organizations: organizations.size, bytes: totalBytes(), slicesLoaded }),
    status(organizationId: number) {
      const organization = organizations.get(organizationId)
      return { loadedDocuments: organization?.index.documents.size ?? 0, loading: organization?.pending.size ?? 0 }
    },
  }
}

export type VectorCache = ReturnType<typeof createVectorCache>
