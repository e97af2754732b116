import { and, asc, eq, isNull } from 'drizzle-orm'
import type { AppContext } from '../context'
import { apiKeys } from '../db/schema'
import { notFound } from '../lib/errors'
import { isoNow } from '../lib/clock'
import type { ApiKeyScope } from './keys'

export type ApiKeyView = {
  id: number
  name: string
  key_prefix: string
  scope: ApiKeyScope
  is_active: boolean
  created_at: string
  last_used_at: string | null
  archived_at: string | null
}

const viewColumns = {
  id: apiKeys.id,
  name: apiKeys.name,
  key_prefix: apiKeys.keyPrefix,
  scope: apiKeys.scope,
  is_active: apiKeys.isActive,
  created_at: apiKeys.createdAt,
  last_used_at: apiKeys.lastUsedAt,
  archived_at: apiKeys.archivedAt,
}

export function listApiKeys(ctx: AppContext, organizationId: number, includeArchived: boolean): ApiKeyView[] {
  const scoped = eq(apiKeys.organizationId, organizationId)
  return ctx.db
    .select(viewColumns)
    .from(apiKeys)
    .where(includeArchived ? scoped : and(scoped, isNull(apiKeys.archivedAt)))
    .orderBy(asc(apiKeys.id))
    .all()
}

function setArchived(ctx: AppContext, organizationId: number, id: number, archived: boolean): void {
  const updated = ctx.db
    .update(apiKeys)
    .set({ isActive: !archived, archivedAt: archived ? isoNow(ctx.clock) : null })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.organizationId, organizationId)))
    .returning({ id: apiKeys.id })
    .get()
  if (!updated) throw notFound('API key not found')
}

export const archiveApiKey = (ctx: AppContext, organizationId: number, id: number) =>
  setArchived(ctx, organizationId, id, true)
export const reactivateApiKey = (ctx: AppContext, organizationId: number, id: number) =>
  setArchived(ctx, organizationId, id, false)
