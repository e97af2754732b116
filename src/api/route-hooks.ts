import type { TSchema } from '@sinclair/typebox'
import type { AnyElysia } from 'elysia'

/** What a registered route declares: its schemas and its lifecycle hooks (functions, or a parser's name). */
export type RouteHooks = {
  params?: TSchema
  query?: TSchema
  headers?: TSchema
  body?: TSchema
  parse?: { fn: unknown }[]
  transform?: { fn: unknown }[]
}

/** Each app's routes by `METHOD path`, indexed once: hooks that run on every request look their route up here. */
const hooksByApp = new WeakMap<AnyElysia, Map<string, RouteHooks>>()

export function routeHooks(app: AnyElysia, method: string, path: string): RouteHooks | undefined {
  let byRoute = hooksByApp.get(app)
  if (!byRoute) {
    byRoute = new Map(app.routes.map((route) => [`${route.method} ${route.path}`, route.hooks as RouteHooks]))
    hooksByApp.set(app, byRoute)
  }
  return byRoute.get(`${method} ${path}`)
}
