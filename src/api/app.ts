import { Elysia, type AnyElysia } from 'elysia'
import type { AppContext } from '../context'
import docsPage from './docs.html' with { type: 'text' }
import { errorResponse, sentBodyItems } from './errors'
import { invalid } from '../lib/errors'
import type { ValidationItem } from '../lib/validation'
import { openApiDocument } from './openapi-document'
import { keepSentBody, parseBody, sentBodyOf } from './request-body'
import { loggedPath } from './request-log'
import { logFlatInfo } from '../log'
import { agentRoutes } from './agents/routes'
import { apiKeyRoutes } from './api-keys/routes'
import { campaignRoutes } from './campaigns/routes'
import { credentialRoutes } from './credentials/routes'
import { healthRoutes } from './health/routes'
import { nodeTypeRoutes } from './node-types/routes'
import { runRoutes } from './runs/routes'
import { publicAgentRoutes } from './public-agent/routes'
import { telephonyRoutes } from './telephony/routes'
import { telephonyWebhookRoutes } from './telephony-webhooks/routes'
import { usageRoutes } from './usage/routes'
import { uploadRoutes } from './uploads/routes'
import { modelRoutes } from './models/routes'
import { textChatRoutes } from './text-chat/routes'
import { webCallRoutes } from './web-calls/routes'
import { webhookRoutes } from './webhooks/routes'
import { toolRoutes } from './tools/routes'
import { knowledgeBaseRoutes } from './knowledge-base/routes'
import { mcpRoutes } from './mcp/routes'
import { workflowRecordingRoutes } from './workflow-recordings/routes'
import { usePlainFormatChecks } from './formats'
import { sessionRoutes } from './sessions/routes'
import { eventRoutes } from './events/routes'
import { consoleRoutes } from './console/routes'
import type { ConsoleAssets } from './console/assets'

export const OPENAPI_PATH = '/api/v1/openapi.json'

/**
 * The whole HTTP API for one context. It does not listen: main.ts serves it, tests call `app.handle`. `precompile`
 * builds every route's handler up front (about half a second) instead of on its first request (up to ~100 ms each).
 * `console`: the admin console's built files (see api/console/assets.ts), served at `/`; `consoleDev`: dev mode's
 * reload routes (api/console/dev.ts).
 */
export function createApp(
  ctx: AppContext,
  options: { precompile?: boolean; console?: ConsoleAssets | null; consoleDev?: AnyElysia } = {},
) {
  usePlainFormatChecks()
  const startedAt = new WeakMap<Request, { id: string; at: number }>()
  const sentBodyProblems = new WeakMap<Request, ValidationItem[]>()
  const app = new Elysia({ precompile: options.precompile ?? false })
    .onRequest(({ request, set }) => {
      const id = request.headers.get('x-request-id')?.slice(0, 64) || crypto.randomUUID()
      startedAt.set(request, { id, at: performance.now() })
      set.headers['x-request-id'] = id
    })
    // Every hook names the context fields it reads: Elysia prepares only those for each request (a hook handed the
    // whole context makes every request build a headers object, parse cookies and parse the query string).
    .onParse({ as: 'global' }, ({ request, route }, contentType) => parseBody(app, request, route, contentType))
    // The body as sent is checked before Elysia's normalizer sees it: that normalizer rebuilds a string sent for an
    // object field character by character (a 1 MB string held the event loop for a second), and accepts the result.
    // A body with problems goes on as `{}`; its 422, from the body as sent, is thrown before the handler rather than
    // here so that authentication (a transform) answers first.
    .onTransform({ as: 'global' }, (context) => {
      const { request, route, body } = context
      keepSentBody(request, body)
      const items = sentBodyItems(app, request, route, body)
      if (items.length === 0) return
      sentBodyProblems.set(request, items)
      context.body = {}
    })
    .onBeforeHandle({ as: 'global' }, ({ request }) => {
      const items = sentBodyProblems.get(request)
      if (items) throw invalid(items)
    })
    .onError({ as: 'global' }, ({ code, error, request, route, params, set }) => {
      const response = errorResponse(app, ctx.log, {
        code,
        error,
        request,
        route,
        params,
        set,
        body: sentBodyOf(request),
        requestId: startedAt.get(request)?.id,
      })
      set.status = response.status
      return response
    })
    .onAfterResponse({ as: 'global' }, (context) => {
      const started = startedAt.get(context.request)
      const principal = (context as { principal?: { organizationId: number } }).principal
      logFlatInfo(
        ctx.log,
        {
          requestId: started?.id,
          method: context.request.method,
          path: loggedPath(app, context.path),
          status: Number(context.set.status ?? 200),
          durationMs: started ? Math.round((performance.now() - started.at) * 100) / 100 : undefined,
          orgId: principal?.organizationId,
        },
        'request',
      )
    })
    .use(
      openApiDocument({
        path: OPENAPI_PATH,
        info: { title: 'Ringbase API', version: ctx.version, description: 'Self-hosted voice-agent platform' },
        components: { securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
        security: [{ ApiKey: [] }],
      }),
    )
    .get(
      '/api/v1/docs',
      () => new Response(docsPage as unknown as string, { headers: { 'content-type': 'text/html; charset=utf-8' } }),
      {
        detail: { hide: true },
      },
    )
    .use(healthRoutes(ctx))
    .use(apiKeyRoutes(ctx))
    .use(agentRoutes(ctx))
    .use(nodeTypeRoutes(ctx))
    .use(runRoutes(ctx))
    .use(usageRoutes(ctx))
    .use(telephonyRoutes(ctx))
    .use(telephonyWebhookRoutes(ctx))
    .use(uploadRoutes(ctx))
    .use(campaignRoutes(ctx))
    .use(publicAgentRoutes(ctx))
    .use(modelRoutes(ctx))
    .use(textChatRoutes(ctx))
    .use(webCallRoutes(ctx))
    .use(webhookRoutes(ctx))
    .use(credentialRoutes(ctx))
    .use(toolRoutes(ctx))
    .use(sessionRoutes(ctx))
    .use(eventRoutes(ctx))
    .use(consoleRoutes(options.console ?? null))
    .use(options.consoleDev ?? new Elysia())
    .use(knowledgeBaseRoutes(ctx))
    .use(mcpRoutes(ctx))
    .use(workflowRecordingRoutes(ctx))
  return app
}

export type App = ReturnType<typeof createApp>
