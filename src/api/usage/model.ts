import { t } from 'elysia'
import { ArtifactLinksSchema } from '../../runs/artifacts'

const nullableString = t.Union([t.String(), t.Null()])

const FILTERS_DESCRIPTION = 'JSON array of `{attribute, type, value}`, all ANDed: runId, workflowId, campaignId (number, '
  + '`{value}`); callerNumber, calledNumber (text, `{value}`: substring); dispositionCode (multiSelect, `{codes}`); '
  + 'duration (numberRange, `{min, max}` seconds, inclusive); callDirection (radio, `{status}`: inbound|outbound); '
  + 'callChannel (radio, `{status}`: telephony|web|chat). Unknown attributes and mismatched types are ignored.'

export const UsageQuery = t.Object({
  start_date: t.Optional(t.String({ description: 'ISO 8601 date or date-time (UTC when no zone); inclusive lower bound on created_at' })),
  end_date: t.Optional(t.String({ description: 'ISO 8601 date-time (UTC when no zone), inclusive upper bound on created_at; a date alone includes that whole day' })),
  page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  filters: t.Optional(t.String({ description: FILTERS_DESCRIPTION })),
  sort_by: t.Optional(t.String({ description: '`duration`; anything else sorts by created_at' })),
  sort_order: t.Optional(t.String({ pattern: '^(asc|desc)$', default: 'desc' })),
})

export const UsageRun = t.Object({
  id: t.Integer(),
  workflow_id: t.Integer(),
  workflow_name: t.String(),
  name: t.String(),
  created_at: t.String({ format: 'date-time' }),
  service_token_usage: t.Integer(),
  call_duration_seconds: t.Integer({ description: 'Rounded to whole seconds' }),
  ...ArtifactLinksSchema.properties,
  phone_number: t.Union([t.String(), t.Null()], { description: 'Deprecated: the caller for inbound calls, the number dialled otherwise' }),
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
  total_count: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  total_pages: t.Integer(),
})
