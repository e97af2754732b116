import type { AnyElysia } from 'elysia'
import { routeAuthentication } from './auth'
import { routeHooks } from './route-hooks'
import { invalid, tooLarge } from '../lib/errors'
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH } from '../lib/limits'
import type { Loc } from '../lib/validation'

/**
 * Each request's parsed body as the client sent it, before Elysia's normalizer rebuilds it (see api/app.ts). A body
 * with problems reaches route transforms as `{}`: a route's own check of the body reads it here (`sentBodyOf`).
 */
const sentBodies = new WeakMap<Request, unknown>()
export const keepSentBody = (request: Request, body: unknown) => sentBodies.set(request, body)
export const sentBodyOf = (request: Request): unknown => sentBodies.get(request)

const bodyTooLarge = () =>
  tooLarge(`The request body is larger than the ${MAX_JSON_BODY_BYTES} bytes a request may carry`)

/** The body as text, refused (413) as soon as it is longer than `maxBytes`: a declared length before reading anything. */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  const declaredLength = request.headers.get('content-length')
  if (Number(declaredLength ?? 0) > maxBytes) throw bodyTooLarge()
  if (!request.body) return ''
  // A body of a declared length is framed by it (HTTP/1.1): read at once, without a stream reader (~5 µs a request).
  // One without (chunked) is read chunk by chunk and cut off at the limit.
  if (declaredLength !== null && !request.headers.has('transfer-encoding')) {
    const bytes = await request.bytes()
    if (bytes.byteLength > maxBytes) throw bodyTooLarge()
    return new TextDecoder().decode(bytes)
  }
  const chunks: Uint8Array[] = []
  let length = 0
  for await (const chunk of request.body) {
    length += chunk.byteLength
    if (length > maxBytes) throw bodyTooLarge()
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const NO_LOC: Loc = []

/**
 * Where `value` first nests deeper than `maxDepth` levels (as a loc under `at`), or null. The loc is built only on the
 * way back from a find: the walk itself allocates nothing (it runs over every JSON body).
 */
function tooDeepAt(value: unknown, maxDepth: number, at: Loc): Loc | null {
  if (typeof value !== 'object' || value === null) return null
  if (maxDepth === 0) return at
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = tooDeepAt(value[index], maxDepth - 1, NO_LOC)
      if (found) return [...at, index, ...found]
    }
    return null
  }
  for (const key in value) {
    const found = tooDeepAt((value as Record<string, unknown>)[key], maxDepth - 1, NO_LOC)
    if (found) return [...at, key, ...found]
  }
  return null
}

const isJson = (contentType: string) => contentType === 'application/json' || contentType.endsWith('+json')

/**
 * Every route's body parser (the one global parse hook). The key is checked first, from the headers, for routes behind
 * the auth plugin, so nobody without one makes the server read a body; then at most MAX_JSON_BODY_BYTES are read. A
 * route that declares `parse: 'none'` (the signed upload) streams its own body under its own limit. A body without a
 * Content-Type is not read, as Elysia does; one that is not JSON stays text, which no JSON schema accepts. JSON nested
 * deeper than MAX_JSON_DEPTH, in any field, is a 422 here: the one check for every free-form object.
 */
export async function parseBody(
  app: AnyElysia,
  request: Request,
  route: string,
  contentType: string | undefined,
): Promise<unknown> {
  const hooks = routeHooks(app, request.method, route)
  routeAuthentication(hooks?.transform)?.({ request })
  if (hooks?.parse?.some((hook) => hook.fn === 'none')) return null
  if (!contentType) return undefined
  const text = await readBodyText(request, MAX_JSON_BODY_BYTES)
  if (!isJson(contentType)) return text
  const value: unknown = JSON.parse(text)
  const tooDeep = tooDeepAt(value, MAX_JSON_DEPTH, ['body'])
  if (tooDeep) {
    throw invalid([
      {
        type: 'value_error',
        loc: tooDeep,
        msg: `Value error, JSON may nest at most ${MAX_JSON_DEPTH} levels deep`,
        ctx: { max_depth: MAX_JSON_DEPTH },
      },
    ])
  }
  return value
}
