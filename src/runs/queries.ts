import type { AppContext } from '../context'
import { runsMatchingNumbers } from '../db/run-number-search'
import { allRows, inList, joinSqlParts, limitOffset, sqlPart, type SqlPart } from '../db/sql-parts'
import { HANDLED_BY_NO_LIVE_INSTANCE } from '../instances/queries'
import { USAGE_LINK_PLACEHOLDERS, usageReportSql } from '../db/usage-report'
import { backendOf } from '../db/open'
import { artifactLinksJsonArgs } from './artifacts'
import type { RunCriteria } from './filters'

/**
 * One page of runs for the run lists (the usage report and an agent's runs), fast on millions of runs: the page is found
 * as ids, then only its rows are read (`readRunPage`).
 *
 * SQLite picks one index per query and, without statistics, guesses badly between a filter's index and the sort
 * order's (e.g. walking every run by date to find a rare disposition). So the plan is chosen here from the match count,
 * which the page needs anyway, and the chosen index is the only one a condition may use (`+column` keeps a condition
 * off indexes):
 * - few matches: the most selective filter's index collects them and they are sorted;
 * - many matches, or an index that holds every filter in the sort order: the sort order is walked (through an
 *   equality filter's index when it keeps that order) and the other conditions are checked row by row; a page past the
 *   middle walks from the other end.
 * A run id filter matches one run at most: one query reads it and its presence is the total.
 * The unfiltered usage total comes from usage_run_counts. The migration has one index per filter.
 */

export type RunSort = { by: 'created_at' | 'duration'; order: 'asc' | 'desc' }

export type RunPageRequest = {
  organizationId: number
  criteria: RunCriteria
  /** Only runs with usage_info, i.e. finished calls: the usage report's base set. */
  withUsageOnly: boolean
  sort: RunSort
  page: number
  limit: number
}

const SORT_COLUMNS: Record<RunSort['by'], string> = { created_at: 'created_at', duration: 'call_duration_seconds' }

/** Up to this many matches, collecting and sorting them is cheaper than walking the sort order. */
const SORT_MATCHES_UP_TO = 2000

type TermKey = 'runId' | 'agentId' | 'campaignId' | 'dispositions' | 'duration' | 'callType' | 'channel' | 'created'

/** A filter condition; built with `indexable` false it cannot select an index. */
type Term = { key: TermKey; build: (indexable: boolean) => SqlPart }

/** Filters whose index narrows a count most, most selective first. */
const COUNT_DRIVERS: TermKey[] = ['runId', 'agentId', 'campaignId', 'dispositions', 'duration', 'callType', 'channel']
/** Equality filters whose index (organization_id, column, created_at) lists matches in created_at order. */
const CREATED_ORDER_DRIVERS: TermKey[] = ['runId', 'agentId', 'campaignId', 'callType', 'channel']

const column = (name: string, indexable: boolean) => (indexable ? `workflow_runs.${name}` : `+workflow_runs.${name}`)

const equals = (name: string, value: string | number, indexable: boolean) =>
  sqlPart(`${column(name, indexable)} = ?`, value)

function range(
  name: string,
  min: number | string | undefined,
  max: number | string | undefined,
  indexable: boolean,
): SqlPart {
  const target = column(name, indexable)
  return joinSqlParts(
    [
      min === undefined ? undefined : sqlPart(`${target} >= ?`, min),
      max === undefined ? undefined : sqlPart(`${target} <= ?`, max),
    ],
    ' AND ',
  )
}

function termsOf(criteria: RunCriteria): Term[] {
  const c = criteria
  const candidates: (Term | false)[] = [
    c.runId !== undefined && { key: 'runId', build: (on) => equals('id', c.runId!, on) },
    c.agentId !== undefined && { key: 'agentId', build: (on) => equals('workflow_id', c.agentId!, on) },
    c.campaignId !== undefined && { key: 'campaignId', build: (on) => equals('campaign_id', c.campaignId!, on) },
    c.dispositions !== undefined && {
      key: 'dispositions',
      build: (on) => inList(column('disposition', on), c.dispositions!),
    },
    (c.minDuration !== undefined || c.maxDuration !== undefined) && {
      key: 'duration',
      build: (on) => range('call_duration_seconds', c.minDuration, c.maxDuration, on),
    },
    c.callType !== undefined && { key: 'callType', build: (on) => equals('call_type', c.callType!, on) },
    c.channel !== undefined && { key: 'channel', build: (on) => equals('channel', c.channel!, on) },
    (c.createdFrom !== undefined || c.createdTo !== undefined) && {
      key: 'created',
      build: (on) => range('created_at', c.createdFrom, c.createdTo, on),
    },
  ]
  return candidates.filter((term): term is Term => term !== false)
}

/** Conditions without an index of their own. */
function unindexedConditions(criteria: RunCriteria): (SqlPart | undefined)[] {
  const c = criteria
  return [
    c.completed === undefined ? undefined : sqlPart(`workflow_runs.state ${c.completed ? '=' : '<>'} 'completed'`),
    range('service_token_usage', c.minTokens, c.maxTokens, true),
  ]
}

/** The WHERE clause letting only `indexed` terms select an index. */
function whereClause(
  request: RunPageRequest,
  terms: Term[],
  extra: SqlPart[],
  indexed: (key: TermKey) => boolean,
): SqlPart {
  return joinSqlParts(
    [
      sqlPart('workflow_runs.organization_id = ?', request.organizationId),
      request.withUsageOnly ? sqlPart('workflow_runs.usage_info IS NOT NULL') : undefined,
      ...terms.map((term) => term.build(indexed(term.key))),
      ...unindexedConditions(request.criteria),
      ...extra,
    ],
    ' AND ',
  )
}

/** With only direction and channel filters, the usage total is a sum over usage_run_counts. */
function countedTotal(ctx: AppContext, request: RunPageRequest): number | null {
  const { callType, channel, ...others } = request.criteria
  if (!request.withUsageOnly || Object.values(others).some((value) => value !== undefined)) return null
  const where = joinSqlParts(
    [
      sqlPart('organization_id = ?', request.organizationId),
      callType === undefined ? undefined : sqlPart('call_type = ?', callType),
      channel === undefined ? undefined : sqlPart('channel = ?', channel),
    ],
    ' AND ',
  )
  const [row] = allRows<{ total: number | null }>(
    ctx.sqlite,
    sqlPart(`SELECT sum(runs) AS total FROM usage_run_counts WHERE ${where.text}`, ...where.params),
  )
  return row.total ?? 0
}

/** How many runs match, and the page as a query of their ids (null when the page is past the end). */
type RunPageIds = { total: number; ids: SqlPart | null }

function findRunPage(ctx: AppContext, request: RunPageRequest): RunPageIds {
  const terms = termsOf(request.criteria)
  const present = new Set(terms.map((term) => term.key))
  // PostgreSQL has no trigram index of the numbers (docs/scale-out.md): it scans the organization's runs.
  const numbers = runsMatchingNumbers(request.criteria, { scanOnly: backendOf(ctx.sqlite) === 'postgresql' })
  const countDriver = COUNT_DRIVERS.find((key) => present.has(key))
  // Date bounds share an index with every driver but the duration one.
  const narrowing = (key: TermKey) => key === countDriver || (key === 'created' && countDriver !== 'duration')

  let total = countedTotal(ctx, request)
  if (total === null) {
    const where = whereClause(request, terms, numbers.conditions, narrowing)
    total = allRows<{ total: number }>(
      ctx.sqlite,
      sqlPart(`SELECT count(*) AS total FROM ${numbers.from} WHERE ${where.text}`, ...where.params),
    )[0].total
  }
  const offset = (request.page - 1) * request.limit
  if (offset >= total) return { total, ids: null }

  const byDuration = request.sort.by === 'duration'
  const walkDriver = byDuration ? undefined : CREATED_ORDER_DRIVERS.find((key) => present.has(key))
  const ordering = (key: TermKey) => key === walkDriver || key === (byDuration ? 'duration' : 'created')
  // When the walked index holds every filter, each entry read in order is a match: nothing to sort, nothing skipped.
  const walkReadsOnlyMatches = terms.every((term) => ordering(term.key))
  // The trigram index drives a number search: its matches are always collected and sorted.
  const walk = (total > SORT_MATCHES_UP_TO || walkReadsOnlyMatches) && !numbers.drivenByIndex
  let where: SqlPart
  let order = request.sort.order
  let pageOffset = offset
  const pageLength = Math.min(request.limit, total - offset)
  if (walk) {
    where = whereClause(request, terms, numbers.conditions, ordering)
    if (offset > total / 2) {
      order = order === 'asc' ? 'desc' : 'asc'
      pageOffset = total - offset - pageLength
    }
  } else {
    where = whereClause(request, terms, numbers.conditions, narrowing)
  }
  // `+` keeps a small match set from being read in index order: it is sorted instead.
  const sortKey = column(SORT_COLUMNS[request.sort.by], walk)
  const ids = joinSqlParts(
    [
      sqlPart(
        `SELECT workflow_runs.id AS id FROM ${numbers.from} WHERE ${where.text}
      ORDER BY ${sortKey} ${order}, workflow_runs.id ${order}`,
        ...where.params,
      ),
      limitOffset(pageLength, pageOffset),
    ],
    ' ',
  )
  return { total, ids }
}

/**
 * One page of runs and how many match. A row is `columns` (with their parameters) over `workflow_runs run` joined to
 * whatever `joins` adds, computed only for the page's runs, which are found first as ids.
 */
export function readRunPage<Row>(
  ctx: AppContext,
  request: RunPageRequest,
  columns: SqlPart,
  joins = '',
): { total: number; rows: Row[] } {
  const { by, order } = request.sort
  const readRows = (ids: SqlPart) =>
    allRows<Row>(
      ctx.sqlite,
      sqlPart(
        `SELECT ${columns.text} FROM (${ids.text}) AS page
    JOIN workflow_runs run ON run.id = page.id ${joins} ORDER BY run.${SORT_COLUMNS[by]} ${order}, run.id ${order}`,
        ...columns.params,
        ...ids.params,
      ),
    )
  if (request.criteria.runId !== undefined) {
    const terms = termsOf(request.criteria)
    const numbers = runsMatchingNumbers(request.criteria, { scanOnly: true })
    const where = whereClause(request, terms, numbers.conditions, (key) => key === 'runId')
    const rows = readRows(
      sqlPart(`SELECT workflow_runs.id AS id FROM ${numbers.from} WHERE ${where.text}`, ...where.params),
    )
    return { total: rows.length, rows: request.page === 1 ? rows : [] }
  }
  const found = findRunPage(ctx, request)
  return { total: found.total, rows: found.ids ? readRows(found.ids) : [] }
}

type OpenSessionRun = {
  id: number
  organization_id: number
  logs: string
  started_at: string | null
  definition: string
}

/**
 * Runs without a call that are not completed and that no live instance handles (`liveSince`: the liveness cutoff): text
 * chats of a process that stopped. With their version's definition JSON.
 */
export function openSessionRunsOfDeadInstances(ctx: AppContext, liveSince: string): OpenSessionRun[] {
  return ctx.sqlite
    .query<OpenSessionRun, [string]>(
      `SELECT r.id, r.organization_id, r.logs, r.started_at, d.workflow_json AS definition
       FROM workflow_runs r JOIN workflow_definitions d ON d.id = r.definition_id
      WHERE r.call_id IS NULL AND r.state <> 'completed' AND ${HANDLED_BY_NO_LIVE_INSTANCE}`,
    )
    .all(liveSince)
}

export type UsageGroupBy = 'outcome' | 'agent' | 'day'

export type UsageGroupRow = {
  key: string | null
  label: string | null
  runs: number
  duration_seconds: number
  tokens: number
  embedding_tokens: number
  charge_usd: number | null
}

/** At most this many groups are answered, the largest first. */
export const MAX_USAGE_GROUPS = 1000

/**
 * The organization's finished runs (with usage_info) created within the bounds, counted and summed per group (through the
 * (organization_id, created_at) usage index).
 */
export function usageGroups(
  ctx: AppContext,
  request: {
    organizationId: number
    groupBy: UsageGroupBy
    utcOffsetMinutes: number
    createdFrom?: string
    createdTo?: string
  },
): UsageGroupRow[] {
  const usage = usageReportSql(backendOf(ctx.sqlite))
  const group = usage.groupKeys[request.groupBy]
  const offset = request.groupBy === 'day' ? [request.utcOffsetMinutes, request.utcOffsetMinutes] : []
  const where = joinSqlParts(
    [
      sqlPart('run.organization_id = ? AND run.usage_info IS NOT NULL', request.organizationId),
      request.createdFrom === undefined ? undefined : sqlPart('run.created_at >= ?', request.createdFrom),
      request.createdTo === undefined ? undefined : sqlPart('run.created_at <= ?', request.createdTo),
    ],
    ' AND ',
  )
  return allRows<UsageGroupRow>(
    ctx.sqlite,
    sqlPart(
      `SELECT ${group.key} AS key, min(${group.label}) AS label, ${usage.groupTotals}
      FROM workflow_runs run JOIN workflows agent ON agent.id = run.workflow_id
      WHERE ${where.text} GROUP BY 1 ORDER BY runs DESC, key LIMIT ${MAX_USAGE_GROUPS}`,
      ...offset,
      ...where.params,
    ),
  )
}

/** The ids of one page of runs, and the number of matches. */
export const runPageIds = (ctx: AppContext, request: RunPageRequest) =>
  readRunPage<{ id: number }>(ctx, request, sqlPart('run.id AS id'))

const USAGE_RUN_COLUMNS = {
  sqlite: usageReportSql('sqlite').runColumns(artifactLinksJsonArgs('run', USAGE_LINK_PLACEHOLDERS)),
  postgresql: usageReportSql('postgresql').runColumns(artifactLinksJsonArgs('run', USAGE_LINK_PLACEHOLDERS)),
}

/** A run of the usage report: its tokens and seconds for the page's totals, and its item as JSON text. */
export type UsageRunJson = { id: number; tokens: number; seconds: number; embedding_tokens: number; json: string }

/** One page of the usage report; `links` are the public link base and the current time its artifact links use. */
export const usageRunPage = (ctx: AppContext, request: RunPageRequest, links: { base: string; now: string }) =>
  readRunPage<UsageRunJson>(
    ctx,
    request,
    sqlPart(USAGE_RUN_COLUMNS[backendOf(ctx.sqlite)], links.base, links.now),
    'JOIN workflows agent ON agent.id = run.workflow_id',
  )

/** A new run's columns as stored: the JSON ones as text. */
export type NewRunRow = {
  organizationId: number
  agentId: number
  definitionId: number
  name: string
  mode: string
  callType: string
  campaignId: number | null
  campaignContactId: number | null
  telephonyConfigurationId: number | null
  callId: string | null
  providerCallId: string | null
  trafficVariantId: string | null
  modelOverrides: string | null
  initialContext: string
  gatheredContext: string
  createdAt: string
  /** The instance that handles it (src/instances/). */
  instanceId: string
}

/** Stores a run in state `initialized` (empty logs and annotations); returns its id. */
export function insertRun(ctx: AppContext, run: NewRunRow): number {
  return ctx.sqlite
    .query<{ id: number }, (string | number | null)[]>(
      `INSERT INTO workflow_runs (organization_id, workflow_id, definition_id, name, mode, call_type, campaign_id, campaign_contact_id,
       telephony_configuration_id, call_id, provider_call_id, traffic_variant_id, model_overrides, initial_context, gathered_context, logs, annotations, created_at, instance_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', ?, ?) RETURNING id`,
    )
    .get(
      run.organizationId,
      run.agentId,
      run.definitionId,
      run.name,
      run.mode,
      run.callType,
      run.campaignId,
      run.campaignContactId,
      run.telephonyConfigurationId,
      run.callId,
      run.providerCallId,
      run.trafficVariantId,
      run.modelOverrides,
      run.initialContext,
      run.gatheredContext,
      run.createdAt,
      run.instanceId,
    )!.id
}

/** The run is handled by this instance from now on (its conversation runs here). */
export function setRunInstance(ctx: AppContext, runId: number, instanceId: string): void {
  ctx.sqlite.query('UPDATE workflow_runs SET instance_id = ? WHERE id = ?').run(instanceId, runId)
}

/**
 * Hands an open run that no live instance handles (`liveSince`: the liveness cutoff) to `instanceId`, for recovery.
 * False when it is completed or a live instance handles it (another survivor claimed it first).
 */
export function claimRunOfDeadInstance(ctx: AppContext, runId: number, instanceId: string, liveSince: string): boolean {
  return (
    ctx.sqlite
      .query(
        `UPDATE workflow_runs SET instance_id = ? WHERE id = ? AND state <> 'completed' AND ${HANDLED_BY_NO_LIVE_INSTANCE}`,
      )
      .run(instanceId, runId, liveSince).changes > 0
  )
}

/** The organization of a run, or null when there is no such run. */
export function runOrganizationId(ctx: AppContext, runId: number): number | null {
  return (
    ctx.sqlite
      .query<{ organization_id: number }, [number]>('SELECT organization_id FROM workflow_runs WHERE id = ?')
      .get(runId)?.organization_id ?? null
  )
}

/** `initialized` → `running` as of `at`; false when the run was not `initialized`. */
export function markRunStarted(ctx: AppContext, runId: number, at: string): boolean {
  return (
    ctx.sqlite
      .query(`UPDATE workflow_runs SET state = 'running', started_at = ? WHERE id = ? AND state = 'initialized'`)
      .run(at, runId).changes > 0
  )
}

/** What finishing a run merges into, as stored (JSON text). */
export type OpenRunJson = {
  workflow_id: number
  initial_context: string
  gathered_context: string
  logs: string
  annotations: string
  cost_info: string | null
}

/** The run's stored JSON while it is not completed, or null. */
export function openRunJson(ctx: AppContext, runId: number): OpenRunJson | null {
  return ctx.sqlite
    .query<OpenRunJson, [number]>(
      `SELECT workflow_id, initial_context, gathered_context, logs, annotations, cost_info FROM workflow_runs WHERE id = ? AND state <> 'completed'`,
    )
    .get(runId)
}

/** The values a completed run is written with, JSON columns as text. */
export type CompletedRunJson = {
  completedAt: string
  usageInfo: string
  costInfo: string | null
  initialContext: string
  gatheredContext: string
  logs: string
  annotations: string
}

export function writeCompletedRun(ctx: AppContext, runId: number, run: CompletedRunJson): void {
  ctx.sqlite
    .query(
      `UPDATE workflow_runs SET state = 'completed', completed_at = ?, usage_info = ?, cost_info = ?,
         initial_context = ?, gathered_context = ?, logs = ?, annotations = ? WHERE id = ?`,
    )
    .run(
      run.completedAt,
      run.usageInfo,
      run.costInfo,
      run.initialContext,
      run.gatheredContext,
      run.logs,
      run.annotations,
      runId,
    )
}

/** The agent's disposition codes as stored (a JSON array's text), or null when there is no such agent. */
export function agentDispositionCodesJson(ctx: AppContext, agentId: number): string | null {
  return (
    ctx.sqlite
      .query<{ codes: string }, [number]>('SELECT call_disposition_codes AS codes FROM workflows WHERE id = ?')
      .get(agentId)?.codes ?? null
  )
}

export function setAgentDispositionCodesJson(ctx: AppContext, agentId: number, codes: string): void {
  ctx.sqlite.query('UPDATE workflows SET call_disposition_codes = ? WHERE id = ?').run(codes, agentId)
}

/** Calls of the organization in `mode` placed and not finished yet. */
export function openRunsOfMode(ctx: AppContext, organizationId: number, mode: string): number {
  return ctx.sqlite
    .query<{ n: number }, [number, string]>(
      `SELECT count(*) AS n FROM workflow_runs WHERE organization_id = ? AND call_id IS NOT NULL AND mode = ? AND state <> 'completed'`,
    )
    .get(organizationId, mode)!.n
}

/** Calls of the organization placed and not finished yet, whatever started them. */
export function openCallCount(ctx: AppContext, organizationId: number): number {
  return ctx.sqlite
    .query<{ n: number }, [number]>(
      `SELECT count(*) AS n FROM workflow_runs WHERE organization_id = ? AND call_id IS NOT NULL AND state <> 'completed'`,
    )
    .get(organizationId)!.n
}
