import { afterEach, describe, expect, test } from 'bun:test'
import { startBackgroundServices } from '../../src/boot'
import { organizations } from '../../src/db/schema'
import type { Embedder } from '../../src/knowledge/embedder'
import { preloadVectors, searchChunks } from '../../src/knowledge/search'
import { createVectorCache } from '../../src/knowledge/vector-index'
import { normalize } from '../../src/models/embeddings'
import { seededRandom } from '../../scripts/bench/stats'
import { createTestApp, type TestApp } from '../support/app'
import { STORED_EMBEDDER, storeEmbeddedDocuments } from '../support/knowledge'
import { waitFor } from '../support/wait'

// Organizations' vectors loaded ahead of their first search: at boot, in slices, and a search that arrives meanwhile
// answering from exactly the documents it names.

const random = seededRandom(11)
const unit = () => normalize(Float32Array.from({ length: 32 }, () => random() - 0.5))
const documentsOf = (count: number, chunks: number) =>
  Array.from({ length: count }, () => Array.from({ length: chunks }, unit))

/** An embedder that answers `vector` for any query. */
const embedderAnswering = (vector: () => Float32Array): Embedder => ({
  ...STORED_EMBEDDER,
  client: { embed: async () => ({ vectors: [vector()], tokens: 1 }) } as unknown as Embedder['client'],
})

let t: TestApp | undefined
afterEach(() => t?.close())

describe('knowledge-base vectors preload', () => {
  test('a search issued while the preload runs answers the exact nearest chunk of the document it names', async () => {
    t = createTestApp()
    t.ctx.knowledge.vectors = createVectorCache(1 << 30, { sliceRows: 20 })
    const vectors = documentsOf(6, 100)
    const rows = storeEmbeddedDocuments(t.ctx, 1, vectors)
    const preloading = preloadVectors(t.ctx, () => false)
    // The preload's first slice is read; the document it reaches last is what the search needs.
    await new Promise((resolve) => setImmediate(resolve))
    expect(t.ctx.knowledge.vectors.status(1).loading).toBe(1)
    const wanted = vectors[5][42]
    const found = await searchChunks(
      t.ctx,
      embedderAnswering(() => wanted),
      [rows[5]],
      { query: 'q', limit: 3 },
    )
    expect(t.ctx.knowledge.vectors.status(1).loadedDocuments).toBeLessThan(6)
    expect(found.chunks[0]).toMatchObject({ document_uuid: rows[5].documentUuid, chunk_index: 42, similarity: 1 })
    expect(found.chunks.every((chunk) => chunk.document_uuid === rows[5].documentUuid)).toBe(true)
    await preloading
    expect(t.ctx.knowledge.vectors.status(1)).toEqual({ loadedDocuments: 6, loading: 0 })
  })

  test('after a restart the background services load every organization with ready documents, without a search', async () => {
    t = createTestApp()
    storeEmbeddedDocuments(t.ctx, 1, documentsOf(2, 50))
    const other = t.ctx.db.insert(organizations).values({ name: 'other', createdAt: '2026-01-01' }).returning().get()
    storeEmbeddedDocuments(t.ctx, other.id, documentsOf(1, 30))
    t.close({ keepData: true })
    t = createTestApp({ restartOf: t })
    const restarted = t
    expect(restarted.ctx.knowledge.vectors.status(1).loadedDocuments).toBe(0)
    const background = await startBackgroundServices(restarted.ctx)
    try {
      await waitFor(
        'both organizations preloaded',
        () =>
          restarted.ctx.knowledge.vectors.status(1).loadedDocuments === 2 &&
          restarted.ctx.knowledge.vectors.status(other.id).loadedDocuments === 1,
        10_000,
      )
      expect(restarted.ctx.knowledge.vectors.stats().organizations).toBe(2)
    } finally {
      await background.stop()
    }
  })
})
