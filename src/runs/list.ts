import { inArray } from 'drizzle-orm'
import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowRuns } from '../db/schema'
import { forbidden, refused } from '../lib/errors'
import { runView, RunDetailSchema, selectRunsWithAgent } from './detail'
import { criteriaFrom, parseFilterItems, type RunCriteria } from './filters'
import { runPageIds, type RunSort } from './queries'

const JsonObject = t.Record(t.String(), t.Unknown())

/** A page request of the run lists (the HTTP layer validates it: api/runs/model.ts RunListQuery). */
export type RunListOptions = { page?: number; limit?: number; filters?: string; sort_by?: string; sort_order?: string }

export const RunList = t.Object({
  runs: t.Array(RunDetailSchema),
  total_count: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  total_pages: t.Integer(),
  applied_filters: t.Array(t.Object({ attribute: t.String(), type: t.Unknown(), value: JsonObject })),
})

/** The order a run list asks for: newest first unless told otherwise. */
export const runSort = (query: RunListOptions): RunSort => ({
  by: query.sort_by === 'duration' ? 'duration' : 'created_at',
  order: query.sort_order === 'asc' ? 'asc' : 'desc',
})

const RUN_LIST_FILTERS = ['dateRange', 'dispositionCode', 'duration', 'status', 'tokenUsage']

/**
 * A page of the runs of one agent or one campaign (the caller checked it belongs to the organization), of every state,
 * newest first unless sorted otherwise, with the reference's run-list filters.
 */
export function listRuns(
  ctx: AppContext,
  organizationId: number,
  scope: Pick<RunCriteria, 'agentId' | 'campaignId'>,
  query: RunListOptions,
): Static<typeof RunList> {
  const items = parseFilterItems(query.filters)
  if (!items) throw refused('Invalid filter format')
  const { criteria, unknown } = criteriaFrom(items, RUN_LIST_FILTERS)
  if (unknown.length > 0) throw forbidden(`Invalid attribute '${unknown[0]}'`)
  const page = query.page ?? 1
  const limit = query.limit ?? 50
  const found = runPageIds(ctx, {
    organizationId,
    criteria: { ...criteria, ...scope },
    withUsageOnly: false,
    sort: {
      by: query.sort_by === 'duration' ? 'duration' : 'created_at',
      order: query.sort_order === 'asc' ? 'asc' : 'desc',
    },
    page,
    limit,
  })
  const ids = found.rows.map((row) => row.id)
  const runs = ids.length === 0 ? [] : selectRunsWithAgent(ctx, inArray(workflowRuns.id, ids)).all()
  const byId = new Map(runs.map((row) => [row.run.id, row]))
  return {
    runs: ids.map((id) => runView(ctx, byId.get(id)!)),
    total_count: found.total,
    page,
    limit,
    total_pages: Math.ceil(found.total / limit),
    applied_filters: items,
  }
}
