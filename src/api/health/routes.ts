import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { ariConnectionCounts } from '../../telephony/ari/manager'

export const HealthResponse = t.Object({
  status: t.String(),
  version: t.String(),
  backend_api_endpoint: t.String(),
  deployment_mode: t.String(),
  auth_provider: t.String(),
  ari: t.Object({
    connected: t.Integer({ description: 'Active ARI configurations whose events websocket is up.' }),
    total: t.Integer({ description: 'Active ARI configurations (parked ones are not counted).' }),
  }),
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
      ari: ariConnectionCounts(ctx),
    }),
    { response: { 200: HealthResponse }, detail: { tags: ['Health'], summary: 'Reachability and version (no API key)', security: [] } },
  )
