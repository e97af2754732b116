import type { AppContext } from '../context'
import type { Embedder } from './embedder'
import { documentsToSearch, searchChunks, type ChunkSearch } from './search'

/**
 * What `retrieve_from_knowledge_base(query)` answers in a conversation (reference §2.6, with its quirks fixed): the
 * node's completed `full_document` documents whole, plus the top chunks of its completed chunked documents; documents
 * that cannot be used are listed with the reason; a failing embeddings server loses the chunk hits only.
 */

export const RETRIEVAL_TOP_K = 4

export type RetrievalLog = {
  query: string
  document_uuids: string[]
  results: { document_uuid: string; filename: string; chunk_index: number; similarity: number }[]
  unavailable_documents: { document_uuid: string; reason: string }[]
  embedding_model: string | null
  embedding_tokens: number
  embedding_ms: number
  search_ms: number
  error?: string
}

type Retrieved = {
  text: string
  filename: string
  document_uuid: string
  similarity: number
  chunk_index: number
  page?: unknown
}

export async function retrieveFromKnowledgeBase(
  ctx: AppContext,
  organizationId: number,
  embedder: Embedder | null,
  documentUuids: string[],
  query: string,
  signal?: AbortSignal,
): Promise<{ result: Record<string, unknown>; log: RetrievalLog }> {
  const { ready, unavailable } = documentsToSearch(ctx, organizationId, documentUuids)
  const whole: Retrieved[] = ready
    .filter((row) => row.retrievalMode === 'full_document')
    .map((row) => ({
      text: row.fullText ?? '',
      filename: row.filename,
      document_uuid: row.documentUuid,
      similarity: 1,
      chunk_index: 0,
    }))
  const chunked = ready.filter((row) => row.retrievalMode === 'chunked')
  let search: ChunkSearch = { chunks: [], unavailable: [], embeddingMs: 0, searchMs: 0, embeddingTokens: 0 }
  let error: string | undefined
  try {
    search = await searchChunks(ctx, embedder, chunked, { query, limit: RETRIEVAL_TOP_K, signal })
  } catch (failure) {
    if (signal?.aborted) throw failure
    error = `searching the documents failed: ${failure instanceof Error ? failure.message : String(failure)}`
  }
  unavailable.push(...search.unavailable)
  const hits: Retrieved[] = search.chunks.map((chunk) => ({
    text: chunk.contextualized_text,
    filename: chunk.filename,
    document_uuid: chunk.document_uuid,
    similarity: chunk.similarity,
    chunk_index: chunk.chunk_index,
    ...(chunk.chunk_metadata.page !== undefined ? { page: chunk.chunk_metadata.page } : {}),
  }))
  const chunks = [...whole, ...hits]
  const result: Record<string, unknown> = {
    chunks,
    query,
    total_results: chunks.length,
    ...(unavailable.length > 0 ? { unavailable_documents: unavailable } : {}),
    ...(error ? { error } : {}),
  }
  const log: RetrievalLog = {
    query,
    document_uuids: documentUuids,
    results: chunks.map(({ document_uuid, filename, chunk_index, similarity }) => ({
      document_uuid,
      filename,
      chunk_index,
      similarity,
    })),
    unavailable_documents: unavailable,
    embedding_model: embedder?.model ?? null,
    embedding_tokens: search.embeddingTokens,
    embedding_ms: Math.round(search.embeddingMs),
    search_ms: Math.round(search.searchMs * 100) / 100,
    ...(error ? { error } : {}),
  }
  return { result, log }
}
