import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { backendOf } from '../../db/open'
import { liveInstanceCount } from '../../instances/registry'
import { ariConnectionCounts } from '../../telephony/ari/manager'
import { diskSpace } from '../../storage/disk-space'
import { requirePrincipal } from '../auth'

export const HealthResponse = t.Object({
  status: t.String(),
  version: t.String(),
  backend_api_endpoint: t.String(),
  deployment_mode: t.String(),
  auth_provider: t.String(),
  ari: t.Object(
    {
      connected: t.Integer({ description: 'Of those, the ones whose events websocket is up.' }),
      total: t.Integer({
        description:
          'Active ARI configurations (parked ones are not counted) whose events connection this instance holds: with several instances, each configuration is held by one of them.',
      }),
    },
    { description: "This instance's ARI events connections." },
  ),
  database: t.Object(
    {
      backend: t.Union([t.Literal('sqlite'), t.Literal('postgresql')]),
      reachable: t.Boolean({ description: 'Whether the database answered just now (PostgreSQL may be down).' }),
    },
    { description: 'The database engine the server runs on.' },
  ),
  instances: t.Object(
    {
      live: t.Integer({
        description:
          'Ringbase instances sharing this database whose last heartbeat is at most three heartbeats old (15 seconds by default); 0 when the database cannot be reached.',
      }),
    },
    { description: 'The server processes sharing the database (docs/scale-out.md).' },
  ),
  object_store: t.Object(
    {
      kind: t.Union([t.Literal('local'), t.Literal('s3')]),
      reachable: t.Boolean({ description: 'Whether the store answered a probe just now (within 2 seconds).' }),
    },
    { description: "Where files are kept: the data dir ('local') or an S3-compatible bucket ('s3')." },
  ),
  disk: t.Optional(
    t.Object(
      {
        free_bytes: t.Integer({ description: 'Bytes free for the server on the file system of its data dir.' }),
        total_bytes: t.Integer(),
      },
      { description: "Only for a request made with an admin key (or its browser session): the data dir's disk space." },
    ),
  ),
})

/** Whether the request is authenticated as an admin; health answers everyone, so a missing or bad key is just "no". */
function isAdmin(ctx: AppContext, request: Request): boolean {
  try {
    return requirePrincipal(ctx, request).scope === 'admin'
  } catch {
    return false
  }
}

/** The live instances, or null when the database did not answer. */
function liveInstances(ctx: AppContext): number | null {
  try {
    return liveInstanceCount(ctx)
  } catch (error) {
    ctx.log.warn({ err: error }, 'health: the database did not answer')
    return null
  }
}

export const healthRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1' }).get(
    '/health',
    async ({ request }) => {
      const disk = isAdmin(ctx, request) ? diskSpace(ctx.config.dataDir) : null
      const live = liveInstances(ctx)
      return {
        status: 'ok',
        version: ctx.version,
        backend_api_endpoint: ctx.config.publicUrl,
        deployment_mode: 'oss',
        auth_provider: 'api_key',
        ari: ariConnectionCounts(ctx),
        database: { backend: backendOf(ctx.sqlite), reachable: live !== null },
        instances: { live: live ?? 0 },
        object_store: await ctx.objects.status(),
        ...(disk ? { disk } : {}),
      }
    },
    {
      response: { 200: HealthResponse },
      detail: {
        tags: ['Health'],
        summary:
          "Reachability, version, the database, live instances and the object store's state (no API key); with an admin key, also the data dir's disk space",
        security: [],
      },
    },
  )
