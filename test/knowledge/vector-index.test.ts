import { describe, expect, test } from 'bun:test'
import { normalize } from '../../src/models/embeddings'
import {
  createVectorCache,
  nearest,
  vectorBytes,
  type RowReader,
  type StoredVector,
} from '../../src/knowledge/vector-index'
import { seededRandom } from '../../scripts/bench/stats'

// The int8 WebAssembly scan against a float64 brute force over the same vectors: the same nearest rows, through
// removals, compaction and re-loads of an organization's index.

const random = seededRandom(7)
const unit = (dimension: number) => normalize(Float32Array.from({ length: dimension }, () => random() - 0.5))

function stored(firstId: number, count: number, dimension: number) {
  const vectors = Array.from({ length: count }, () => unit(dimension))
  const rows: StoredVector[] = vectors.map((vector, index) => ({
    id: firstId + index,
    chunkIndex: index,
    embedding: new Uint8Array(vectorBytes(vector)),
  }))
  return { vectors, rows }
}

/** Reads `rowsOf(documentId)` a slice at a time, as the database does, counting the slices. */
function reader(rowsOf: (documentId: number) => StoredVector[], counts = { slices: 0 }): RowReader {
  return (documentId, afterChunk, limit) => {
    counts.slices++
    return rowsOf(documentId)
      .filter((row) => row.chunkIndex > afterChunk)
      .slice(0, limit)
  }
}

function exactTop(documents: { firstId: number; vectors: Float32Array[] }[], query: Float32Array, k: number) {
  const scored = documents.flatMap(({ firstId, vectors }) =>
    vectors.map((vector, index) => ({
      id: firstId + index,
      similarity: vector.reduce((sum, value, at) => sum + value * query[at], 0),
    })),
  )
  return scored.sort((a, b) => b.similarity - a.similarity).slice(0, k)
}

describe('vector index', () => {
  test("the int8 scan's candidates hold the exact nearest rows, with similarities within 0.01, across slices and paddings", async () => {
    const cache = createVectorCache(1 << 30)
    // 9,000 rows: more than one scan slice; 100 dimensions: padded to 128.
    const documents = [
      { id: 1, firstId: 0, ...stored(0, 9000, 100) },
      { id: 2, firstId: 100_000, ...stored(100_000, 40, 100) },
      { id: 3, firstId: 200_000, ...stored(200_000, 30, 64) },
    ]
    const counts = { slices: 0 }
    const load = reader((documentId) => documents.find((document) => document.id === documentId)!.rows, counts)
    const wanted = documents.map(({ id, vectors }) => ({
      id,
      version: 'a',
      dimension: vectors[0].length,
      count: vectors.length,
    }))
    for (let round = 0; round < 5; round++) {
      const query = unit(100)
      const { index, loaded } = await cache.documents(1, wanted, load)
      // As search.ts asks: four times the rows it needs, which it ranks again exactly.
      const hits = await nearest(index, loaded, query, 20)
      const exact = exactTop(documents.slice(0, 2), query, 20)
      const found = hits.map((hit) => hit.chunkId)
      for (const { id } of exact.slice(0, 5)) expect(found).toContain(id)
      for (const [at, hit] of hits.entries()) expect(Math.abs(hit.similarity - exact[at].similarity)).toBeLessThan(0.01)
    }
    // Loaded once: 9,000 rows in slices of 512 (18), and one slice for each small document.
    expect(counts.slices).toBe(20)
  })

  test('a dropped document is never returned; the rest stay right after compaction; a new version is loaded again', async () => {
    const cache = createVectorCache(1 << 30)
    const first = { id: 1, ...stored(0, 500, 64) }
    const second = { id: 2, ...stored(1000, 500, 64) }
    const rowsOf = reader((id) => (id === 1 ? first.rows : second.rows))
    const both = [
      { id: 1, version: 'a', dimension: 64, count: 500 },
      { id: 2, version: 'a', dimension: 64, count: 500 },
    ]
    const query = unit(64)
    await cache.documents(1, both, rowsOf)
    cache.drop(1, 1)
    // Half the memory is now dead: the drop compacted the second document to the front.
    const { index, loaded } = await cache.documents(1, [both[1]], rowsOf)
    const found = (await nearest(index, loaded, query, 12)).map((hit) => hit.chunkId)
    expect(found.every((id) => id >= 1000)).toBe(true)
    for (const { id } of exactTop([{ firstId: 1000, vectors: second.vectors }], query, 3)) expect(found).toContain(id)

    const reloaded = { slices: 0 }
    await cache.documents(
      1,
      [{ id: 2, version: 'b', dimension: 64, count: 500 }],
      reader(() => second.rows, reloaded),
    )
    expect(reloaded.slices).toBe(1)
    expect(cache.stats().organizations).toBe(1)
  })

  test('organizations have their own index; the least recently used goes once over the byte budget', async () => {
    const cache = createVectorCache(1)
    const rows = reader(() => stored(0, 10, 64).rows)
    await cache.documents(1, [{ id: 1, version: 'a', dimension: 64, count: 10 }], rows)
    await cache.documents(2, [{ id: 2, version: 'a', dimension: 64, count: 10 }], rows)
    expect(cache.stats().organizations).toBe(1)
    const { loaded } = await cache.documents(3, [{ id: 3, version: 'a', dimension: 32, count: 10 }], rows)
    // Vectors of another length than the document's dimension are not loaded.
    expect(loaded).toEqual([])
  })

  test('a large document loads in slices, the event loop turning between them, searchable only once whole', async () => {
    const cache = createVectorCache(1 << 30, { sliceRows: 100 })
    const large = stored(0, 1000, 64)
    const counts = { slices: 0 }
    const loading = cache.documents(
      1,
      [{ id: 1, version: 'a', dimension: 64, count: 1000 }],
      reader(() => large.rows, counts),
    )
    let turns = 0
    const turn = () => {
      turns++
      if (cache.status(1).loading > 0) setImmediate(turn)
    }
    setImmediate(turn)
    // Between slices: part of the document read, none of it searchable yet.
    await new Promise((resolve) => setImmediate(resolve))
    expect(cache.status(1)).toEqual({ loadedDocuments: 0, loading: 1 })
    expect(counts.slices).toBeLessThan(10)
    const { index, loaded } = await loading
    expect(counts.slices).toBe(10)
    expect(cache.stats().slicesLoaded).toBe(10)
    expect(turns).toBeGreaterThanOrEqual(9)
    const query = large.vectors[777]
    const [best] = await nearest(index, loaded, query, 4)
    expect(best.chunkId).toBe(777)
  })

  test('a document dropped while it loads is never searchable; a search waits for the load under way, not a second one', async () => {
    const cache = createVectorCache(1 << 30, { sliceRows: 50 })
    const document = stored(0, 500, 64)
    const counts = { slices: 0 }
    const wanted = { id: 1, version: 'a', dimension: 64, count: 500 }
    const preloading = cache.preload(
      1,
      [wanted],
      reader(() => document.rows, counts),
    )
    const { loaded } = await cache.documents(
      1,
      [wanted],
      reader(() => document.rows, counts),
    )
    await preloading
    expect(loaded.map((found) => found.documentId)).toEqual([1])
    expect(counts.slices).toBe(10)

    const dropping = cache.documents(
      1,
      [{ ...wanted, version: 'b' }],
      reader(() => document.rows),
    )
    await new Promise((resolve) => setImmediate(resolve))
    cache.drop(1, 1)
    expect((await dropping).loaded).toEqual([])
    expect(cache.status(1)).toEqual({ loadedDocuments: 0, loading: 0 })
  })
})
