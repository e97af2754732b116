import { sql } from 'drizzle-orm'
import type { AppContext } from '../context'
import { apiKeys } from '../db/schema'
import { preparedQuery } from '../db/prepared'

/** The statements of keys and sessions written as SQL: the per-request lookups, through the statement cache. */

type Scope = (typeof apiKeys.$inferSelect)['scope']

export type ActiveKeyRow = {
  id: number
  key_hash: string
  organization_id: number
  scope: Scope
  last_used_at: string | null
}

/** The active (not archived) key of a hash, or null. */
export function lookUpActiveKey(ctx: AppContext, keyHash: string): ActiveKeyRow | null {
  return ctx.sqlite
    .query<ActiveKeyRow, [string]>(
      'SELECT id, key_hash, organization_id, scope, last_used_at FROM api_keys WHERE key_hash = ? AND is_active = 1 AND archived_at IS NULL',
    )
    .get(keyHash)
}

export function recordKeyUse(ctx: AppContext, keyId: number, at: string): void {
  ctx.sqlite.query('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(at, keyId)
}

const insertKeyQuery = preparedQuery((db) =>
  db
    .insert(apiKeys)
    .values({
      organizationId: sql.placeholder('organizationId'),
      name: sql.placeholder('name'),
      scope: sql.placeholder('scope'),
      keyHash: sql.placeholder('keyHash'),
      keyPrefix: sql.placeholder('keyPrefix'),
      createdAt: sql.placeholder('createdAt'),
    })
    .returning({ id: apiKeys.id })
    .prepare(),
)

/** A new active key; returns its id. */
export function insertApiKey(
  ctx: AppContext,
  key: { organizationId: number; name: string; scope: Scope; keyHash: string; keyPrefix: string; createdAt: string },
): number {
  return insertKeyQuery(ctx.db).get(key)!.id
}

export type LiveSessionRow = {
  id: number
  organization_id: number
  api_key_id: number
  scope: Scope
  token_hash: string
  expires_at: string
}

/** The session of a token hash that has not expired by `now` and whose key is still active, or null. */
export function lookUpLiveSession(ctx: AppContext, tokenHash: string, now: string): LiveSessionRow | null {
  return ctx.sqlite
    .query<LiveSessionRow, [string, string]>(
      `SELECT s.id, s.organization_id, s.api_key_id, k.scope, s.token_hash, s.expires_at
       FROM sessions s JOIN api_keys k ON k.id = s.api_key_id
      WHERE s.token_hash = ? AND s.expires_at > ? AND k.is_active = 1 AND k.archived_at IS NULL`,
    )
    .get(tokenHash, now)
}

/** Whether the key is active and not archived. */
export function keyIsActive(ctx: AppContext, keyId: number): boolean {
  return (
    ctx.sqlite
      .query<{ id: number }, [number]>('SELECT id FROM api_keys WHERE id = ? AND is_active = 1 AND archived_at IS NULL')
      .get(keyId) !== null
  )
}

/** Whether the session of that key has not ended or expired by `now`, its key still active. */
export function sessionIsLive(ctx: AppContext, sessionId: number, keyId: number, now: string): boolean {
  return (
    ctx.sqlite
      .query<{ id: number }, [number, number, string]>(
        `SELECT s.id FROM sessions s JOIN api_keys k ON k.id = s.api_key_id
          WHERE s.id = ? AND s.api_key_id = ? AND s.expires_at > ? AND k.is_active = 1 AND k.archived_at IS NULL`,
      )
      .get(sessionId, keyId, now) !== null
  )
}
