import type { AnyElysia } from 'elysia'

/** Path parameters that are credentials (a public download token): their values never reach the log. */
const SECRET_PATH_PARAMETERS = new Set(['token'])

export const REDACTED = '<redacted>'

type SecretRoute = { pattern: RegExp; secretSegments: number[] }

/** Each app's routes that have a secret path parameter, found once. */
const secretRoutesByApp = new WeakMap<AnyElysia, SecretRoute[]>()

function secretRoutes(app: AnyElysia): SecretRoute[] {
  let found = secretRoutesByApp.get(app)
  if (!found) {
    found = app.routes.flatMap((route) => {
      const segments = route.path.split('/')
      const secretSegments = segments.flatMap((segment, index) => (segment.startsWith(':') && SECRET_PATH_PARAMETERS.has(segment.slice(1)) ? [index] : []))
      if (secretSegments.length === 0) return []
      const pattern = new RegExp(`^${segments.map((segment) => (segment.startsWith(':') ? '[^/]+' : RegExp.escape(segment))).join('/')}$`)
      return [{ pattern, secretSegments }]
    })
    secretRoutesByApp.set(app, found)
  }
  return found
}

/** The path as the log writes it: a segment that fills a secret parameter of one of the app's routes is `<redacted>`. */
export function loggedPath(app: AnyElysia, path: string): string {
  const route = secretRoutes(app).find(({ pattern }) => pattern.test(path))
  if (!route) return path
  return path.split('/').map((segment, index) => (route.secretSegments.includes(index) ? REDACTED : segment)).join('/')
}
