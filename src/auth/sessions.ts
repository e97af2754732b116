/**
 * Browser sessions (the console): a session is made from an API key and acts exactly as that key (organization,
 * scope) until it expires, is ended, or its key is archived. Only the hash of the cookie's token is stored. The CSRF
 * token bound to a session is derived from its token (HMAC under the master key), so every tab of the browser can ask
 * for it again and none invalidates another's.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { and, eq, lte } from 'drizzle-orm'
import type { AppContext } from '../context'
import { sessions } from '../db/schema'
import { digestsEqual, sha256Hex } from '../lib/keys'
import { authenticateKey, type Principal } from './keys'
import { keyIsActive, lookUpLiveSession, sessionIsLive } from './queries'

/** How long a sign-in lasts; signing in again makes a new session. */
export const SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000

export type Session = { id: number; principal: Principal; expiresAt: string }

export type NewSession = Session & { token: string }

/** A session for the key, or null when the key is unknown or archived. Expired sessions are cleared on the way. */
export function createSession(ctx: AppContext, rawKey: string): NewSession | null {
  const principal = authenticateKey(ctx, rawKey)
  if (!principal) return null
  const now = ctx.clock.now()
  ctx.db
    .delete(sessions)
    .where(lte(sessions.expiresAt, new Date(now).toISOString()))
    .run()
  const token = randomBytes(32).toString('base64url')
  const expiresAt = new Date(now + SESSION_LIFETIME_MS).toISOString()
  const { id } = ctx.db
    .insert(sessions)
    .values({
      organizationId: principal.organizationId,
      apiKeyId: principal.apiKeyId,
      tokenHash: sha256Hex(token),
      createdAt: new Date(now).toISOString(),
      expiresAt,
    })
    .returning({ id: sessions.id })
    .get()
  return { id, token, principal, expiresAt }
}

/** The live session of a cookie token: not expired, and its key still active. */
export function findSession(ctx: AppContext, token: string): Session | null {
  const hash = sha256Hex(token)
  const row = lookUpLiveSession(ctx, hash, new Date(ctx.clock.now()).toISOString())
  if (!row || !digestsEqual(row.token_hash, hash)) return null
  return {
    id: row.id,
    principal: { organizationId: row.organization_id, apiKeyId: row.api_key_id, scope: row.scope },
    expiresAt: row.expires_at,
  }
}

/** The CSRF token bound to a session's cookie token. */
export const csrfTokenOf = (ctx: AppContext, token: string) =>
  createHmac('sha256', ctx.masterKey).update(`ringbase-csrf:${token}`).digest('base64url')

/** Whether a request's CSRF token is the one bound to its cookie token. */
export function csrfTokenMatches(ctx: AppContext, token: string, csrfToken: string | null): boolean {
  if (csrfToken === null) return false
  return digestsEqual(sha256Hex(csrfTokenOf(ctx, token)), sha256Hex(csrfToken))
}

export function endSession(ctx: AppContext, organizationId: number, sessionId: number): void {
  ctx.db
    .delete(sessions)
    .where(and(eq(sessions.id, sessionId), eq(sessions.organizationId, organizationId)))
    .run()
}

/**
 * Whether what a long-lived connection was opened with still holds: its browser session (not ended, not expired), or
 * for a connection opened with a key, the key itself (active, not archived).
 */
export function stillSignedIn(ctx: AppContext, principal: Principal, sessionId: number | null): boolean {
  if (sessionId === null) return keyIsActive(ctx, principal.apiKeyId)
  return sessionIsLive(ctx, sessionId, principal.apiKeyId, new Date(ctx.clock.now()).toISOString())
}
