import { Type as t } from '@sinclair/typebox'
import { ModelOverrides } from '../models/schemas'
import { MAX_TOKEN_LENGTH, MAX_URL_LENGTH } from '../lib/limits'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

const DateTime = t.String({ format: 'date-time' })

export const RetryConfigRequest = t.Object({
  enabled: t.Optional(t.Boolean({ default: true })),
  max_retries: t.Optional(
    t.Integer({ minimum: 0, maximum: 10, default: 2, description: 'Retries after the first attempt' }),
  ),
  retry_delay_seconds: t.Optional(t.Integer({ minimum: 30, maximum: 3600, default: 120 })),
  retry_on_busy: t.Optional(t.Boolean({ default: true })),
  retry_on_no_answer: t.Optional(t.Boolean({ default: true })),
  retry_on_voicemail: t.Optional(t.Boolean({ default: true })),
})

export const RetryConfigResponse = t.Object({
  enabled: t.Boolean(),
  max_retries: t.Integer(),
  retry_delay_seconds: t.Integer(),
  retry_on_busy: t.Boolean(),
  retry_on_no_answer: t.Boolean(),
  retry_on_voicemail: t.Boolean(),
})

const TimeSlot = t.Object({
  day_of_week: t.Integer({ minimum: 0, maximum: 6, description: '0 = Monday … 6 = Sunday' }),
  start_time: t.String({
    maxLength: MAX_TOKEN_LENGTH,
    pattern: '^\\d{2}:\\d{2}$',
    description: 'HH:MM, 24-hour, inclusive',
  }),
  end_time: t.String({
    maxLength: MAX_TOKEN_LENGTH,
    pattern: '^\\d{2}:\\d{2}$',
    description: 'HH:MM, 24-hour, exclusive (24:00 allowed)',
  }),
})

export const ScheduleConfigRequest = t.Object({
  enabled: t.Optional(t.Boolean({ default: true })),
  timezone: t.Optional(
    t.String({ default: 'UTC', maxLength: MAX_TOKEN_LENGTH, description: 'IANA time zone of every slot' }),
  ),
  slots: t.Array(TimeSlot, { minItems: 1, maxItems: 50 }),
})

export const ScheduleConfigResponse = t.Object({ enabled: t.Boolean(), timezone: t.String(), slots: t.Array(TimeSlot) })

export const CircuitBreakerRequest = t.Object({
  enabled: t.Optional(t.Boolean({ default: true })),
  failure_threshold: t.Optional(t.Number({ minimum: 0, maximum: 1, default: 0.5 })),
  window_seconds: t.Optional(t.Integer({ minimum: 30, maximum: 600, default: 120 })),
  min_calls_in_window: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 5 })),
})

export const CircuitBreakerResponse = t.Object({
  enabled: t.Boolean(),
  failure_threshold: t.Number(),
  window_seconds: t.Integer(),
  min_calls_in_window: t.Integer(),
})

const TrafficVariantRequest = t.Object({
  workflow_id: t.Integer({ exclusiveMinimum: 0 }),
  weight: t.Integer({ minimum: 1, maximum: 100, description: 'Whole percentage; all weights total 100' }),
  workflow_definition_id: t.Optional(Nullable(t.Integer({ exclusiveMinimum: 0 }))),
  id: t.Optional(
    t.String({
      maxLength: MAX_TOKEN_LENGTH,
      description: 'Ignored: the server keeps one stable id per agent/version pair',
    }),
  ),
})

export const TrafficSplitRequest = t.Object({
  variants: t.Array(TrafficVariantRequest, { minItems: 1, maxItems: 5 }),
})

const TrafficVariantResponse = t.Object({
  id: t.String(),
  workflow_id: t.Integer(),
  weight: t.Integer(),
  workflow_name: t.String(),
  workflow_definition_id: Nullable(t.Integer()),
  version_number: Nullable(t.Integer({ description: 'Pinned version, or the latest published one when not pinned' })),
})

export const TrafficSplitResponse = t.Object({ revision: t.Integer(), variants: t.Array(TrafficVariantResponse) })

export const CreateCampaignBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 255 }),
  source_type: t.String({ maxLength: MAX_TOKEN_LENGTH, pattern: '^csv$' }),
  source_id: t.String({
    minLength: 1,
    maxLength: MAX_URL_LENGTH,
    description: 'file_key returned by POST /api/v1/s3/presigned-upload-url',
  }),
  workflow_id: t.Optional(Nullable(t.Integer({ exclusiveMinimum: 0 }))),
  traffic_split: t.Optional(Nullable(TrafficSplitRequest)),
  telephony_configuration_id: t.Optional(Nullable(t.Integer())),
  retry_config: t.Optional(Nullable(RetryConfigRequest)),
  max_concurrency: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  rate_limit_per_second: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  schedule_config: t.Optional(Nullable(ScheduleConfigRequest)),
  circuit_breaker: t.Optional(Nullable(CircuitBreakerRequest)),
  model_overrides: t.Optional(Nullable(ModelOverrides)),
})

export const UpdateCampaignBody = t.Object({
  name: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 255 }))),
  retry_config: t.Optional(Nullable(RetryConfigRequest)),
  max_concurrency: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  rate_limit_per_second: t.Optional(Nullable(t.Integer({ minimum: 1 }))),
  schedule_config: t.Optional(Nullable(ScheduleConfigRequest)),
  circuit_breaker: t.Optional(Nullable(CircuitBreakerRequest)),
  traffic_split: t.Optional(Nullable(TrafficSplitRequest)),
})

export const RedialBody = t.Object({
  name: t.Optional(Nullable(t.String({ minLength: 1, maxLength: 255 }))),
  retry_on_voicemail: t.Optional(t.Boolean({ default: true })),
  retry_on_no_answer: t.Optional(t.Boolean({ default: true })),
  retry_on_busy: t.Optional(t.Boolean({ default: true })),
  retry_config: t.Optional(Nullable(RetryConfigRequest)),
})

const CampaignLogEntry = t.Object({
  ts: t.String(),
  level: t.String({ description: 'info, warning or error' }),
  event: t.String(),
  message: t.String(),
  details: t.Record(t.String(), t.Unknown()),
})

export const CampaignResponse = t.Object({
  id: t.Integer(),
  name: t.String(),
  workflow_id: t.Integer(),
  workflow_name: t.String(),
  state: t.String({ description: 'draft, running, paused, stopped, completed or failed' }),
  source_type: t.String(),
  source_id: t.String(),
  total_rows: Nullable(t.Integer()),
  processed_rows: t.Integer({ description: 'Dial attempts placed (retries included)' }),
  failed_rows: t.Integer({ description: 'Contacts closed without a completed call' }),
  created_at: DateTime,
  started_at: Nullable(DateTime),
  completed_at: Nullable(DateTime),
  retry_config: RetryConfigResponse,
  traffic_split: Nullable(TrafficSplitResponse),
  max_concurrency: Nullable(t.Integer()),
  rate_limit_per_second: t.Integer(),
  schedule_config: Nullable(ScheduleConfigResponse),
  circuit_breaker: CircuitBreakerResponse,
  executed_count: t.Integer({ description: 'Attempts whose outcome is known' }),
  total_queued_count: t.Integer({ description: 'Attempts queued so far: one per contact plus every retry scheduled' }),
  parent_campaign_id: Nullable(t.Integer()),
  redialed_campaign_id: Nullable(t.Integer()),
  telephony_configuration_id: Nullable(t.Integer()),
  telephony_configuration_name: Nullable(t.String()),
  model_overrides: Nullable(
    t.Record(t.String(), t.Unknown(), { description: 'Model choices applied to every call of the campaign.' }),
  ),
  logs: t.Array(CampaignLogEntry),
  warnings: t.Array(t.String()),
})

export const CampaignListResponse = t.Object({ campaigns: t.Array(CampaignResponse) })

export const CampaignProgressResponse = t.Object({
  campaign_id: t.Integer(),
  state: t.String(),
  total_rows: t.Integer(),
  processed_rows: t.Integer(),
  failed_calls: t.Integer(),
  progress_percentage: t.Number({ description: 'Contacts done, as a percentage of total_rows' }),
  contacts: t.Object(
    {
      waiting: t.Integer({ description: 'Never dialled yet' }),
      dialing: t.Integer({ description: 'A call in progress' }),
      retries_due: t.Integer({ description: 'Dialled without success, queued to be dialled again' }),
      done: t.Integer({ description: 'Closed: reached, or out of retries' }),
      cancelled: t.Integer({ description: 'Not dialled again because the campaign was stopped' }),
    },
    { description: "The campaign's contacts by where they are; they add up to total_rows" },
  ),
  source_sync: t.Record(t.String(), t.Unknown()),
  rate_limit: t.Integer(),
  started_at: Nullable(DateTime),
  completed_at: Nullable(DateTime),
})

const VariantStats = t.Object({
  id: t.String(),
  workflow_id: t.Integer(),
  workflow_name: t.String(),
  workflow_definition_id: Nullable(t.Integer()),
  weight: t.Integer({ description: 'Current weight; 0 for a removed variant' }),
  removed: t.Boolean(),
  contacts_assigned: t.Integer(),
  calls_placed: t.Integer(),
  outcomes: t.Record(t.String(), t.Integer(), { description: 'Finished calls by disposition' }),
  versions_used: t.Array(
    t.Object({ workflow_definition_id: t.Integer(), version_number: Nullable(t.Integer()), calls: t.Integer() }),
  ),
})

export const TrafficStatsResponse = t.Object({
  campaign_id: t.Integer(),
  revision: Nullable(t.Integer()),
  variants: t.Array(VariantStats),
})

export const SourceDownloadResponse = t.Object({ download_url: t.String(), expires_in: t.Integer() })
