/** Where a usage report's artifact links take their parameters: the public link base and the current time. */
export const USAGE_LINK_PLACEHOLDERS = { base: '?1', now: '?2' }

/** A run's embedding tokens (knowledge-base queries): the sum over its `usage_info.embeddings` models. */
const RUN_EMBEDDING_TOKENS = "(SELECT coalesce(sum(used.value), 0) FROM json_each(run.usage_info, '$.embeddings') used)"

import type { DatabaseBackend } from './open'

/** The usage report's SQL for one engine: SQLite's JSON functions, or PostgreSQL's jsonb operators. */
export type UsageReportSql = {
  runColumns(artifactLinkArgs: string): string
  groupTotals: string
  groupKeys: Record<'outcome' | 'agent' | 'day', { key: string; label: string }>
}

/**
 * A run of the usage report as JSON text written by SQLite (json_object, json_extract, json_type). Parsing the stored
 * contexts into objects only to serialize them again took most of the report's time (0.6 of 1.1 ms for 50 runs); here
 * they are copied as they are stored. `artifactLinkArgs` are more json_object arguments, written over
 * USAGE_LINK_PLACEHOLDERS: the parameters after the page's are the public link base and the current time.
 */
const sqliteRunColumns = (artifactLinkArgs: string) => `run.id AS id, coalesce(run.service_token_usage, 0) AS tokens,
  CAST(round(coalesce(run.call_duration_seconds, 0)) AS INTEGER) AS seconds, ${RUN_EMBEDDING_TOKENS} AS embedding_tokens,
  json_object(
    'id', run.id, 'workflow_id', run.workflow_id, 'workflow_name', agent.name, 'name', run.name, 'created_at', run.created_at,
    'service_token_usage', coalesce(run.service_token_usage, 0), 'embedding_tokens', ${RUN_EMBEDDING_TOKENS},
    'call_duration_seconds', CAST(round(coalesce(run.call_duration_seconds, 0)) AS INTEGER),
    ${artifactLinkArgs},
    'phone_number', CAST(CASE WHEN run.call_type = 'inbound' THEN run.caller_number
      ELSE coalesce(json_extract(run.initial_context, '$.phone_number'), run.called_number) END AS TEXT),
    'caller_number', CAST(run.caller_number AS TEXT),
    'called_number', CAST(run.called_number AS TEXT),
    'call_type', run.call_type, 'mode', run.mode, 'disposition', run.disposition,
    'initial_context', json(run.initial_context), 'gathered_context', json(run.gathered_context),
    'charge_usd', CASE WHEN json_type(run.cost_info, '$.charge_usd') IN ('integer', 'real') THEN json_extract(run.cost_info, '$.charge_usd') END
  ) AS json`

/** What a usage summary's group is keyed by; the day is the local date at `?` minutes from UTC (the caller's zone). */
const SQLITE_GROUP_KEYS: UsageReportSql['groupKeys'] = {
  outcome: { key: 'run.disposition', label: 'run.disposition' },
  agent: { key: 'CAST(run.workflow_id AS TEXT)', label: 'agent.name' },
  day: { key: "date(run.created_at, ? || ' minutes')", label: "date(run.created_at, ? || ' minutes')" },
}

/**
 * A usage summary group's totals over `workflow_runs run`: runs, whole seconds, tokens, embedding tokens, the USD charge
 * (null if none).
 */
const SQLITE_GROUP_TOTALS = `count(*) AS runs,
  CAST(round(coalesce(sum(run.call_duration_seconds), 0)) AS INTEGER) AS duration_seconds,
  coalesce(sum(run.service_token_usage), 0) AS tokens,
  coalesce(sum(${RUN_EMBEDDING_TOKENS}), 0) AS embedding_tokens,
  sum(CASE WHEN json_type(run.cost_info, '$.charge_usd') IN ('integer', 'real') THEN json_extract(run.cost_info, '$.charge_usd') END) AS charge_usd`

/** A run's embedding tokens on PostgreSQL: the numbers of its `usage_info.embeddings` object. */
const PG_EMBEDDING_TOKENS = `(SELECT coalesce(sum((used.value #>> '{}')::double precision), 0)
  FROM jsonb_each(CASE WHEN jsonb_typeof(run.usage_info::jsonb -> 'embeddings') = 'object' THEN run.usage_info::jsonb -> 'embeddings' ELSE '{}' END) used
  WHERE jsonb_typeof(used.value) = 'number')`

const PG_CHARGE =
  "CASE WHEN jsonb_typeof(run.cost_info::jsonb -> 'charge_usd') = 'number' THEN (run.cost_info::jsonb ->> 'charge_usd')::double precision END"

const postgresRunColumns = (artifactLinkArgs: string) => `run.id AS id, coalesce(run.service_token_usage, 0) AS tokens,
  CAST(round(coalesce(run.call_duration_seconds, 0)::numeric) AS INTEGER) AS seconds, ${PG_EMBEDDING_TOKENS} AS embedding_tokens,
  json_build_object(
    'id', run.id, 'workflow_id', run.workflow_id, 'workflow_name', agent.name, 'name', run.name, 'created_at', run.created_at,
    'service_token_usage', coalesce(run.service_token_usage, 0), 'embedding_tokens', ${PG_EMBEDDING_TOKENS},
    'call_duration_seconds', CAST(round(coalesce(run.call_duration_seconds, 0)::numeric) AS INTEGER),
    ${artifactLinkArgs},
    'phone_number', CASE WHEN run.call_type = 'inbound' THEN run.caller_number
      ELSE coalesce(run.initial_context::jsonb ->> 'phone_number', run.called_number) END,
    'caller_number', run.caller_number,
    'called_number', run.called_number,
    'call_type', run.call_type, 'mode', run.mode, 'disposition', run.disposition,
    'initial_context', run.initial_context::json, 'gathered_context', run.gathered_context::json,
    'charge_usd', ${PG_CHARGE}
  )::text AS json`

/** The local day: `?` minutes from UTC added to the creation instant. */
const PG_DAY =
  "to_char((run.created_at::timestamptz AT TIME ZONE 'UTC') + make_interval(mins => CAST(? AS INTEGER)), 'YYYY-MM-DD')"

const POSTGRES_USAGE: UsageReportSql = {
  runColumns: postgresRunColumns,
  groupKeys: {
    outcome: SQLITE_GROUP_KEYS.outcome,
    agent: SQLITE_GROUP_KEYS.agent,
    day: { key: PG_DAY, label: PG_DAY },
  },
  groupTotals: `count(*) AS runs,
  CAST(round(coalesce(sum(run.call_duration_seconds), 0)::numeric) AS INTEGER) AS duration_seconds,
  coalesce(sum(run.service_token_usage), 0) AS tokens,
  coalesce(sum(${PG_EMBEDDING_TOKENS}), 0) AS embedding_tokens,
  sum(${PG_CHARGE}) AS charge_usd`,
}

const SQLITE_USAGE: UsageReportSql = {
  runColumns: sqliteRunColumns,
  groupKeys: SQLITE_GROUP_KEYS,
  groupTotals: SQLITE_GROUP_TOTALS,
}

export const usageReportSql = (backend: DatabaseBackend): UsageReportSql =>
  backend === 'postgresql' ? POSTGRES_USAGE : SQLITE_USAGE
