import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticateKey, type ApiKeyScope, type Principal } from '../auth/keys'
import { forbidden, unauthenticated } from '../lib/errors'

export const MISSING_OR_INVALID_KEY = 'Invalid or expired API key'

/** Resolves `X-API-Key` to its principal, or throws the 401 the contract asks for. */
export function requirePrincipal(ctx: AppContext, headers: Record<string, string | undefined>): Principal {
  const rawKey = headers['x-api-key']
  if (!rawKey) throw unauthenticated('Not authenticated: send an API key in the X-API-Key header')
  const principal = authenticateKey(ctx, rawKey)
  if (!principal) throw unauthenticated(MISSING_OR_INVALID_KEY)
  return principal
}

/**
 * Authenticates before validation (derive runs in the transform phase), so a bad key with a bad body is a 401.
 * `allowed` lists the key scopes the routes behind this plugin accept; others get 403.
 */
export function auth(ctx: AppContext, allowed: ApiKeyScope[] = ['admin']) {
  return new Elysia({ name: `auth:${allowed.join(',')}` }).derive({ as: 'scoped' }, ({ headers }) => {
    const principal = requirePrincipal(ctx, headers)
    if (!allowed.includes(principal.scope)) throw forbidden(`This API key's scope '${principal.scope}' does not allow this operation`)
    return { principal }
  })
}
