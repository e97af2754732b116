import { eq, sql } from 'drizzle-orm'
import type { Static } from 'elysia'
import type { AppContext } from '../../context'
import { workflowRuns, workflows } from '../../db/schema'
import { badRequest, unprocessable, type ValidationItem } from '../../http/errors'
import { parseIsoDateTime } from '../../lib/iso-datetime'
import { artifactLinks } from '../../runs/artifacts'
import { criteriaFrom, DAY_MS, parseFilterItems } from '../../runs/filters'
import { findRunIdPage } from '../../runs/query'
import type { UsageQuery, UsageResponse, UsageRun } from './model'

const USAGE_FILTERS = [
  'runId', 'workflowId', 'campaignId', 'callerNumber', 'calledNumber', 'dispositionCode', 'duration', 'callDirection', 'callChannel',
]

const DATE_MESSAGES = {
  datetime_from_date_parsing: 'Input should be a valid datetime or date',
  datetime_parsing: 'Input should be a valid datetime',
}

/** Inclusive created_at bounds as ISO strings; a date alone as end_date means the end of that day. */
function dateBounds(query: Static<typeof UsageQuery>): { createdFrom?: string; createdTo?: string } {
  const bounds: { createdFrom?: string; createdTo?: string } = {}
  const problems: ValidationItem[] = []
  for (const [name, bound] of [['start_date', 'createdFrom'], ['end_date', 'createdTo']] as const) {
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
  if (problems.length > 0) throw unprocessable(problems)
  return bounds
}

const usageColumns = {
  id: workflowRuns.id,
  workflowId: workflowRuns.workflowId,
  workflowName: workflows.name,
  name: workflowRuns.name,
  createdAt: workflowRuns.createdAt,
  serviceTokenUsage: workflowRuns.serviceTokenUsage,
  callDurationSeconds: workflowRuns.callDurationSeconds,
  callType: workflowRuns.callType,
  mode: workflowRuns.mode,
  disposition: workflowRuns.disposition,
  calledNumber: workflowRuns.calledNumber,
  initialContext: workflowRuns.initialContext,
  gatheredContext: workflowRuns.gatheredContext,
  costInfo: workflowRuns.costInfo,
  recordingKey: workflowRuns.recordingKey,
  transcriptKey: workflowRuns.transcriptKey,
  userRecordingKey: workflowRuns.userRecordingKey,
  botRecordingKey: workflowRuns.botRecordingKey,
  publicAccessToken: workflowRuns.publicAccessToken,
  publicAccessExpiresAt: workflowRuns.publicAccessExpiresAt,
}

const prepareUsageRows = (ctx: AppContext) => ctx.db.select(usageColumns).from(workflowRuns)
  .innerJoin(workflows, eq(workflows.id, workflowRuns.workflowId))
  .where(sql`${workflowRuns.id} IN (SELECT value FROM json_each(${sql.placeholder('ids')}))`)
  .prepare()

/** The hot path's statement, compiled once per context. */
const usageRowStatements = new WeakMap<AppContext, ReturnType<typeof prepareUsageRows>>()

function usageRows(ctx: AppContext, ids: number[]) {
  let statement = usageRowStatements.get(ctx)
  if (!statement) usageRowStatements.set(ctx, statement = prepareUsageRows(ctx))
  return statement.all({ ids: JSON.stringify(ids) })
}

const asText = (value: unknown): string | null => (value === undefined || value === null ? null : String(value))

/** The organization's finished runs (those with usage_info), filtered, sorted and paged. Totals are of the page. */
export function usageRuns(ctx: AppContext, organizationId: number, query: Static<typeof UsageQuery>): Static<typeof UsageResponse> {
  const bounds = dateBounds(query)
  const items = parseFilterItems(query.filters)
  if (!items) throw badRequest('Invalid filters format')
  const page = query.page ?? 1
  const limit = query.limit ?? 50
  const { total, ids } = findRunIdPage(ctx, {
    organizationId,
    criteria: { ...criteriaFrom(items, USAGE_FILTERS).criteria, ...bounds },
    withUsageOnly: true,
    sort: { by: query.sort_by === 'duration' ? 'duration' : 'created_at', order: query.sort_order === 'asc' ? 'asc' : 'desc' },
    page,
    limit,
  })
  const rows = ids.length === 0 ? [] : usageRows(ctx, ids)
  const rowsById = new Map(rows.map((row) => [row.id, row]))
  const runs = ids.map((id): Static<typeof UsageRun> => {
    const row = rowsById.get(id)!
    const context = row.initialContext
    const callerNumber = asText(context.caller_number)
    const charge = row.costInfo?.charge_usd
    return {
      id: row.id,
      workflow_id: row.workflowId,
      workflow_name: row.workflowName,
      name: row.name,
      created_at: row.createdAt,
      service_token_usage: row.serviceTokenUsage ?? 0,
      call_duration_seconds: Math.round(row.callDurationSeconds ?? 0),
      ...artifactLinks(ctx, row),
      phone_number: row.callType === 'inbound' ? callerNumber : asText(context.phone_number ?? row.calledNumber),
      caller_number: callerNumber,
      called_number: asText(row.calledNumber),
      call_type: row.callType,
      mode: row.mode,
      disposition: row.disposition,
      initial_context: context,
      gathered_context: row.gatheredContext,
      charge_usd: typeof charge === 'number' ? charge : null,
    }
  })
  return {
    runs,
    total_service_tokens: runs.reduce((sum, run) => sum + run.service_token_usage, 0),
    total_duration_seconds: runs.reduce((sum, run) => sum + run.call_duration_seconds, 0),
    total_count: total,
    page,
    limit,
    total_pages: Math.ceil(total / limit),
  }
}
