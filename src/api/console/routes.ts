import { Elysia } from 'elysia'
import { notFound } from '../../lib/errors'
import type { ConsoleAssets, ConsoleFile, Encoding } from './assets'

/**
 * What the browser may do with the console's pages: its own scripts and styles only (no inline ones, nothing from
 * elsewhere), no framing, no plugins, no referrer sent along.
 */
export const CONSOLE_SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; " +
    "connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
}

/** Brotli, else gzip, else the bytes as they are, as the request's Accept-Encoding allows. */
export function chosenEncoding(acceptEncoding: string | null): Encoding {
  const accepted = (acceptEncoding ?? '')
    .split(',')
    .map((part) => part.trim().split(';'))
    .filter(([, quality]) => quality?.trim() !== 'q=0')
    .map(([name]) => name.trim().toLowerCase())
  if (accepted.includes('br')) return 'br'
  if (accepted.includes('gzip')) return 'gzip'
  return 'identity'
}

function fileResponse(file: ConsoleFile, request: Request, cacheControl: string): Response {
  const encoding = chosenEncoding(request.headers.get('accept-encoding'))
  return new Response(file.bodies[encoding], {
    headers: {
      ...CONSOLE_SECURITY_HEADERS,
      'content-type': file.type,
      'cache-control': cacheControl,
      vary: 'Accept-Encoding',
      ...(encoding === 'identity' ? {} : { 'content-encoding': encoding }),
    },
  })
}

const NOT_BUILT = 'The console is not part of this build: run `npm run build` (or `npm start`, which builds it)'

/**
 * The admin console: `/` is its page (a single-page app that routes in the URL's fragment, so no other path is its),
 * revalidated on every load; `/assets/*` are its hashed files, cached for good.
 */
export const consoleRoutes = (assets: ConsoleAssets | null) =>
  new Elysia()
    .get(
      '/',
      ({ request }) => {
        const page = assets?.get('/')
        if (!page) throw notFound(NOT_BUILT)
        return fileResponse(page, request, 'no-cache')
      },
      { detail: { hide: true } },
    )
    .get(
      '/assets/*',
      ({ request, path }) => {
        const file = assets?.get(path)
        if (!file || path === '/') throw notFound('Not Found')
        return fileResponse(file, request, 'public, max-age=31536000, immutable')
      },
      { detail: { hide: true } },
    )
