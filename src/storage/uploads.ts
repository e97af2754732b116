import { and, eq, inArray, isNull, lt } from 'drizzle-orm'
import type { AppContext } from '../context'
import { uploads } from '../db/schema/campaigns'
import { Type as t } from '@sinclair/typebox'
import { checkValue } from '../lib/validation'
import { conflict, invalid, notFound, refused, tooLarge, unsupportedType } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { ObjectExistsError, ObjectTooLargeError } from './object-store'
import { signedObjectUrl, verifySignedFields } from './signed-urls'

export const UPLOAD_URL_TTL_SECONDS = 900
export const CSV_CONTENT_TYPE = 'text/csv'

export type UploadGrant = { upload_url: string; file_key: string; expires_in: number }
type UploadQuery = { key: string; content_type: string; size: string; expires: string; signature: string }
type DownloadQuery = { key: string; expires: string; signature: string }

export const sanitizeFileName = (fileName: string) => fileName.replace(/[^A-Za-z0-9._-]/g, '_').slice(-120)
const baseContentType = (header: string | null) => (header ?? '').split(';')[0].trim().toLowerCase()
const fileTooLarge = (maxBytes: number) =>
  tooLarge(`The file is larger than the ${maxBytes} bytes this upload URL allows`)

/** Signs a short-lived PUT URL on this server for one CSV of at most `fileSize` bytes in the organization's area. */
export function createUploadUrl(
  ctx: AppContext,
  organizationId: number,
  fileName: string,
  fileSize: number,
  contentType: string,
): UploadGrant {
  // Rules that depend on the configuration, worded like the schema's own errors.
  const problems = [
    ...checkValue(t.Integer({ maximum: ctx.config.maxUploadBytes }), fileSize, ['body', 'file_size']),
    ...checkValue(t.Literal(CSV_CONTENT_TYPE), baseContentType(contentType), ['body', 'content_type']),
  ]
  if (problems.length > 0) throw invalid(problems)
  const fileKey = `campaigns/${organizationId}/${crypto.randomUUID()}_${sanitizeFileName(fileName)}`
  return signUpload(ctx, organizationId, { fileKey, fileName, contentType: CSV_CONTENT_TYPE, maxBytes: fileSize })
}

/**
 * Records an upload of at most `maxBytes` to `fileKey` in the organization's area and signs its one-time PUT URL (the
 * PUT must send `contentType`). Callers choose the key and check the type and size rules of what they take.
 */
export function signUpload(
  ctx: AppContext,
  organizationId: number,
  {
    fileKey,
    fileName,
    contentType,
    maxBytes,
  }: { fileKey: string; fileName: string; contentType: string; maxBytes: number },
): UploadGrant {
  ctx.db
    .insert(uploads)
    .values({
      organizationId,
      fileKey,
      fileName,
      contentType,
      declaredSize: maxBytes,
      createdAt: isoNow(ctx.clock),
    })
    .run()
  const uploadUrl = signedObjectUrl(
    ctx,
    'upload',
    { key: fileKey, content_type: contentType, size: String(maxBytes) },
    UPLOAD_URL_TTL_SECONDS,
  )
  return { upload_url: uploadUrl, file_key: fileKey, expires_in: UPLOAD_URL_TTL_SECONDS }
}

/** The size of the completed upload to `fileKey` in the organization's area, or null when none was completed. */
export function completedUploadSize(ctx: AppContext, organizationId: number, fileKey: string): number | null {
  const row = ctx.db
    .select({ size: uploads.size, completedAt: uploads.completedAt })
    .from(uploads)
    .where(and(eq(uploads.fileKey, fileKey), eq(uploads.organizationId, organizationId)))
    .get()
  return row?.completedAt ? row.size : null
}

const alreadyUploaded = () =>
  conflict('This upload URL has been used already: ask for a new one to upload another file')

/** Takes the upload for this PUT: one signed URL uploads once (409 while another PUT of it runs, or once one succeeded). */
function claimUpload(ctx: AppContext, fileKey: string): void {
  const claimed = ctx.db
    .update(uploads)
    .set({ receivingSince: isoNow(ctx.clock) })
    .where(and(eq(uploads.fileKey, fileKey), isNull(uploads.completedAt), isNull(uploads.receivingSince)))
    .returning({ id: uploads.id })
    .get()
  if (!claimed) throw alreadyUploaded()
}

/** A PUT that failed (too large, cut off) leaves the URL usable for another try. */
function releaseUpload(ctx: AppContext, fileKey: string): void {
  ctx.db
    .update(uploads)
    .set({ receivingSince: null })
    .where(and(eq(uploads.fileKey, fileKey), isNull(uploads.completedAt)))
    .run()
}

/**
 * Receives the PUT of a signed upload, once. The body is streamed to the object store and refused (413, nothing kept) as
 * soon as it exceeds the signed size; the object appears only once complete.
 */
export async function receiveUpload(
  ctx: AppContext,
  query: UploadQuery,
  request: Request,
): Promise<{ file_key: string; size: number }> {
  const { signature, ...fields } = query
  verifySignedFields(ctx, 'upload', fields, signature)
  if (baseContentType(request.headers.get('content-type')) !== fields.content_type) {
    throw unsupportedType(`Content-Type must be ${fields.content_type}`)
  }
  const maxBytes = Number(fields.size)
  if (Number(request.headers.get('content-length') ?? 0) > maxBytes) throw fileTooLarge(maxBytes)
  if (!request.body) throw refused('The upload has no body')
  claimUpload(ctx, fields.key)
  let size: number
  try {
    // Never over an object already there: a campaign may have been made from it.
    size = (await ctx.objects.put(fields.key, request.body, { maxBytes, replace: false })).size
  } catch (error) {
    releaseUpload(ctx, fields.key)
    if (error instanceof ObjectTooLargeError) throw fileTooLarge(maxBytes)
    if (error instanceof ObjectExistsError) throw alreadyUploaded()
    throw error
  }
  ctx.db
    .update(uploads)
    .set({ size, completedAt: isoNow(ctx.clock) })
    .where(eq(uploads.fileKey, fields.key))
    .run()
  ctx.log.info({ fileKey: fields.key, size }, 'upload received')
  return { file_key: fields.key, size }
}

/** Streams an object behind a signed download link. */
export async function serveDownload(ctx: AppContext, query: DownloadQuery): Promise<Response> {
  const { signature, ...fields } = query
  verifySignedFields(ctx, 'download', fields, signature)
  const object = await ctx.objects.get(fields.key)
  if (!object) throw notFound('File not found')
  const name = fields.key.split('/').at(-1)!
  return new Response(object.stream(), {
    headers: {
      'content-type': CSV_CONTENT_TYPE,
      'content-length': String(object.size),
      'content-disposition': `attachment; filename="${name}"`,
    },
  })
}

/**
 * An upload granted this long ago and never taken by what it was for is removed: its signed URL expired long before,
 * and an admin who gave up on a campaign, a document or a recording would otherwise leave its file on disk for good.
 */
export const UNUSED_UPLOAD_TTL_MS = 24 * 3_600_000
const SWEEP_BATCH = 100

/**
 * What the upload was granted for takes it (a campaign's contacts, a document, a recording): it is kept from then on.
 * False when there is no such upload left (removed unused, a day after its grant).
 */
export function markUploadUsed(ctx: AppContext, organizationId: number, fileKey: string): boolean {
  const marked = ctx.db
    .update(uploads)
    .set({ usedAt: isoNow(ctx.clock) })
    .where(and(eq(uploads.fileKey, fileKey), eq(uploads.organizationId, organizationId)))
    .returning({ id: uploads.id })
    .get()
  return marked !== undefined
}

/**
 * Removes the uploads nothing took, UNUSED_UPLOAD_TTL_MS after their grant, a batch at a time until none is left: the
 * row first (only while still unused, so a campaign or document taking it at that moment keeps it, or finds it gone),
 * then the file. Returns how many.
 */
export async function removeUnusedUploads(ctx: AppContext): Promise<number> {
  const grantedBefore = new Date(ctx.clock.now() - UNUSED_UPLOAD_TTL_MS).toISOString()
  let removedCount = 0
  for (;;) {
    const removed = ctx.db
      .delete(uploads)
      .where(
        inArray(
          uploads.id,
          ctx.db
            .select({ id: uploads.id })
            .from(uploads)
            .where(and(isNull(uploads.usedAt), lt(uploads.createdAt, grantedBefore)))
            .limit(SWEEP_BATCH),
        ),
      )
      .returning()
      .all()
    await removeFiles(ctx, removed)
    removedCount += removed.length
    if (removed.length < SWEEP_BATCH) break
  }
  if (removedCount > 0) ctx.log.info({ uploads: removedCount }, 'removed uploads nothing took within a day')
  return removedCount
}

/**
 * Deletes the removed uploads' files. When the store fails, the rows whose file is still there are put back, so the
 * next pass tries again instead of leaving those files on disk (or in the bucket) with nothing pointing at them.
 */
async function removeFiles(ctx: AppContext, removed: (typeof uploads.$inferSelect)[]): Promise<void> {
  for (const [index, { fileKey }] of removed.entries()) {
    try {
      await ctx.objects.delete(fileKey)
    } catch (error) {
      ctx.db.insert(uploads).values(removed.slice(index)).run()
      throw error
    }
  }
}
