import { and, eq, gte, isNotNull, lte, ne, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import type { AppContext } from '../context'
import { runsMatchingNumbers } from '../db/run-number-search'
import { workflowRuns } from '../db/schema'
import type { RunCriteria } from './filters'

/**
 * One page of run ids for the run lists (the usage report and an agent's runs), fast on millions of runs.
 *
 * SQLite picks one index per query and, without statistics, guesses badly between a filter's index and the sort
 * order's (e.g. walking every run by date to find a rare disposition). So the plan is chosen here from the match count,
 * which the page needs anyway, and the chosen index is the only one a condition may use (`+column` keeps a condition
 * off indexes):
 * - few matches: the most selective filter's index collects them and they are sorted;
 * - many matches: the sort order is walked (through an equality filter's index when it keeps that order) and the
 *   other conditions are checked row by row; a page past the middle walks from the other end.
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

/** Up to this many matches, collecting and sorting them is cheaper than walking the sort order. */
const SORT_MATCHES_UP_TO = 2000

type TermKey = 'runId' | 'workflowId' | 'campaignId' | 'dispositions' | 'duration' | 'callType' | 'channel' | 'created'

/** A filter condition; built with `indexable` false it cannot select an index. */
type Term = { key: TermKey; build: (indexable: boolean) => SQL | undefined }

/** Filters whose index narrows a count most, most selective first. */
const COUNT_DRIVERS: TermKey[] = ['runId', 'workflowId', 'campaignId', 'dispositions', 'duration', 'callType', 'channel']
/** Equality filters whose index (organization_id, column, created_at) lists matches in created_at order. */
const CREATED_ORDER_DRIVERS: TermKey[] = ['runId', 'workflowId', 'campaignId', 'callType', 'channel']

const column = (wrapped: SQLWrapper, indexable: boolean): SQLWrapper => (indexable ? wrapped : sql`+${wrapped}`)

function range(wrapped: SQLWrapper, min: number | string | undefined, max: number | string | undefined, indexable: boolean) {
  const target = column(wrapped, indexable)
  return and(min === undefined ? undefined : gte(target, min), max === undefined ? undefined : lte(target, max))
}

function termsOf(criteria: RunCriteria): Term[] {
  const c = criteria
  const candidates: (Term | false)[] = [
    c.runId !== undefined && { key: 'runId', build: (on) => eq(column(workflowRuns.id, on), c.runId) },
    c.workflowId !== undefined && { key: 'workflowId', build: (on) => eq(column(workflowRuns.workflowId, on), c.workflowId) },
    c.campaignId !== undefined && { key: 'campaignId', build: (on) => eq(column(workflowRuns.campaignId, on), c.campaignId) },
    // One parameter for any number of codes keeps the statement text, and so its cached compilation, the same.
    c.dispositions !== undefined
      && { key: 'dispositions', build: (on) => sql`${column(workflowRuns.disposition, on)} IN (SELECT value FROM json_each(${JSON.stringify(c.dispositions)}))` },
    (c.minDuration !== undefined || c.maxDuration !== undefined)
      && { key: 'duration', build: (on) => range(workflowRuns.callDurationSeconds, c.minDuration, c.maxDuration, on) },
    c.callType !== undefined && { key: 'callType', build: (on) => eq(column(workflowRuns.callType, on), c.callType) },
    c.channel !== undefined && { key: 'channel', build: (on) => eq(column(workflowRuns.channel, on), c.channel) },
    (c.createdFrom !== undefined || c.createdTo !== undefined)
      && { key: 'created', build: (on) => range(workflowRuns.createdAt, c.createdFrom, c.createdTo, on) },
  ]
  return candidates.filter((term): term is Term => term !== false)
}

/** Conditions without an index of their own. */
function unindexedConditions(criteria: RunCriteria): (SQL | undefined)[] {
  const c = criteria
  return [
    c.completed === undefined ? undefined : c.completed ? eq(workflowRuns.state, 'completed') : ne(workflowRuns.state, 'completed'),
    range(workflowRuns.serviceTokenUsage, c.minTokens, c.maxTokens, true),
  ]
}

/** The WHERE clause letting only `indexed` terms select an index. */
function whereClause(request: RunPageRequest, terms: Term[], extra: SQL[], indexed: (key: TermKey) => boolean): SQL | undefined {
  return and(
    eq(workflowRuns.organizationId, request.organizationId),
    request.withUsageOnly ? isNotNull(workflowRuns.usageInfo) : undefined,
    ...terms.map((term) => term.build(indexed(term.key))),
    ...unindexedConditions(request.criteria),
    ...extra,
  )
}

const dialect = new SQLiteSyncDialect()

/** Runs a composed query through bun:sqlite's statement cache, so each query shape is compiled once. */
function cachedAll<T>(ctx: AppContext, query: SQL): T[] {
  const { sql: text, params } = dialect.sqlToQuery(query)
  return ctx.sqlite.query<T, never[]>(text).all(...(params as never[]))
}

/** With only direction and channel filters, the usage total is a sum over usage_run_counts. */
function countedTotal(ctx: AppContext, request: RunPageRequest): number | null {
  const { callType, channel, ...others } = request.criteria
  if (!request.withUsageOnly || Object.values(others).some((value) => value !== undefined)) return null
  const [row] = cachedAll<{ total: number | null }>(ctx, sql`SELECT sum(runs) AS total FROM usage_run_counts
    WHERE organization_id = ${request.organizationId}
    ${callType === undefined ? sql`` : sql`AND call_type = ${callType}`}
    ${channel === undefined ? sql`` : sql`AND channel = ${channel}`}`)
  return row.total ?? 0
}

export function findRunIdPage(ctx: AppContext, request: RunPageRequest): { total: number; ids: number[] } {
  const terms = termsOf(request.criteria)
  const present = new Set(terms.map((term) => term.key))
  const numbers = runsMatchingNumbers(request.criteria)
  const countDriver = COUNT_DRIVERS.find((key) => present.has(key))
  // Date bounds share an index with every driver but the duration one.
  const narrowing = (key: TermKey) => key === countDriver || (key === 'created' && countDriver !== 'duration')

  const total = countedTotal(ctx, request) ?? cachedAll<{ total: number }>(ctx,
    sql`SELECT count(*) AS total FROM ${numbers.from} WHERE ${whereClause(request, terms, numbers.conditions, narrowing)}`,
  )[0].total
  const offset = (request.page - 1) * request.limit
  if (offset >= total) return { total, ids: [] }

  const byDuration = request.sort.by === 'duration'
  const sortColumn = byDuration ? workflowRuns.callDurationSeconds : workflowRuns.createdAt
  // The trigram index drives a number search: its matches are always collected and sorted.
  const walk = total > SORT_MATCHES_UP_TO && !numbers.drivenByIndex
  let where: SQL | undefined
  let order = request.sort.order
  let pageOffset = offset
  const pageLength = Math.min(request.limit, total - offset)
  if (walk) {
    const walkDriver = byDuration ? undefined : CREATED_ORDER_DRIVERS.find((key) => present.has(key))
    const ordering = (key: TermKey) => key === walkDriver || key === (byDuration ? 'duration' : 'created')
    where = whereClause(request, terms, numbers.conditions, ordering)
    if (offset > total / 2) {
      order = order === 'asc' ? 'desc' : 'asc'
      pageOffset = total - offset - pageLength
    }
  } else {
    where = whereClause(request, terms, numbers.conditions, narrowing)
  }
  const direction = sql.raw(order)
  // `+` keeps a small match set from being read in index order: it is sorted instead.
  const sortKey = walk ? sortColumn : sql`+${sortColumn}`
  const rows = cachedAll<{ id: number }>(ctx, sql`SELECT ${workflowRuns.id} AS id FROM ${numbers.from} WHERE ${where}
    ORDER BY ${sortKey} ${direction}, ${workflowRuns.id} ${direction} LIMIT ${pageLength} OFFSET ${pageOffset}`)
  const ids = rows.map((row) => row.id)
  return { total, ids: order === request.sort.order ? ids : ids.reverse() }
}
