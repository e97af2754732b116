import type { AnyElysia } from 'elysia'
import { MEDIA_STREAM_ROUTE } from './telephony-webhooks/media-socket'

/** Path parameters that are credentials (a public download token, a media stream token): never in the log. */
const SECRET_PATH_PARAMETERS = new Set(['token'])

export const REDACTED = '<redacted>'

/** A route with a secret parameter: its segments (empty ones left out) and which of them are secret. */
type SecretRoute = { segments: string[]; secret: Set<number>; lastSecret: number }

/** Each app's route table of secret routes: its own routes with a secret parameter, and the media stream WebSocket. */
const secretRoutesByApp = new WeakMap<AnyElysia, SecretRoute[]>()

const segmentsOf = (path: string) => path.split('/').filter((segment) => segment !== '')

function secretRoutes(app: AnyElysia): SecretRoute[] {
  let found = secretRoutesByApp.get(app)
  if (!found) {
    found = [...new Set([...app.routes.map((route) => route.path), MEDIA_STREAM_ROUTE])].flatMap((pattern) => {
      const segments = segmentsOf(pattern)
      const secret = new Set(
        segments.flatMap((segment, index) =>
          segment.startsWith(':') && SECRET_PATH_PARAMETERS.has(segment.slice(1)) ? [index] : [],
        ),
      )
      return secret.size === 0 ? [] : [{ segments: segments.map(comparable), secret, lastSecret: Math.max(...secret) }]
    })
    secretRoutesByApp.set(app, found)
  }
  return found
}

/** A segment as routing may read it: decoded, any case. */
function comparable(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase()
  } catch {
    return segment.toLowerCase()
  }
}

/**
 * The path as the log writes it: every segment that stands where a secret route has its secret parameter is
 * `<redacted>`. A route counts when the path's segments begin like it up to its last secret one, so neither a trailing
 * slash, nor a doubled one, nor more segments after it, nor a request no route answered (a 404, a plain GET on a
 * WebSocket path) gets a token into the log.
 */
export function loggedPath(app: AnyElysia, path: string): string {
  const parts = path.split('/')
  const positions = parts.flatMap((part, index) => (part === '' ? [] : [index]))
  const redacted = new Set<number>()
  for (const route of secretRoutes(app)) {
    if (positions.length <= route.lastSecret) continue
    const begins = route.segments
      .slice(0, route.lastSecret + 1)
      .every((segment, index) => segment.startsWith(':') || segment === comparable(parts[positions[index]]))
    if (begins) for (const index of route.secret) redacted.add(positions[index])
  }
  return redacted.size === 0 ? path : parts.map((part, index) => (redacted.has(index) ? REDACTED : part)).join('/')
}
