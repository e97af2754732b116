import { and, asc, eq, gt, inArray } from 'drizzle-orm'
import type { AppContext } from '../context'
import { upstreamFailed } from '../lib/errors'
import { ModelServerError } from '../models/types'
import { knowledgeBaseChunks, knowledgeBaseDocuments, type KnowledgeDocumentRow } from '../db/schema'
import { NO_EMBEDDINGS, type Embedder } from './embedder'
import { nearest, vectorOf, type RowReader, type VectorHit, type WantedDocument } from './vector-index'

/**
 * Finding the chunks nearest a query among an organization's completed documents: the query embedded with the
 * searcher's model, compared in memory with the vectors of the documents embedded by that same model. Documents
 * that cannot be searched (not ready, failed, deleted, unknown, embedded by another model) are reported with the
 * reason, never skipped silently.
 */

export type FoundChunk = {
  id: number
  document_id: number
  document_uuid: string
  filename: string
  chunk_index: number
  chunk_text: string
  contextualized_text: string
  chunk_metadata: Record<string, unknown>
  similarity: number
}

export type UnavailableDocument = { document_uuid: string; reason: string }

export type ChunkSearch = {
  chunks: FoundChunk[]
  unavailable: UnavailableDocument[]
  embeddingMs: number
  searchMs: number
  embeddingTokens: number
}

const round4 = (value: number) => Math.round(value * 10_000) / 10_000

/** Why a document cannot be searched now, or null when it can. */
function unavailableReason(row: KnowledgeDocumentRow | undefined): string | null {
  if (!row || row.processingStatus === 'uploading')
    return 'not a document of this organization (deleted, or never uploaded)'
  if (row.processingStatus === 'failed') return `processing failed: ${row.processingError ?? 'unknown reason'}`
  if (row.processingStatus !== 'completed') return `not ready yet (${row.processingStatus})`
  return null
}

/**
 * The organization's completed active documents among those named (all of them when `documentUuids` is null), and
 * why each named one that is not is left out.
 */
export function documentsToSearch(
  ctx: AppContext,
  organizationId: number,
  documentUuids: string[] | null,
): { ready: KnowledgeDocumentRow[]; unavailable: UnavailableDocument[] } {
  const where = and(
    eq(knowledgeBaseDocuments.organizationId, organizationId),
    eq(knowledgeBaseDocuments.isActive, true),
  )
  if (documentUuids === null) {
    return {
      ready: ctx.db
        .select()
        .from(knowledgeBaseDocuments)
        .where(and(where, eq(knowledgeBaseDocuments.processingStatus, 'completed')))
        .all(),
      unavailable: [],
    }
  }
  const named = [...new Set(documentUuids)]
  const rows =
    named.length === 0
      ? []
      : ctx.db
          .select()
          .from(knowledgeBaseDocuments)
          .where(and(where, inArray(knowledgeBaseDocuments.documentUuid, named)))
          .all()
  const byUuid = new Map(rows.map((row) => [row.documentUuid, row]))
  const unavailable: UnavailableDocument[] = []
  const ready = named.flatMap((uuid) => {
    const reason = unavailableReason(byUuid.get(uuid))
    if (reason) unavailable.push({ document_uuid: uuid, reason })
    return reason ? [] : [byUuid.get(uuid)!]
  })
  return { ready, unavailable }
}

/**
 * Up to `limit` of a document's vectors after chunk `afterChunk`: a load reads a large document a slice at a time,
 * each a range of the (document, chunk index) index.
 */
const readRows =
  (ctx: AppContext): RowReader =>
  (documentId, afterChunk, limit) =>
    ctx.db
      .select({
        id: knowledgeBaseChunks.id,
        chunkIndex: knowledgeBaseChunks.chunkIndex,
        embedding: knowledgeBaseChunks.embedding,
      })
      .from(knowledgeBaseChunks)
      .where(and(eq(knowledgeBaseChunks.documentId, documentId), gt(knowledgeBaseChunks.chunkIndex, afterChunk)))
      .orderBy(asc(knowledgeBaseChunks.chunkIndex))
      .limit(limit)
      .all()

const wantedOf = (row: KnowledgeDocumentRow): WantedDocument => ({
  id: row.id,
  version: row.completedAt ?? '',
  dimension: row.embeddingDimension ?? 0,
  count: row.totalChunks ?? 0,
})

/** The organization's index, holding `rows`' vectors (each loaded from SQLite unless preloaded already). */
function loadVectors(ctx: AppContext, rows: KnowledgeDocumentRow[]) {
  return ctx.knowledge.vectors.documents(rows[0].organizationId, rows.map(wantedOf), readRows(ctx))
}

/** A document just completed: into its organization's index now if that index is in memory. */
export function refreshVectors(ctx: AppContext, row: KnowledgeDocumentRow): Promise<void> {
  if (row.retrievalMode !== 'chunked' || row.processingStatus !== 'completed') return Promise.resolve()
  return ctx.knowledge.vectors.refresh(row.organizationId, wantedOf(row), readRows(ctx))
}

/**
 * Loads, one organization after another, the vectors of every organization with completed chunked documents, so no
 * call's first retrieval waits for them; stops once the memory budget is spent or `stopped()`.
 */
export async function preloadVectors(ctx: AppContext, stopped: () => boolean): Promise<void> {
  const organizationIds = ctx.db
    .selectDistinct({ id: knowledgeBaseDocuments.organizationId })
    .from(knowledgeBaseDocuments)
    .where(
      and(
        eq(knowledgeBaseDocuments.isActive, true),
        eq(knowledgeBaseDocuments.processingStatus, 'completed'),
        eq(knowledgeBaseDocuments.retrievalMode, 'chunked'),
      ),
    )
    .all()
  for (const { id } of organizationIds) {
    const chunked = documentsToSearch(ctx, id, null).ready.filter((row) => row.retrievalMode === 'chunked')
    // Document by document, so a stop waits for one document at most.
    for (const row of chunked) {
      if (stopped() || !(await ctx.knowledge.vectors.preload(id, [wantedOf(row)], readRows(ctx)))) return
    }
  }
}

/** Candidates the int8 scan hands to the exact ranking: its order is within ~0.005 of the truth, so a few times k. */
const candidatesFor = (limit: number) => Math.max(32, limit * 4)

const dot = (a: Float32Array, b: Float32Array) => {
  let sum = 0
  for (let index = 0; index < a.length; index++) sum += a[index] * b[index]
  return sum
}

/** The candidates' chunk ids ranked by the exact similarity of their float32 vectors, best first. */
function rankExactly(ctx: AppContext, candidates: VectorHit[], query: Float32Array) {
  if (candidates.length === 0) return []
  return ctx.db
    .select({ id: knowledgeBaseChunks.id, embedding: knowledgeBaseChunks.embedding })
    .from(knowledgeBaseChunks)
    .where(
      inArray(
        knowledgeBaseChunks.id,
        candidates.map((hit) => hit.chunkId),
      ),
    )
    .all()
    .map(({ id, embedding }) => ({ id, similarity: dot(vectorOf(embedding), query) }))
    .sort((a, b) => b.similarity - a.similarity)
}

/** The chunks with these ids, by id: only the few a search returns are read whole (texts and metadata). */
function chunksById(ctx: AppContext, ids: number[]) {
  const chunks =
    ids.length === 0 ? [] : ctx.db.select().from(knowledgeBaseChunks).where(inArray(knowledgeBaseChunks.id, ids)).all()
  return new Map(chunks.map((chunk) => [chunk.id, chunk]))
}

/**
 * The `limit` chunks of the completed chunked `documents` nearest `query` (at least `minSimilarity`), best first.
 * Documents embedded by another connection or model than `embedder` are reported, not compared.
 */
export async function searchChunks(
  ctx: AppContext,
  embedder: Embedder | null,
  documents: KnowledgeDocumentRow[],
  {
    query,
    limit,
    minSimilarity = -1,
    signal,
  }: { query: string; limit: number; minSimilarity?: number; signal?: AbortSignal },
): Promise<ChunkSearch> {
  const result: ChunkSearch = { chunks: [], unavailable: [], embeddingMs: 0, searchMs: 0, embeddingTokens: 0 }
  const searchable = documents.filter((row) => {
    if (!embedder) {
      result.unavailable.push({ document_uuid: row.documentUuid, reason: NO_EMBEDDINGS })
      return false
    }
    if (row.embeddingConnectionUuid !== embedder.connectionUuid || row.embeddingModel !== embedder.model) {
      result.unavailable.push({
        document_uuid: row.documentUuid,
        reason: `embedded with model ${row.embeddingModel}, not ${embedder.model} (the model this search uses): process it again to search it`,
      })
      return false
    }
    return true
  })
  if (!embedder || searchable.length === 0) return result
  const embeddingStart = performance.now()
  const {
    vectors: [queryVector],
    tokens,
  } = await embedder.client.embed([query], { signal })
  result.embeddingMs = performance.now() - embeddingStart
  result.embeddingTokens = tokens
  const searchStart = performance.now()
  const byId = new Map(searchable.map((row) => [row.id, row]))
  const { index, loaded } = await loadVectors(ctx, searchable)
  const candidates = await nearest(index, loaded, queryVector, candidatesFor(limit))
  const best = rankExactly(ctx, candidates, queryVector)
    .filter(({ similarity }) => similarity >= minSimilarity)
    .slice(0, limit)
  const chunks = chunksById(
    ctx,
    best.map(({ id }) => id),
  )
  for (const { id, similarity } of best) {
    const chunk = chunks.get(id)!
    const row = byId.get(chunk.documentId)!
    result.chunks.push({
      id: chunk.id,
      document_id: row.id,
      document_uuid: row.documentUuid,
      filename: row.filename,
      chunk_index: chunk.chunkIndex,
      chunk_text: chunk.chunkText,
      contextualized_text: chunk.contextualizedText,
      chunk_metadata: chunk.chunkMetadata,
      similarity: round4(similarity),
    })
  }
  result.searchMs = performance.now() - searchStart
  return result
}

/** `POST /knowledge-base/search`: the organization's documents (or those named), with the default configuration's model. */
export async function searchKnowledgeBase(
  ctx: AppContext,
  organizationId: number,
  embedder: Embedder | null,
  body: { query: string; limit?: number; document_uuids?: string[]; min_similarity?: number },
) {
  const { ready, unavailable } = documentsToSearch(ctx, organizationId, body.document_uuids ?? null)
  const chunked = ready.filter((row) => row.retrievalMode === 'chunked')
  const found = await searchChunks(ctx, embedder, chunked, {
    query: body.query,
    limit: body.limit ?? 5,
    minSimilarity: body.min_similarity,
  }).catch((error) => {
    throw error instanceof ModelServerError ? upstreamFailed(error.message, error) : error
  })
  return {
    chunks: found.chunks,
    query: body.query,
    total_results: found.chunks.length,
    unavailable_documents: [...unavailable, ...found.unavailable],
  }
}
