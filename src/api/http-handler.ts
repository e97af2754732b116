import type { AnyElysia } from 'elysia'

/**
 * The request target (path and query) of a request from the network. Bun's `request.url` is absolute when the request
 * named a host, and the target alone (`/path?query`, even `//x/path`) when it did not: HTTP/1.0 without a Host, or an
 * empty `Host:`. Routing and every check on the path go by this, never by what the Host says.
 */
export function requestTarget(url: string): string {
  if (url.startsWith('/')) return url
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  return pathStart < 0 ? '/' : url.slice(pathStart)
}

/**
 * Elysia's router reads the path at a fixed offset into the URL (`indexOf('/', 11)`: past `http://` and four characters
 * of host). A request whose URL is not shaped so (a Host of three characters or less such as `api` or a docker-compose
 * service name, an empty or missing Host) would be routed on the wrong part of it: every route a 404, and `/zzz/api/v1/…`
 * served as `/api/v1/…`. Such a request is handed on with the same target under a host long enough; nothing reads the
 * host (links use --public-url).
 */
export function routableRequest(request: Request): Request {
  const url = request.url
  if (!url.startsWith('/') && url.indexOf('/', 11) === url.indexOf('/', url.indexOf('//') + 2)) return request
  return new Request(`http://localhost${requestTarget(url)}`, request)
}

/** The `fetch` handler of the HTTP server: every request the app sees over the network goes through here. */
export const httpHandler = (app: AnyElysia) => (request: Request) => app.handle(routableRequest(request))
