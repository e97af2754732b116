import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticateKey, type ApiKeyScope, type Principal } from '../auth/keys'
import { forbidden, unauthenticated } from '../lib/errors'

export const MISSING_OR_INVALID_KEY = 'Invalid or expired API key'

/** Requests that only read: their key is looked up through the key cache (see authenticateKey). */
const READING_METHODS = new Set(['GET', 'HEAD'])

const BEARER = /^Bearer\s+(\S+)$/i

/** The request's API key: `X-API-Key`, or where `bearer` allows it (MCP clients send keys so) `Authorization: Bearer <key>`. */
export function requestKey(request: Request, bearer = false): string | null {
  const key = request.headers.get('x-api-key')
  if (key || !bearer) return key
  return BEARER.exec(request.headers.get('authorization') ?? '')?.[1] ?? null
}

/** Resolves the request's API key to its principal, or throws the 401 the contract asks for. */
export function requirePrincipal(ctx: AppContext, request: Request, bearer = false): Principal {
  const rawKey = requestKey(request, bearer)
  if (!rawKey) throw unauthenticated(`Not authenticated: send an API key in the X-API-Key header${bearer ? ' or as Authorization: Bearer' : ''}`)
  const principal = authenticateKey(ctx, rawKey, READING_METHODS.has(request.method))
  if (!principal) throw unauthenticated(MISSING_OR_INVALID_KEY)
  return principal
}

export const scopeNotAllowed = (scope: ApiKeyScope) => forbidden(`This API key's scope '${scope}' does not allow this operation`)

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
  return new Elysia({ name: `auth:${allowed.join(',')}${bearer ? ':bearer' : ''}` }).derive({ as: 'scoped' }, authenticate)
}

/** The authentication a route runs, among its transform hooks; undefined for a public route. */
export function routeAuthentication(transforms: { fn: unknown }[] = []): Authentication | undefined {
  return transforms.find((hook) => authentications.has(hook.fn as Authentication))?.fn as Authentication | undefined
}
