import { describe, expect, test } from 'bun:test'
import { normalize } from '../../src/models/embeddings'
import { createVectorCache, nearest, vectorBytes, type StoredVector } from '../../src/knowledge/vector-index'
import { seededRandom } from '../../scripts/bench/stats'

// The int8 WebAssembly scan against a float64 brute force over the same vectors: the same nearest rows, through
// removals, compaction and re-loads of an organization's index.

const random = seededRandom(7)
const unit = (dimension: number) => normalize(Float32Array.from({ length: dimension }, () => random() - 0.5))

function stored(firstId: number, count: number, dimension: number) {
  const vectors = Array.from({ length: count }, () => unit(dimension))
  const rows: StoredVector[] = vectors.map((vector, index) => ({
    id: firstId + index,
    embedding: new Uint8Array(vectorBytes(vector)),
  }))
  return { vectors, rows }
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
    let loads = 0
    const load = (documentId: number) => {
      loads++
      return documents.find((document) => document.id === documentId)!.rows
    }
    const wanted = documents.map(({ id, vectors }) => ({ id, version: 'a', dimension: vectors[0].length }))
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
    expect(loads).toBe(3)
  })

  test('a dropped document is never returned; the rest stay right after compaction; a new version is loaded again', async () => {
    const cache = createVectorCache(1 << 30)
    const first = { id: 1, ...stored(0, 500, 64) }
    const second = { id: 2, ...stored(1000, 500, 64) }
    const rowsOf = (id: number) => (id === 1 ? first.rows : second.rows)
    const both = [
      { id: 1, version: 'a', dimension: 64 },
      { id: 2, version: 'a', dimension: 64 },
    ]
    const query = unit(64)
    await cache.documents(1, both, rowsOf)
    cache.drop(1, 1)
    // Half the memory is now dead: the drop compacted the second document to the front.
    const { index, loaded } = await cache.documents(1, [both[1]], rowsOf)
    const found = (await nearest(index, loaded, query, 12)).map((hit) => hit.chunkId)
    expect(found.every((id) => id >= 1000)).toBe(true)
    for (const { id } of exactTop([{ firstId: 1000, vectors: second.vectors }], query, 3)) expect(found).toContain(id)

    let reloaded = 0
    await cache.documents(1, [{ id: 2, version: 'b', dimension: 64 }], (id) => {
      reloaded++
      return rowsOf(id)
    })
    expect(reloaded).toBe(1)
    expect(cache.stats().organizations).toBe(1)
  })

  test('organizations have their own index; the least recently used goes once over the byte budget', async () => {
    const cache = createVectorCache(1)
    const rows = stored(0, 10, 64).rows
    await cache.documents(1, [{ id: 1, version: 'a', dimension: 64 }], () => rows)
    await cache.documents(2, [{ id: 2, version: 'a', dimension: 64 }], () => rows)
    expect(cache.stats().organizations).toBe(1)
    const { loaded } = await cache.documents(3, [{ id: 3, version: 'a', dimension: 32 }], () => rows)
    // Vectors of another length than the document's dimension are not loaded.
    expect(loaded).toEqual([])
  })
})
