/**
 * Brute-force nearest chunks in memory: each completed document's vectors as one contiguous Float32Array (normalised
 * at ingest, so the dot product is the cosine similarity), loaded from SQLite on first use and kept in an LRU bounded
 * in bytes. 100,000 chunks of 768 dimensions are ~77 M multiply-adds per query: see scripts/bench/knowledge.ts.
 */

export type DocumentVectors = {
  documentId: number
  dimension: number
  /** `count × dimension` values, chunk after chunk in chunk_index order. */
  vectors: Float32Array
  /** The chunk_index of each row. */
  chunkIndexes: Int32Array
}

export type VectorHit = { documentId: number; chunkIndex: number; similarity: number }

/** A vector as stored: its float32 bytes (little-endian on every platform Bun runs on). */
export const vectorBytes = (vector: Float32Array): Buffer =>
  Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)

/** Rows of stored vectors as one contiguous array; `null` when one has another length than `dimension`. */
export function packVectors(
  rows: { chunkIndex: number; embedding: Uint8Array }[],
  dimension: number,
): Omit<DocumentVectors, 'documentId'> | null {
  const vectors = new Float32Array(rows.length * dimension)
  const bytes = new Uint8Array(vectors.buffer)
  const chunkIndexes = new Int32Array(rows.length)
  for (const [row, { chunkIndex, embedding }] of rows.entries()) {
    if (embedding.byteLength !== dimension * 4) return null
    bytes.set(embedding, row * dimension * 4)
    chunkIndexes[row] = chunkIndex
  }
  return { dimension, vectors, chunkIndexes }
}

/** The `k` rows most similar to `query` across `documents` (same dimension as the query), best first. */
export function nearest(documents: DocumentVectors[], query: Float32Array, k: number): VectorHit[] {
  const scores = new Float64Array(k).fill(-Infinity)
  const where: { documentId: number; chunkIndex: number }[] = new Array(k)
  let worst = -Infinity
  for (const { documentId, dimension, vectors, chunkIndexes } of documents) {
    if (dimension !== query.length) continue
    const rows = chunkIndexes.length
    const unrolled = dimension - (dimension % 4)
    for (let row = 0, base = 0; row < rows; row++, base += dimension) {
      // Four running sums: independent additions the CPU can overlap (about twice as fast as one sum, measured).
      let sum0 = 0
      let sum1 = 0
      let sum2 = 0
      let sum3 = 0
      let index = 0
      for (; index < unrolled; index += 4) {
        sum0 += vectors[base + index] * query[index]
        sum1 += vectors[base + index + 1] * query[index + 1]
        sum2 += vectors[base + index + 2] * query[index + 2]
        sum3 += vectors[base + index + 3] * query[index + 3]
      }
      for (; index < dimension; index++) sum0 += vectors[base + index] * query[index]
      const dot = sum0 + sum1 + sum2 + sum3
      if (dot <= worst) continue
      let slot = k - 1
      while (slot > 0 && scores[slot - 1] < dot) {
        scores[slot] = scores[slot - 1]
        where[slot] = where[slot - 1]
        slot--
      }
      scores[slot] = dot
      where[slot] = { documentId, chunkIndex: chunkIndexes[row] }
      worst = scores[k - 1]
    }
  }
  const hits: VectorHit[] = []
  for (let slot = 0; slot < k && scores[slot] !== -Infinity; slot++)
    hits.push({ ...where[slot], similarity: scores[slot] })
  return hits
}

/**
 * Documents' vectors by `key` (document id and completion time, so a re-processed document is loaded again), least
 * recently used dropped first once over `maxBytes`. Memory only: every instance loads what it searches.
 */
export function createVectorCache(maxBytes: number) {
  const entries = new Map<string, DocumentVectors>()
  let bytes = 0
  return {
    get(key: string, load: () => DocumentVectors | null): DocumentVectors | null {
      const cached = entries.get(key)
      if (cached) {
        entries.delete(key)
        entries.set(key, cached)
        return cached
      }
      const loaded = load()
      if (!loaded) return null
      entries.set(key, loaded)
      bytes += loaded.vectors.byteLength
      for (const [oldKey, old] of entries) {
        if (bytes <= maxBytes || oldKey === key) break
        entries.delete(oldKey)
        bytes -= old.vectors.byteLength
      }
      return loaded
    },
    stats: () => ({ documents: entries.size, bytes }),
  }
}

export type VectorCache = ReturnType<typeof createVectorCache>
