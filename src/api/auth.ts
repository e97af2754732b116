import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticateKey, type ApiKeyScope, type Principal } from '../auth/keys'
import { csrfTokenMatches, findSession, type Session } from '../auth/sessions'
import { forbidden, unauthenticated } from '../lib/errors'

export const MISSING_OR_INVALID_KEY = 'Invalid or expired API key'

/** Requests that only read: their key is looked up through the key cache (see authenticateKey). */
const READING_METHODS = new Set(['GET', 'HEAD'])

/** The cookie of a browser session (see src/auth/sessions.ts): HttpOnly, SameSite=Strict, Path=/. */
export const SESSION_COOKIE = 'ringbase_session'

/** The session token the request's Cookie header carries, if any. */
export function sessionToken(request: Request): string | null {
  const header = request.headers.get('cookie')
  if (!header) return null
  for (const part of header.split(';')) {
    const separator = part.indexOf('=')
    if (separator > 0 && part.slice(0, separator).trim() === SESSION_COOKIE)
      return (
        part
          .slice(separator + 1)
          .trim()
          .slice(0, 128) || null
      )
  }
  return null
}

/**
 * The browser session of a request that carries no API key, or the 401. A request that may change something must also
 * carry the session's CSRF token in `X-CSRF-Token`: another site can make the browser send the cookie, not the header.
 */
export function requireSession(ctx: AppContext, request: Request): Session & { token: string } {
  const token = sessionToken(request)
  if (!token) throw unauthenticated('Not authenticated: send an API key in the X-API-Key header')
  const session = findSession(ctx, token)
  if (!session) throw unauthenticated('Session expired or ended: sign in again')
  if (!READING_METHODS.has(request.method) && !csrfTokenMatches(ctx, token, request.headers.get('x-csrf-token'))) {
    throw forbidden(
      'Missing or wrong X-CSRF-Token header: a signed-in browser must send the token GET /api/v1/auth/session gives',
    )
  }
  return { ...session, token }
}

const BEARER = /^Bearer\s+(\S+)$/i

/** The request's API key: `X-API-Key`, or where `bearer` allows it (MCP clients send keys so) `Authorization: Bearer <key>`. */
export function requestKey(request: Request, bearer = false): string | null {
  const key = request.headers.get('x-api-key')
  if (key || !bearer) return key
  return BEARER.exec(request.headers.get('authorization') ?? '')?.[1] ?? null
}

/**
 * Resolves the request's API key (`requestKey`) or, without one, the browser session's cookie to its principal, or
 * throws the 401 the contract asks for.
 */
export function requirePrincipal(ctx: AppContext, request: Request, bearer = false): Principal {
  const rawKey = requestKey(request, bearer)
  if (!rawKey) return requireSession(ctx, request).principal
  const principal = authenticateKey(ctx, rawKey, READING_METHODS.has(request.method))
  if (!principal) throw unauthenticated(MISSING_OR_INVALID_KEY)
  return principal
}

export const scopeNotAllowed = (scope: ApiKeyScope) =>
  forbidden(`This API key's scope '${scope}' does not allow this operation`)

type Authentication = (context: { request: Request }) => { principal: Principal }

/** The auth plugin's derive functions, so the body reader can find a route's and run it before reading (request-body.ts). */
const authentications = new WeakSet<Authentication>()

/** Principals already resolved for a request (by the body reader), so the key is looked up once. */
const principals = new WeakMap<Request, Principal>()

/**
 * Authenticates from the headers alone: it runs before the body is read (see `routeAuthentication`) and again, from the
 * cache, as the route's derive (the transform phase, before validation), so a bad key with a bad body is a 401.
 * `allowed` lists the key scopes the routes behind this plugin accept; others get 403.
 */
export function auth(ctx: AppContext, allowed: ApiKeyScope[] = ['admin'], { bearer = false } = {}) {
  // Only `request` is read (not Elysia's `headers` object): what a hook reads, Elysia builds for every request.
  const authenticate: Authentication = ({ request }) => {
    const principal = principals.get(request) ?? requirePrincipal(ctx, request, bearer)
    principals.set(request, principal)
    if (!allowed.includes(principal.scope)) throw scopeNotAllowed(principal.scope)
    return { principal }
  }
  authentications.add(authenticate)
  return new Elysia({ name: `auth:${allowed.join(',')}${bearer ? ':bearer' : ''}` }).derive(
    { as: 'scoped' },
    authenticate,
  )
}

/** The authentication a route runs, among its transform hooks; undefined for a public route. */
export function routeAuthentication(transforms: { fn: unknown }[] = []): Authentication | undefined {
  return transforms.find((hook) => authentications.has(hook.fn as Authentication))?.fn as Authentication | undefined
}
