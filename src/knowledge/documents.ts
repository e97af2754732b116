import { and, count, desc, eq, gte, inArray, lt, lte, ne, sum } from 'drizzle-orm'
import type { AgentDefinition, DefinitionError } from '../definition/definition'
import type { AppContext } from '../context'
import {
  knowledgeBaseChunks,
  knowledgeBaseDocuments,
  type DocumentStatus,
  type KnowledgeDocumentRow,
  type RetrievalMode,
} from '../db/schema'
import { transaction } from '../db/transaction'
import { isoNow } from '../lib/clock'
import { conflict, invalid, notFound, refused } from '../lib/errors'
import { valueError } from '../lib/validation'
import {
  completedUploadSize,
  markUploadUsed,
  sanitizeFileName,
  signUpload,
  UNUSED_UPLOAD_TTL_MS,
} from '../storage/uploads'
import { nodeDocumentUuids } from '../tools/knowledge'
import { NO_EMBEDDINGS, organizationEmbedder } from './embedder'
import { DOCUMENT_LIMITS, EXTENSIONS, extensionOf, FORMATS, GENERIC_MIME_TYPE } from './formats'

/**
 * Knowledge-base documents under the reference's routes: an upload URL bound to a new document (the same signed,
 * size-capped, one-time PUT as campaign CSVs), then `process-document` queues it for the background processor
 * (processing.ts). Unlike the reference, the document exists from the upload URL on, so `process-document` only
 * accepts this organization's document with its own key, once, after the upload completed.
 */

export type DocumentView = {
  id: number
  document_uuid: string
  filename: string
  file_size_bytes: number
  file_hash: string | null
  mime_type: string
  retrieval_mode: RetrievalMode
  source_url: null
  total_chunks: number
  processing_status: Exclude<DocumentStatus, 'uploading'>
  processing_error: string | null
  processing_attempts: number
  embedding_model: string | null
  embedding_dimension: number | null
  embedding_tokens: number
  docling_metadata: Record<string, unknown>
  custom_metadata: Record<string, unknown>
  is_active: boolean
  created_at: string
  updated_at: string
}

export const DOCUMENT_NOT_FOUND = 'Document not found'

export function documentView(row: KnowledgeDocumentRow): DocumentView {
  return {
    id: row.id,
    document_uuid: row.documentUuid,
    filename: row.filename,
    file_size_bytes: row.fileSizeBytes,
    file_hash: row.fileHash,
    mime_type: row.mimeType,
    retrieval_mode: row.retrievalMode,
    source_url: null,
    total_chunks: row.totalChunks,
    processing_status: row.processingStatus === 'uploading' ? 'pending' : row.processingStatus,
    processing_error: row.processingError,
    processing_attempts: row.processingAttempts,
    embedding_model: row.embeddingModel,
    embedding_dimension: row.embeddingDimension,
    embedding_tokens: row.embeddingTokens,
    docling_metadata: row.doclingMetadata,
    custom_metadata: row.customMetadata,
    is_active: row.isActive,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** The organization's active document, uploaded or not. */
export function findDocumentRow(
  ctx: AppContext,
  organizationId: number,
  documentUuid: string,
): KnowledgeDocumentRow | undefined {
  return ctx.db
    .select()
    .from(knowledgeBaseDocuments)
    .where(
      and(
        eq(knowledgeBaseDocuments.documentUuid, documentUuid),
        eq(knowledgeBaseDocuments.organizationId, organizationId),
        eq(knowledgeBaseDocuments.isActive, true),
      ),
    )
    .get()
}

function requireDocument(ctx: AppContext, organizationId: number, documentUuid: string): KnowledgeDocumentRow {
  const row = findDocumentRow(ctx, organizationId, documentUuid)
  if (!row || row.processingStatus === 'uploading') throw notFound(DOCUMENT_NOT_FOUND)
  return row
}

type UploadUrlInput = {
  filename: string
  mime_type: string
  file_size?: number
  custom_metadata?: Record<string, unknown>
}

/** A new document and the URL to PUT its file to (the PUT sends `mime_type` as its Content-Type). */
export function createDocumentUpload(ctx: AppContext, organizationId: number, input: UploadUrlInput) {
  const extension = extensionOf(input.filename)
  const type = FORMATS[extension]
  const mimeType = input.mime_type.split(';')[0].trim().toLowerCase()
  const problems = []
  if (!type) {
    const hint = extension === '.doc' ? ' (save a .doc as .docx)' : ''
    problems.push(
      valueError(['body', 'filename'], `the file type must be one of ${EXTENSIONS.join(', ')}${hint}`, input.filename),
    )
  } else if (!type.mimeTypes.includes(mimeType) && mimeType !== GENERIC_MIME_TYPE) {
    problems.push(
      valueError(['body', 'mime_type'], `a ${extension} file is ${type.mimeTypes.join(' or ')}`, input.mime_type),
    )
  }
  if (input.file_size !== undefined && input.file_size > DOCUMENT_LIMITS.maxBytes) {
    problems.push(
      valueError(['body', 'file_size'], `a document is at most ${DOCUMENT_LIMITS.maxBytes} bytes`, input.file_size),
    )
  }
  if (problems.length > 0) throw invalid(problems)
  const documentUuid = crypto.randomUUID()
  const fileKey = `knowledge_base/${organizationId}/${documentUuid}/${sanitizeFileName(input.filename)}`
  const now = isoNow(ctx.clock)
  const grant = transaction(ctx, () => {
    ctx.db
      .insert(knowledgeBaseDocuments)
      .values({
        documentUuid,
        organizationId,
        filename: input.filename,
        fileKey,
        mimeType,
        retrievalMode: 'chunked',
        processingStatus: 'uploading',
        customMetadata: input.custom_metadata ?? {},
        createdAt: now,
        updatedAt: now,
      })
      .run()
    return signUpload(ctx, organizationId, {
      fileKey,
      fileName: input.filename,
      contentType: mimeType,
      maxBytes: input.file_size ?? DOCUMENT_LIMITS.maxBytes,
    })
  })
  return { upload_url: grant.upload_url, document_uuid: documentUuid, s3_key: fileKey, expires_in: grant.expires_in }
}

/**
 * Documents whose file never came within a day of their upload URL (storage/uploads.ts removes such uploads then): an
 * `uploading` row nobody can see or submit any more. Returns how many were removed.
 */
export function removeDocumentsNeverUploaded(ctx: AppContext): number {
  const grantedBefore = new Date(ctx.clock.now() - UNUSED_UPLOAD_TTL_MS).toISOString()
  return ctx.db
    .delete(knowledgeBaseDocuments)
    .where(
      and(
        eq(knowledgeBaseDocuments.processingStatus, 'uploading'),
        lt(knowledgeBaseDocuments.createdAt, grantedBefore),
      ),
    )
    .returning({ id: knowledgeBaseDocuments.id })
    .all().length
}

type ProcessInput = { document_uuid: string; s3_key: string; retrieval_mode?: RetrievalMode }

/** Queues an uploaded document for processing; chunked documents need an embeddings model, checked before any work. */
export function submitDocument(ctx: AppContext, organizationId: number, input: ProcessInput): DocumentView {
  const row = findDocumentRow(ctx, organizationId, input.document_uuid)
  if (!row) throw notFound(DOCUMENT_NOT_FOUND)
  if (row.processingStatus !== 'uploading')
    throw conflict('This document was submitted already: upload the file again to a new upload URL to add it again.')
  const retrievalMode = input.retrieval_mode ?? 'chunked'
  const problems = []
  if (input.s3_key !== row.fileKey)
    problems.push(valueError(['body', 's3_key'], 'is not the key issued with this document_uuid', input.s3_key))
  if (retrievalMode === 'chunked' && !organizationEmbedder(ctx, organizationId))
    problems.push(
      valueError(
        ['body', 'retrieval_mode'],
        `chunked documents need embeddings: ${NO_EMBEDDINGS}, or use full_document`,
        retrievalMode,
      ),
    )
  if (problems.length > 0) throw invalid(problems)
  const size = completedUploadSize(ctx, organizationId, row.fileKey)
  if (size === null) throw conflict('The file has not been uploaded yet: PUT it to the upload_url first.')
  if (size === 0)
    throw refused('The uploaded file is empty: ask for a new upload URL and upload the file with its content.')
  if (!markUploadUsed(ctx, organizationId, row.fileKey))
    throw conflict('The file has not been uploaded yet: PUT it to the upload_url first.')
  const queued = ctx.db
    .update(knowledgeBaseDocuments)
    .set({ processingStatus: 'pending', retrievalMode, fileSizeBytes: size, updatedAt: isoNow(ctx.clock) })
    .where(and(eq(knowledgeBaseDocuments.id, row.id), eq(knowledgeBaseDocuments.processingStatus, 'uploading')))
    .returning()
    .get()
  if (!queued) throw conflict('This document was submitted already.')
  ctx.log.info({ organizationId, document: row.documentUuid, retrievalMode, size }, 'knowledge-base document queued')
  ctx.knowledge.wake()
  return documentView(queued)
}

/**
 * Queues a completed or failed document again (the reference has no way back from `failed`): its stored file is read,
 * chunked and embedded anew with the organization's current embeddings model, `retrieval_mode` kept unless given.
 * Until it is completed again, retrieval reports it as not ready, like a new one. 409 while it is queued or processing.
 */
export function reprocessDocument(
  ctx: AppContext,
  organizationId: number,
  documentUuid: string,
  input: { retrieval_mode?: RetrievalMode },
): DocumentView {
  const row = requireDocument(ctx, organizationId, documentUuid)
  const retrievalMode = input.retrieval_mode ?? row.retrievalMode
  if (retrievalMode === 'chunked' && !organizationEmbedder(ctx, organizationId))
    throw invalid([
      valueError(
        ['body', 'retrieval_mode'],
        `chunked documents need embeddings: ${NO_EMBEDDINGS}, or use full_document`,
        retrievalMode,
      ),
    ])
  const queued = ctx.db
    .update(knowledgeBaseDocuments)
    .set({
      processingStatus: 'pending',
      processingError: null,
      processingAttempts: 0,
      processingSince: null,
      retrievalMode,
      updatedAt: isoNow(ctx.clock),
    })
    .where(
      and(
        eq(knowledgeBaseDocuments.id, row.id),
        inArray(knowledgeBaseDocuments.processingStatus, ['completed', 'failed']),
      ),
    )
    .returning()
    .get()
  if (!queued) throw conflict(`This document is ${row.processingStatus}: wait until it is completed or failed.`)
  ctx.log.info({ organizationId, document: documentUuid, retrievalMode }, 'knowledge-base document queued again')
  ctx.knowledge.wake()
  return documentView(queued)
}

export function listDocuments(
  ctx: AppContext,
  organizationId: number,
  query: { status?: Exclude<DocumentStatus, 'uploading'>; limit?: number; offset?: number },
) {
  const limit = query.limit ?? 100
  const offset = query.offset ?? 0
  const where = and(
    eq(knowledgeBaseDocuments.organizationId, organizationId),
    eq(knowledgeBaseDocuments.isActive, true),
    query.status
      ? eq(knowledgeBaseDocuments.processingStatus, query.status)
      : ne(knowledgeBaseDocuments.processingStatus, 'uploading'),
  )
  const rows = ctx.db
    .select()
    .from(knowledgeBaseDocuments)
    .where(where)
    .orderBy(desc(knowledgeBaseDocuments.id))
    .limit(limit)
    .offset(offset)
    .all()
  const total = ctx.db.select({ total: count() }).from(knowledgeBaseDocuments).where(where).get()!.total
  return { documents: rows.map(documentView), total, limit, offset }
}

export const getDocument = (ctx: AppContext, organizationId: number, documentUuid: string): DocumentView =>
  documentView(requireDocument(ctx, organizationId, documentUuid))

/** Deletes the document: its chunks and file go at once; the row stays inactive (runs' logs may name it). */
export async function deleteDocument(
  ctx: AppContext,
  organizationId: number,
  documentUuid: string,
): Promise<{ message: string }> {
  const row = requireDocument(ctx, organizationId, documentUuid)
  transaction(ctx, () => {
    ctx.db
      .update(knowledgeBaseDocuments)
      .set({ isActive: false, fullText: null, updatedAt: isoNow(ctx.clock) })
      .where(eq(knowledgeBaseDocuments.id, row.id))
      .run()
    ctx.db.delete(knowledgeBaseChunks).where(eq(knowledgeBaseChunks.documentId, row.id)).run()
  })
  ctx.knowledge.vectors.drop(organizationId, row.id)
  await ctx.objects.delete(row.fileKey)
  ctx.log.info({ organizationId, document: documentUuid }, 'knowledge-base document deleted')
  return { message: 'Document deleted' }
}

/**
 * The embedding tokens the organization's documents completed within the bounds (ISO times, inclusive) took to process,
 * deleted documents included (their tokens were spent).
 */
export function ingestionEmbeddingTokens(
  ctx: AppContext,
  organizationId: number,
  bounds: { createdFrom?: string; createdTo?: string },
): number {
  const documents = knowledgeBaseDocuments
  const [row] = ctx.db
    .select({ tokens: sum(documents.embeddingTokens) })
    .from(documents)
    .where(
      and(
        eq(documents.organizationId, organizationId),
        bounds.createdFrom === undefined ? undefined : gte(documents.completedAt, bounds.createdFrom),
        bounds.createdTo === undefined ? undefined : lte(documents.completedAt, bounds.createdTo),
      ),
    )
    .all()
  return Number(row?.tokens ?? 0)
}

/**
 * What is wrong with a definition's `document_uuids` (checked on save and at publish, like `tool_uuids`): uuids that
 * name no active document of the organization. Documents still processing, or failed, may be named: retrieval
 * reports them until they are ready.
 */
export function documentReferenceErrors(
  ctx: AppContext,
  organizationId: number,
  definition: AgentDefinition,
): DefinitionError[] {
  const named = definition.nodes.map((node) => ({ node, uuids: nodeDocumentUuids(node) }))
  const all = [...new Set(named.flatMap(({ uuids }) => uuids))]
  if (all.length === 0) return []
  const known = new Set(
    ctx.db
      .select({ uuid: knowledgeBaseDocuments.documentUuid })
      .from(knowledgeBaseDocuments)
      .where(
        and(
          eq(knowledgeBaseDocuments.organizationId, organizationId),
          eq(knowledgeBaseDocuments.isActive, true),
          ne(knowledgeBaseDocuments.processingStatus, 'uploading'),
          inArray(knowledgeBaseDocuments.documentUuid, all),
        ),
      )
      .all()
      .map(({ uuid }) => uuid),
  )
  return named.flatMap(({ node, uuids }) =>
    uuids
      .filter((uuid) => !known.has(uuid))
      .map(
        (uuid): DefinitionError => ({
          kind: 'node',
          id: node.id,
          field: 'data.document_uuids',
          message: `Document '${uuid}' is not a document of this organization`,
        }),
      ),
  )
}
