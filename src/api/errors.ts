import type { TSchema } from '@sinclair/typebox'
import type { AnyElysia } from 'elysia'
import { loggedPath } from './request-log'
import { routeHooks } from './route-hooks'
import { sessionToken } from './auth'
import type { Logger } from '../log'
import { checkValue, type Loc, type ValidationItem } from '../lib/validation'
import { DomainError, type DomainErrorKind } from '../lib/errors'

/** The one place a domain error becomes an HTTP status. */
const STATUS_OF: Record<DomainErrorKind, number> = {
  refused: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_type: 415,
  invalid: 422,
  limit_reached: 429,
  upstream_failed: 502,
  unavailable: 503,
}

export const httpStatus = (error: DomainError): number => STATUS_OF[error.kind]

/** Header names as clients write them; Elysia needs them lowercased in schemas. */
const HEADER_DISPLAY_NAMES: Record<string, string> = { 'x-api-key': 'X-API-Key', authorization: 'authorization' }

function queryObject(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url).searchParams)
}

/**
 * A route that declares `x-api-key` as a header (the public trigger) lets a signed-in browser leave it out; a request
 * with neither the key nor the session cookie is missing the key.
 */
function missingKeyItems(schema: TSchema, request: Request): ValidationItem[] {
  if (!schema.properties?.['x-api-key'] || request.headers.has('x-api-key') || sessionToken(request)) return []
  return [{ type: 'missing', loc: ['header', 'X-API-Key'], msg: 'Field required', input: null }]
}

function headerItems(schema: TSchema, request: Request): ValidationItem[] {
  const values = Object.fromEntries(request.headers)
  const items = checkValue(schema, values, ['header'], 'text').map((item) => ({
    ...item,
    loc: item.loc.map((part, index) => (index === 1 ? (HEADER_DISPLAY_NAMES[String(part)] ?? part) : part)),
    // Pydantic reports a missing header with input null, not the whole header map.
    input: item.type === 'missing' ? null : item.input,
  }))
  return [...missingKeyItems(schema, request), ...items]
}

/** Whether the request carried a body at all (Elysia may hand an empty object to the validator when it did not). */
const sentBody = (request: Request) => request.body !== null

function bodyItems(schema: TSchema, body: unknown): ValidationItem[] {
  if (body === undefined || body === null || body === '')
    return [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]
  return checkValue(schema, body, ['body'])
}

/**
 * Problems in the body as the client sent it. Elysia's default normalizer (exact-mirror) rebuilds the body in the
 * schema's shape before validating it, so a string sent for a `t.Record`/`t.Object` field passes as `{"0": "g", …}`
 * and a number as `{}`; only the parsed body from before that step shows the real type.
 */
export function sentBodyItems(app: AnyElysia, request: Request, route: string, sent: unknown): ValidationItem[] {
  const schema = routeHooks(app, request.method, route)?.body
  if (!schema || sent === undefined || !sentBody(request)) return []
  return checkValue(schema, sent, ['body'])
}

/** FastAPI validates every part of a request at once and reports all problems; Elysia stops at the first part. */
export function requestValidationItems(
  app: AnyElysia,
  request: Request,
  route: string,
  params: Record<string, unknown>,
  body: unknown,
): ValidationItem[] {
  const schemas = routeHooks(app, request.method, route)
  if (!schemas) return []
  const items: ValidationItem[] = []
  if (schemas.params) items.push(...checkValue(schemas.params, params, ['path'], 'text'))
  if (schemas.query) items.push(...checkValue(schemas.query, queryObject(request.url), ['query'], 'text'))
  if (schemas.headers) items.push(...headerItems(schemas.headers, request))
  if (schemas.body) items.push(...bodyItems(schemas.body, sentBody(request) ? body : undefined))
  const seen = new Set<string>()
  return items.filter((item) => {
    const key = JSON.stringify(item.loc)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/**
 * When Elysia refused a value our checker accepts (the two should agree; see lib/validation.ts), the item still names
 * the field, from the path of Elysia's own first error (`/include_archived` → `['query', 'include_archived']`).
 */
function fallbackItem(error: { type?: string; valueError?: { path?: string } }): ValidationItem {
  const section =
    ({ params: 'path', headers: 'header' } as Record<string, string>)[error.type ?? ''] ?? error.type ?? 'body'
  const field = (error.valueError?.path ?? '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part))
  return {
    type: 'value_error',
    loc: [section, ...field] as Loc,
    msg: 'Value error, invalid input',
    input: null,
    ctx: { error: {} },
  }
}

type ErrorContext = {
  code: string | number
  error: unknown
  request: Request
  route: string
  params: Record<string, unknown>
  body?: unknown
  set: { status?: number | string; headers: Record<string, string | number> }
  requestId?: string
}

/**
 * A path the API serves with other methods (the MCP endpoint's GET, say) is a 405 naming them in `Allow`; anything
 * else is a 404. Only fixed paths are compared: a path with parameters is a 404 for any method it does not serve.
 */
function notFoundOrNotAllowed(app: AnyElysia, request: Request): Response {
  const path = new URL(request.url).pathname
  const allowed = [...new Set(app.routes.filter((route) => route.path === path).map((route) => route.method))]
  const [status, detail] =
    allowed.length > 0 ? [405, `${request.method} is not served here; use ${allowed.join(', ')}`] : [404, 'Not Found']
  return new Response(JSON.stringify({ detail }), {
    status,
    headers: { 'content-type': 'application/json', ...(allowed.length > 0 ? { allow: allowed.join(', ') } : {}) },
  })
}

/** Turns every error into the contract's JSON body; causes of 500s go to the log only. */
export function errorResponse(app: AnyElysia, log: Logger, context: ErrorContext): Response {
  const json = (status: number, detail: unknown) =>
    new Response(JSON.stringify({ detail }), { status, headers: { 'content-type': 'application/json' } })
  const { code } = context
  // What a parse hook throws (a 401 before the body is read, a 413) reaches here wrapped in Elysia's ParseError.
  const cause = code === 'PARSE' ? (context.error as Error).cause : undefined
  const error = cause instanceof DomainError ? cause : context.error
  if (error instanceof DomainError) {
    const status = httpStatus(error)
    if (status >= 500) log.error({ err: error.cause ?? error, requestId: context.requestId }, error.message)
    return json(status, error.detail)
  }
  if (code === 'VALIDATION') {
    const items = requestValidationItems(app, context.request, context.route, context.params, context.body)
    return json(422, items.length > 0 ? items : [fallbackItem(error as { type?: string })])
  }
  if (code === 'PARSE') {
    return json(422, [
      {
        type: 'json_invalid',
        loc: ['body', 0],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: 'Invalid JSON body' },
      },
    ])
  }
  if (code === 'NOT_FOUND') return notFoundOrNotAllowed(app, context.request)
  log.error(
    { err: error, requestId: context.requestId, path: loggedPath(app, new URL(context.request.url).pathname) },
    'unhandled error',
  )
  return json(500, 'Internal Server Error')
}
