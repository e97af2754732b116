import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'

export const HealthResponse = t.Object({
  status: t.String(),
  version: t.String(),
  backend_api_endpoint: t.String(),
  deployment_mode: t.String(),
  auth_provider: t.String(),
})

export const healthRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1' }).get(
    '/health',
    () => ({
      status: 'ok',
      version: ctx.version,
      backend_api_endpoint: ctx.config.publicUrl,
      deployment_mode: 'oss',
      auth_provider: 'api_key',
    }),
    { response: { 200: HealthResponse }, detail: { tags: ['Health'], summary: 'Reachability and version' } },
  )
