import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { type ValidationItem } from '../lib/validation'
import { invalid, refused } from '../lib/errors'
import { parseIsoDateTime } from '../lib/iso-datetime'
import { publicLinkParams } from './artifacts'
import { criteriaFrom, DAY_MS, parseFilterItems } from './filters'
import { runSort, type RunListOptions } from './list'
import { usageGroups, usageRunPage, type UsageGroupBy } from './queries'
import { ingestionEmbeddingTokens } from '../knowledge/documents'
import type { UsageResponse, UsageSummaryResponse } from './usage-schemas'

const USAGE_FILTERS = [
  'runId',
  'workflowId',
  'campaignId',
  'callerNumber',
  'calledNumber',
  'dispositionCode',
  'duration',
  'callDirection',
  'callChannel',
]

const DATE_MESSAGES = {
  datetime_from_date_parsing: 'Input should be a valid datetime or date',
  datetime_parsing: 'Input should be a valid datetime',
}

/** Inclusive created_at bounds as ISO strings; a date alone as end_date means the end of that day. */
function dateBounds(query: { start_date?: string; end_date?: string }): { createdFrom?: string; createdTo?: string } {
  const bounds: { createdFrom?: string; createdTo?: string } = {}
  const problems: ValidationItem[] = []
  for (const [name, bound] of [
    ['start_date', 'createdFrom'],
    ['end_date', 'createdTo'],
  ] as const) {
    const value = query[name]
    if (value === undefined) continue
    const parsed = parseIsoDateTime(value)
    if (!parsed.ok) {
      const msg = `${DATE_MESSAGES[parsed.type]}, ${parsed.error}`
      problems.push({ type: parsed.type, loc: ['query', name], msg, input: value, ctx: { error: parsed.error } })
      continue
    }
    const ms = parsed.dateOnly && name === 'end_date' ? parsed.ms + DAY_MS - 1 : parsed.ms
    bounds[bound] = new Date(ms).toISOString()
  }
  if (problems.length > 0) throw invalid(problems)
  return bounds
}

/** A usage page request (the HTTP layer validates it: api/usage/model.ts UsageQuery). */
export type UsageOptions = RunListOptions & { start_date?: string; end_date?: string }

/**
 * The organization's finished runs (those with usage_info), filtered, sorted and paged, as the JSON text of a
 * UsageResponse. Totals are of the page.
 */
export function usageReportJson(ctx: AppContext, organizationId: number, query: UsageOptions): string {
  const bounds = dateBounds(query)
  const items = parseFilterItems(query.filters)
  if (!items) throw refused('Invalid filters format')
  const page = query.page ?? 1
  const limit = query.limit ?? 50
  const links = publicLinkParams(ctx)
  const { total, rows: runs } = usageRunPage(
    ctx,
    {
      organizationId,
      criteria: { ...criteriaFrom(items, USAGE_FILTERS).criteria, ...bounds },
      withUsageOnly: true,
      sort: runSort(query),
      page,
      limit,
    },
    links,
  )
  const totals: Omit<Static<typeof UsageResponse>, 'runs'> = {
    total_service_tokens: runs.reduce((sum, run) => sum + run.tokens, 0),
    total_duration_seconds: runs.reduce((sum, run) => sum + run.seconds, 0),
    total_embedding_tokens: runs.reduce((sum, run) => sum + run.embedding_tokens, 0),
    total_count: total,
    page,
    limit,
    total_pages: Math.ceil(total / limit),
  }
  // The totals' JSON without its opening brace completes the object.
  return `{"runs":[${runs.map((run) => run.json).join(',')}],${JSON.stringify(totals).slice(1)}`
}

/**
 * The organization's finished runs within the dates, counted and summed by outcome, agent or day; and the embedding
 * tokens its knowledge base's documents took to process within the dates.
 */
export function usageSummary(
  ctx: AppContext,
  organizationId: number,
  query: { group_by: UsageGroupBy; start_date?: string; end_date?: string; utc_offset_minutes?: number },
): Static<typeof UsageSummaryResponse> {
  const bounds = dateBounds(query)
  const groups = usageGroups(ctx, {
    organizationId,
    groupBy: query.group_by,
    utcOffsetMinutes: query.utc_offset_minutes ?? 0,
    ...bounds,
  })
  return {
    group_by: query.group_by,
    groups: groups.map((group) => ({ ...group, label: group.label ?? group.key })),
    total_runs: groups.reduce((sum, group) => sum + group.runs, 0),
    knowledge_base_embedding_tokens: ingestionEmbeddingTokens(ctx, organizationId, bounds),
  }
}
