import { createHash } from 'node:crypto'
import { and, asc, eq, inArray, lt, ne, or } from 'drizzle-orm'
import type { AppContext } from '../context'
import { knowledgeBaseChunks, knowledgeBaseDocuments, type KnowledgeDocumentRow } from '../db/schema'
import { transaction } from '../db/transaction'
import { incremented } from '../db/expressions'
import { isoNow } from '../lib/clock'
import { failureStreak } from '../lib/failure-streak'
import { chunkText } from './chunking'
import { NO_EMBEDDINGS, organizationEmbedder } from './embedder'
import { extractInWorker } from './extract'
import type { ExtractedText } from './extract-text'
import { DOCUMENT_LIMITS, formatOf } from './formats'
import { refreshVectors } from './search'
import { vectorBytes } from './vector-index'

/**
 * The background processing of queued documents, one at a time: claim (a conditional UPDATE … RETURNING that sets a
 * lease and counts the attempt), read the file, extract its text in a worker, chunk, embed, store. The lease is renewed
 * while the work goes on; a document whose lease ran out (its process died, or the server restarted) is claimed again,
 * up to MAX_ATTEMPTS, then failed with the reason — never left `processing`. Writes are fenced by the attempt number,
 * so a process that lost its lease cannot overwrite the one that took over.
 */

export const MAX_ATTEMPTS = 3
export const DEFAULT_LEASE_MS = 30_000
const POLL_MS = 5_000
const INSERT_BATCH = 500

export class DocumentFailure extends Error {
  constructor(
    message: string,
    readonly metadata: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Claims the oldest queued document, or one whose lease expired; null when there is none. In one transaction, which
 * serializes the claims of every instance: two never pick the same document, and neither comes back empty-handed
 * because the other took the one it had picked.
 */
export function claimNextDocument(ctx: AppContext, leaseMs: number): KnowledgeDocumentRow | null {
  return transaction(ctx, () => claimNext(ctx, leaseMs))
}

function claimNext(ctx: AppContext, leaseMs: number): KnowledgeDocumentRow | null {
  const now = ctx.clock.now()
  const claimable = and(
    eq(knowledgeBaseDocuments.isActive, true),
    or(
      eq(knowledgeBaseDocuments.processingStatus, 'pending'),
      and(
        eq(knowledgeBaseDocuments.processingStatus, 'processing'),
        lt(knowledgeBaseDocuments.processingSince, iso(now - leaseMs)),
      ),
    ),
  )
  const next = ctx.db
    .select({ id: knowledgeBaseDocuments.id })
    .from(knowledgeBaseDocuments)
    .where(claimable)
    .orderBy(asc(knowledgeBaseDocuments.id))
    .limit(1)
  const claimed = ctx.db
    .update(knowledgeBaseDocuments)
    .set({
      processingStatus: 'processing',
      processingSince: iso(now),
      updatedAt: iso(now),
      processingAttempts: incremented(knowledgeBaseDocuments.processingAttempts),
    })
    .where(and(inArray(knowledgeBaseDocuments.id, next), claimable))
    .returning()
    .get()
  return claimed ?? null
}

/** Only the claim that holds the document (same attempt, still processing, not deleted) may change it. */
const heldBy = (claim: KnowledgeDocumentRow) =>
  and(
    eq(knowledgeBaseDocuments.id, claim.id),
    eq(knowledgeBaseDocuments.processingAttempts, claim.processingAttempts),
    eq(knowledgeBaseDocuments.processingStatus, 'processing'),
    eq(knowledgeBaseDocuments.isActive, true),
  )

function failDocument(
  ctx: AppContext,
  claim: KnowledgeDocumentRow,
  reason: string,
  metadata: Record<string, unknown> = {},
): void {
  const failed = ctx.db
    .update(knowledgeBaseDocuments)
    .set({
      processingStatus: 'failed',
      processingError: reason,
      processingSince: null,
      doclingMetadata: { ...claim.doclingMetadata, ...metadata },
      updatedAt: isoNow(ctx.clock),
    })
    .where(heldBy(claim))
    .returning({ id: knowledgeBaseDocuments.id })
    .get()
  if (failed)
    ctx.log.warn(
      { organizationId: claim.organizationId, document: claim.documentUuid, reason },
      'knowledge-base document failed',
    )
}

/** Another active document of the organization with the same content (failed ones do not count: they may be retried). */
function duplicateOf(ctx: AppContext, claim: KnowledgeDocumentRow, hash: string): KnowledgeDocumentRow | undefined {
  return ctx.db
    .select()
    .from(knowledgeBaseDocuments)
    .where(
      and(
        eq(knowledgeBaseDocuments.organizationId, claim.organizationId),
        eq(knowledgeBaseDocuments.fileHash, hash),
        eq(knowledgeBaseDocuments.isActive, true),
        ne(knowledgeBaseDocuments.id, claim.id),
        inArray(knowledgeBaseDocuments.processingStatus, ['pending', 'processing', 'completed']),
      ),
    )
    .get()
}

async function readFile(ctx: AppContext, claim: KnowledgeDocumentRow): Promise<Uint8Array> {
  const object = await ctx.objects.get(claim.fileKey)
  if (!object) throw new DocumentFailure('the uploaded file is missing')
  if (object.size === 0) throw new DocumentFailure('the file is empty')
  if (object.size > DOCUMENT_LIMITS.maxBytes)
    throw new DocumentFailure(`the file is larger than ${DOCUMENT_LIMITS.maxBytes} bytes`)
  return await object.bytes()
}

function plainText(extracted: ExtractedText): string {
  return extracted.blocks
    .map(({ text }) => text.trim())
    .filter(Boolean)
    .join('\n\n')
}

type Outcome = {
  metadata: Record<string, unknown>
  fullText: string | null
  chunks: ReturnType<typeof chunkText>
  vectors: Float32Array[]
  embedding: { connectionUuid: string; model: string; tokens: number } | null
}

async function work(ctx: AppContext, claim: KnowledgeDocumentRow, signal: AbortSignal): Promise<Outcome> {
  const format = formatOf(claim.filename)
  if (!format) throw new DocumentFailure('the file type is not supported')
  const bytes = await readFile(ctx, claim)
  const hash = createHash('sha256').update(bytes).digest('hex')
  const duplicate = duplicateOf(ctx, claim, hash)
  if (duplicate) {
    throw new DocumentFailure(`the same file as document ${duplicate.documentUuid} (${duplicate.filename})`, {
      duplicate_of: duplicate.documentUuid,
      duplicate_filename: duplicate.filename,
    })
  }
  ctx.db
    .update(knowledgeBaseDocuments)
    .set({ fileHash: hash, fileSizeBytes: bytes.byteLength })
    .where(heldBy(claim))
    .run()
  // Before any work: a chunked document without an embeddings model cannot succeed.
  const embedder = claim.retrievalMode === 'chunked' ? organizationEmbedder(ctx, claim.organizationId) : null
  if (claim.retrievalMode === 'chunked' && !embedder) throw new DocumentFailure(NO_EMBEDDINGS)
  const extracted = await extractInWorker({ format, bytes }, { signal })
  const text = plainText(extracted)
  const metadata = { num_pages: extracted.numPages, document_type: format, characters: text.length }
  if (text.length > DOCUMENT_LIMITS.maxCharacters)
    throw new DocumentFailure(`the document has more than ${DOCUMENT_LIMITS.maxCharacters} characters of text`)
  if (text === '')
    throw new DocumentFailure(
      format === 'pdf' ? 'no text found in the PDF (a scanned PDF needs OCR first)' : 'no text found in the file',
    )
  if (!embedder) {
    if (text.length > DOCUMENT_LIMITS.maxFullDocumentCharacters) {
      throw new DocumentFailure(
        `full_document takes at most ${DOCUMENT_LIMITS.maxFullDocumentCharacters} characters (this one has ${text.length}): use chunked`,
      )
    }
    return { metadata, fullText: text, chunks: [], vectors: [], embedding: null }
  }
  const chunks = chunkText(extracted.blocks, { markdown: extracted.markdown })
  const { vectors, tokens } = await embedder.client.embed(
    chunks.map(({ contextualized_text }) => contextualized_text),
    { signal },
  )
  const counted = tokens > 0 ? tokens : chunks.reduce((sum, chunk) => sum + chunk.token_count, 0)
  return {
    metadata,
    fullText: null,
    chunks,
    vectors,
    embedding: { connectionUuid: embedder.connectionUuid, model: embedder.model, tokens: counted },
  }
}

/** Stores the outcome if the claim still holds the document; chunks go in batches inside one transaction. */
function complete(ctx: AppContext, claim: KnowledgeDocumentRow, outcome: Outcome): KnowledgeDocumentRow | null {
  return transaction(ctx, () => {
    const now = isoNow(ctx.clock)
    const done = ctx.db
      .update(knowledgeBaseDocuments)
      .set({
        processingStatus: 'completed',
        processingError: null,
        processingSince: null,
        fullText: outcome.fullText,
        totalChunks: outcome.chunks.length,
        doclingMetadata: outcome.metadata,
        embeddingConnectionUuid: outcome.embedding?.connectionUuid ?? null,
        embeddingModel: outcome.embedding?.model ?? null,
        embeddingDimension: outcome.vectors[0]?.length ?? null,
        embeddingTokens: outcome.embedding?.tokens ?? 0,
        updatedAt: now,
        completedAt: now,
      })
      .where(heldBy(claim))
      .returning()
      .get()
    if (!done) return null
    ctx.knowledge.vectors.drop(claim.organizationId, claim.id)
    ctx.db.delete(knowledgeBaseChunks).where(eq(knowledgeBaseChunks.documentId, claim.id)).run()
    for (let start = 0; start < outcome.chunks.length; start += INSERT_BATCH) {
      ctx.db
        .insert(knowledgeBaseChunks)
        .values(
          outcome.chunks.slice(start, start + INSERT_BATCH).map((chunk, offset) => ({
            documentId: claim.id,
            organizationId: claim.organizationId,
            chunkIndex: chunk.chunk_index,
            chunkText: chunk.chunk_text,
            contextualizedText: chunk.contextualized_text,
            chunkMetadata: chunk.chunk_metadata,
            tokenCount: chunk.token_count,
            embedding: vectorBytes(outcome.vectors[start + offset]),
          })),
        )
        .run()
    }
    return done
  })
}

/** Works on one claimed document to its end (completed or failed), renewing its lease meanwhile. */
export async function processClaimedDocument(
  ctx: AppContext,
  claim: KnowledgeDocumentRow,
  options: { leaseMs: number; signal: AbortSignal },
): Promise<void> {
  const log = { organizationId: claim.organizationId, document: claim.documentUuid, attempt: claim.processingAttempts }
  if (claim.processingAttempts > MAX_ATTEMPTS) {
    return failDocument(
      ctx,
      claim,
      `processing was interrupted ${MAX_ATTEMPTS} times (the server stopped or restarted while it ran)`,
    )
  }
  const renewals = failureStreak(ctx.log.child({ documentUuid: claim.documentUuid }), {
    failed: 'document lease not renewed',
    recovered: 'document lease renewed again',
  })
  const renew = setInterval(
    () => {
      try {
        ctx.db
          .update(knowledgeBaseDocuments)
          .set({ processingSince: isoNow(ctx.clock) })
          .where(heldBy(claim))
          .run()
        renewals.succeeded()
      } catch (error) {
        // the database is unreachable: the lease is renewed at the next beat, or lapses and the work is redone
        renewals.failed(error)
      }
    },
    Math.max(10, Math.floor(options.leaseMs / 3)),
  )
  const startedAt = performance.now()
  try {
    const outcome = await work(ctx, claim, options.signal)
    const completed = complete(ctx, claim, outcome)
    if (completed) {
      // Searchable without a load at its first search when its organization's vectors are in memory.
      await refreshVectors(ctx, completed).catch((error) =>
        ctx.log.warn({ ...log, err: error }, 'knowledge-base document not loaded into memory'),
      )
      ctx.log.info(
        {
          ...log,
          chunks: outcome.chunks.length,
          tokens: outcome.embedding?.tokens ?? 0,
          ms: Math.round(performance.now() - startedAt),
        },
        'knowledge-base document ready',
      )
    }
  } catch (error) {
    // Stopping (shutdown) leaves the claim to expire and be taken up again; anything else fails the document.
    if (options.signal.aborted) return
    if (!(error instanceof DocumentFailure))
      ctx.log.warn({ ...log, err: error }, 'knowledge-base document processing failed')
    failDocument(
      ctx,
      claim,
      error instanceof Error ? error.message : String(error),
      error instanceof DocumentFailure ? error.metadata : {},
    )
  } finally {
    clearInterval(renew)
  }
}

/** Processes queued documents until none is left (tests; the processor below does it in the background). */
export async function processQueuedDocuments(ctx: AppContext, leaseMs = DEFAULT_LEASE_MS): Promise<number> {
  let processed = 0
  for (let claim = claimNextDocument(ctx, leaseMs); claim; claim = claimNextDocument(ctx, leaseMs)) {
    await processClaimedDocument(ctx, claim, { leaseMs, signal: new AbortController().signal })
    processed++
  }
  return processed
}

/**
 * The background processor: one document at a time, woken by `ctx.knowledge.wake()` when one is queued and every few
 * seconds (documents whose lease expired on another instance, or before a restart). `stop` abandons the current one
 * to its lease.
 */
export function startKnowledgeProcessor(
  ctx: AppContext,
  options: { leaseMs?: number } = {},
): { stop(): Promise<void> } {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  const stopping = new AbortController()
  let nudge: (() => void) | null = null
  ctx.knowledge.wake = () => nudge?.()
  const idle = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, POLL_MS)
      function done() {
        clearTimeout(timer)
        nudge = null
        resolve()
      }
      nudge = done
      stopping.signal.addEventListener('abort', done, { once: true })
    })
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      let claim: KnowledgeDocumentRow | null = null
      try {
        claim = claimNextDocument(ctx, leaseMs)
        if (claim) await processClaimedDocument(ctx, claim, { leaseMs, signal: stopping.signal })
      } catch (error) {
        ctx.log.error({ err: error }, 'knowledge-base processor failed')
      }
      if (!claim) await idle()
    }
  })()
  return {
    async stop() {
      ctx.knowledge.wake = () => {}
      stopping.abort()
      await loop
    },
  }
}
