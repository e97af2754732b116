import { and, eq, inArray } from 'drizzle-orm'
import type { Static } from 'elysia'
import type { AppContext } from '../../context'
import { workflowRuns, workflows } from '../../db/schema'
import { badRequest, forbidden, notFound } from '../../http/errors'
import { artifactKey, findRunByPublicToken, RUN_ARTIFACTS, type RunArtifact } from '../../runs/artifacts'
import { runView, selectRunsWithAgent } from '../../runs/detail'
import { criteriaFrom, parseFilterItems } from '../../runs/filters'
import { findRunIdPage } from '../../runs/query'
import type { RunList, RunListQuery } from './model'

const RUN_LIST_FILTERS = ['dateRange', 'dispositionCode', 'duration', 'status', 'tokenUsage']

/** The agent's runs of every state, newest first unless sorted otherwise. */
export function listWorkflowRuns(
  ctx: AppContext,
  organizationId: number,
  workflowId: number,
  query: Static<typeof RunListQuery>,
): Static<typeof RunList> {
  const workflow = ctx.db.select({ id: workflows.id }).from(workflows)
    .where(and(eq(workflows.id, workflowId), eq(workflows.organizationId, organizationId))).get()
  if (!workflow) throw notFound(`Workflow with id ${workflowId} not found`)
  const items = parseFilterItems(query.filters)
  if (!items) throw badRequest('Invalid filter format')
  const { criteria, unknown } = criteriaFrom(items, RUN_LIST_FILTERS)
  if (unknown.length > 0) throw forbidden(`Invalid attribute '${unknown[0]}'`)
  const page = query.page ?? 1
  const limit = query.limit ?? 50
  const { total, ids } = findRunIdPage(ctx, {
    organizationId,
    criteria: { ...criteria, workflowId },
    withUsageOnly: false,
    sort: { by: query.sort_by === 'duration' ? 'duration' : 'created_at', order: query.sort_order === 'asc' ? 'asc' : 'desc' },
    page,
    limit,
  })
  const found = ids.length === 0 ? [] : selectRunsWithAgent(ctx, inArray(workflowRuns.id, ids)).all()
  const byId = new Map(found.map((row) => [row.run.id, row]))
  return {
    runs: ids.map((id) => runView(ctx, byId.get(id)!)),
    total_count: total,
    page,
    limit,
    total_pages: Math.ceil(total / limit),
    applied_filters: items,
  }
}

const isArtifact = (value: string): value is RunArtifact => (RUN_ARTIFACTS as string[]).includes(value)

/** Streams a run's artifact to anyone holding its unexpired public token. */
export async function downloadArtifact(ctx: AppContext, token: string, artifactType: string, inline: boolean): Promise<Response> {
  const run = findRunByPublicToken(ctx, token)
  if (!run) throw notFound('Invalid or expired token')
  if (!isArtifact(artifactType)) throw badRequest('Unsupported artifact type')
  const key = artifactKey(run, artifactType)
  const file = key === null ? null : await ctx.objects.file(key)
  if (!file) throw notFound(`No ${artifactType} available for this workflow run`)
  const extension = key!.includes('.') ? key!.slice(key!.lastIndexOf('.')) : ''
  return new Response(file, {
    headers: {
      'content-type': file.type,
      'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="run-${run.id}-${artifactType}${extension}"`,
      'cache-control': 'private, no-store',
    },
  })
}
