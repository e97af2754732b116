import type { AnyElysia } from 'elysia'
import { routeAuthentication } from './auth'
import { routeHooks } from './route-hooks'
import { tooLarge } from '../lib/errors'
import { MAX_JSON_BODY_BYTES } from '../lib/limits'

type ParseContext = { request: Request; route: string; headers: Record<string, string | undefined> }

const bodyTooLarge = () => tooLarge(`The request body is larger than the ${MAX_JSON_BODY_BYTES} bytes a request may carry`)

/** The body as text, refused (413) as soon as it is longer than `maxBytes`: a declared length before reading anything. */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  if (Number(request.headers.get('content-length') ?? 0) > maxBytes) throw bodyTooLarge()
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let length = 0
  for await (const chunk of request.body) {
    length += chunk.byteLength
    if (length > maxBytes) throw bodyTooLarge()
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const isJson = (contentType: string) => contentType === 'application/json' || contentType.endsWith('+json')

/**
 * Every route's body parser (the one global parse hook). The key is checked first, from the headers, for routes behind
 * the auth plugin, so nobody without one makes the server read a body; then at most MAX_JSON_BODY_BYTES are read. A
 * route that declares `parse: 'none'` (the signed upload) streams its own body under its own limit. A body without a
 * Content-Type is not read, as Elysia does; one that is not JSON stays text, which no JSON schema accepts.
 */
export async function parseBody(app: AnyElysia, context: ParseContext, contentType: string | undefined): Promise<unknown> {
  const hooks = routeHooks(app, context.request.method, context.route)
  routeAuthentication(hooks?.transform)?.(context)
  if (hooks?.parse?.some((hook) => hook.fn === 'none')) return null
  if (!contentType) return undefined
  const text = await readBodyText(context.request, MAX_JSON_BODY_BYTES)
  return isJson(contentType) ? JSON.parse(text) : text
}
