import { and, eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { uploads } from '../db/schema/campaigns'

export type Upload = typeof uploads.$inferSelect

/** A contacts file the organization finished uploading, or null (unknown key, another organization's, or incomplete). */
export function findUpload(ctx: AppContext, organizationId: number, fileKey: string): Upload | null {
  const upload = ctx.db
    .select()
    .from(uploads)
    .where(and(eq(uploads.fileKey, fileKey), eq(uploads.organizationId, organizationId)))
    .get()
  return upload?.completedAt ? upload : null
}
