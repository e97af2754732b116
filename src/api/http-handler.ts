import type { AnyElysia } from 'elysia'

/**
 * Elysia's router reads the path at a fixed offset into the URL (`indexOf('/', 11)`: past `http://` and four characters
 * of host). Behind a Host of three characters or less (`api`, a docker-compose service name) it would route on the
 * wrong part of the URL: every route a 404, and `/zzz/api/v1/…` served as `/api/v1/…`. Such a request is handed on with
 * the same path and query under a host long enough; nothing reads the host (links use --public-url).
 */
export function routableRequest(request: Request): Request {
  const url = request.url
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  if (url.indexOf('/', 11) === pathStart) return request
  return new Request(`http://localhost${url.slice(pathStart)}`, request)
}

/** The `fetch` handler of the HTTP server: every request the app sees over the network goes through here. */
export const httpHandler = (app: AnyElysia) => (request: Request) => app.handle(routableRequest(request))
