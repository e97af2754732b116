/** Organizations and API keys as the rest of the server needs them: bootstrap, creation, authentication. */
import { eq, sql } from 'drizzle-orm'
import type { AppContext } from '../context'
import { apiKeys, organizations } from '../db/schema'
import { isoNow } from '../lib/clock'
import { digestsEqual, mintApiKey, sha256Hex } from '../lib/keys'
import { transaction } from '../db/transaction'
import { preparedQuery } from '../db/prepared'

export type ApiKeyScope = 'admin' | 'trigger'

export type Principal = { organizationId: number; apiKeyId: number; scope: ApiKeyScope }

export type CreatedApiKey = { id: number; name: string; key_prefix: string; scope: ApiKeyScope; api_key: string; created_at: string }

/** Only write last_used_at when it is this stale, so authenticated reads do not all turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000

export function ensureOrganization(ctx: AppContext, name: string): number {
  const existing = ctx.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.name, name)).get()
  if (existing) return existing.id
  return ctx.db.insert(organizations).values({ name, createdAt: isoNow(ctx.clock) }).returning({ id: organizations.id }).get().id
}

const insertKeyQuery = preparedQuery((db) => db.insert(apiKeys).values({
  organizationId: sql.placeholder('organizationId'),
  name: sql.placeholder('name'),
  scope: sql.placeholder('scope'),
  keyHash: sql.placeholder('keyHash'),
  keyPrefix: sql.placeholder('keyPrefix'),
  createdAt: sql.placeholder('createdAt'),
}).returning({ id: apiKeys.id }).prepare())

export function createApiKey(
  ctx: AppContext,
  organizationId: number,
  name: string,
  scope: ApiKeyScope = 'admin',
  rawKey: string = mintApiKey(),
): CreatedApiKey {
  const createdAt = isoNow(ctx.clock)
  const keyPrefix = rawKey.slice(0, 8)
  const row = insertKeyQuery(ctx.db).get({ organizationId, name, scope, keyHash: sha256Hex(rawKey), keyPrefix, createdAt })!
  return { id: row.id, name, key_prefix: keyPrefix, scope, api_key: rawKey, created_at: createdAt }
}

/** Creates organization `default` and its first admin key on an empty installation; returns the key, or null if not empty. */
export function bootstrapInstallation(ctx: AppContext): CreatedApiKey | null {
  return transaction(ctx, () => {
    const anyOrganization = ctx.db.select({ id: organizations.id }).from(organizations).limit(1).get()
    if (anyOrganization) return null
    const organizationId = ensureOrganization(ctx, 'default')
    return createApiKey(ctx, organizationId, 'bootstrap admin', 'admin', ctx.config.bootstrapApiKey ?? undefined)
  })
}

type KeyRow = { id: number; key_hash: string; organization_id: number; scope: ApiKeyScope; last_used_at: string | null }

/** Every authenticated request comes through here, so it is plain SQL through the connection's statement cache. */
export function authenticateKey(ctx: AppContext, rawKey: string): Principal | null {
  const hash = sha256Hex(rawKey)
  const row = ctx.sqlite.query<KeyRow, [string]>(
    'SELECT id, key_hash, organization_id, scope, last_used_at FROM api_keys WHERE key_hash = ? AND is_active = 1 AND archived_at IS NULL',
  ).get(hash)
  if (!row || !digestsEqual(row.key_hash, hash)) return null
  const now = ctx.clock.now()
  if (row.last_used_at === null || now - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
    ctx.sqlite.query('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(new Date(now).toISOString(), row.id)
  }
  return { organizationId: row.organization_id, apiKeyId: row.id, scope: row.scope }
}
