import { Type as t } from '@sinclair/typebox'
import { ArtifactLinksSchema } from './artifacts'

const nullableString = t.Union([t.String(), t.Null()])

export const UsageRun = t.Object({
  id: t.Integer(),
  workflow_id: t.Integer(),
  workflow_name: t.String(),
  name: t.String(),
  created_at: t.String({ format: 'date-time' }),
  service_token_usage: t.Integer(),
  embedding_tokens: t.Integer({
    description: "Tokens the embeddings server counted for the run's knowledge-base queries, all models together",
  }),
  call_duration_seconds: t.Integer({ description: 'Rounded to whole seconds' }),
  ...ArtifactLinksSchema.properties,
  phone_number: t.Union([t.String(), t.Null()], {
    description: 'Deprecated: the caller for inbound calls, the number dialled otherwise',
  }),
  caller_number: nullableString,
  called_number: nullableString,
  call_type: t.Union([t.Literal('inbound'), t.Literal('outbound')]),
  mode: t.String(),
  disposition: nullableString,
  initial_context: t.Record(t.String(), t.Unknown()),
  gathered_context: t.Record(t.String(), t.Unknown()),
  charge_usd: t.Union([t.Number(), t.Null()]),
})

export const UsageResponse = t.Object({
  runs: t.Array(UsageRun),
  total_service_tokens: t.Integer({ description: 'Sum over the runs of this page' }),
  total_duration_seconds: t.Integer({ description: 'Sum over the runs of this page' }),
  total_embedding_tokens: t.Integer({ description: 'Sum over the runs of this page' }),
  total_count: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  total_pages: t.Integer(),
})

export const UsageGroup = t.Object({
  key: t.Union([t.String(), t.Null()], {
    description: 'The disposition (null: none recorded), the agent id, or the day (YYYY-MM-DD in the asked offset)',
  }),
  label: t.Union([t.String(), t.Null()], { description: "The agent's name for agent groups; else the key" }),
  runs: t.Integer(),
  duration_seconds: t.Integer(),
  tokens: t.Integer(),
  embedding_tokens: t.Integer({ description: "Embedding tokens of the group's runs (knowledge-base queries)" }),
  charge_usd: t.Union([t.Number(), t.Null()], { description: 'Null when no run of the group was costed in USD' }),
})

export const UsageSummaryResponse = t.Object({
  group_by: t.Union([t.Literal('outcome'), t.Literal('agent'), t.Literal('day')]),
  groups: t.Array(UsageGroup, { description: 'The largest first, at most 1000' }),
  total_runs: t.Integer({ description: 'Runs in all the groups answered' }),
  knowledge_base_embedding_tokens: t.Integer({
    description:
      "Embedding tokens of the organization's knowledge-base documents processed within the dates (ingestion; " +
      "the queries are the runs')",
  }),
})
