import { index, integer, sqliteTable, text, unique } from 'drizzle-orm/sqlite-core'

export type CampaignState = 'importing' | 'draft' | 'running' | 'paused' | 'stopped' | 'completed' | 'failed'
export type ContactState = 'queued' | 'dialing' | 'done' | 'cancelled'
/** The campaign settings stored as JSON (src/campaigns/ validates and applies them). */
export type CircuitBreakerConfig = {
  enabled: boolean
  /** Fraction 0..1; the breaker trips at or above it. */
  failure_threshold: number
  window_seconds: number
  min_calls_in_window: number
}

export type RetryConfig = {
  enabled: boolean
  /** Retries after the first attempt: 2 means up to 3 attempts. */
  max_retries: number
  retry_delay_seconds: number
  retry_on_busy: boolean
  retry_on_no_answer: boolean
  retry_on_voicemail: boolean
}

export type ScheduleSlot = { day_of_week: number; start_time: string; end_time: string }

export type ScheduleConfig = { enabled: boolean; timezone: string; slots: readonly ScheduleSlot[] }

export type TrafficVariant = {
  id: string
  workflow_id: number
  workflow_definition_id: number | null
  weight: number
}

export type StoredTrafficSplit = {
  revision: number
  variants: TrafficVariant[]
  /** Variants no longer in the split, kept so their ids (and stats) survive. */
  removed: TrafficVariant[]
}
export type GreetingOverride = { type: 'text'; text: string } | { type: 'audio'; recording_id: string }
export type CampaignLogLevel = 'info' | 'warning' | 'error'

export const uploads = sqliteTable(
  'uploads',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    fileKey: text('file_key').notNull().unique(),
    fileName: text('file_name').notNull(),
    contentType: text('content_type').notNull(),
    declaredSize: integer('declared_size').notNull(),
    size: integer('size'),
    createdAt: text('created_at').notNull(),
    completedAt: text('completed_at'),
    receivingSince: text('receiving_since'),
    /** Added by migrations/0023_unused_uploads.sql: when a campaign, a document or a recording took it. */
    usedAt: text('used_at'),
  },
  (table) => [
    index('uploads_org').on(table.organizationId, table.id),
    index('uploads_unused').on(table.usedAt, table.createdAt),
  ],
)

export const campaigns = sqliteTable(
  'campaigns',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    name: text('name').notNull(),
    workflowId: integer('workflow_id'),
    state: text('state').$type<CampaignState>().notNull(),
    sourceType: text('source_type').notNull(),
    sourceId: text('source_id').notNull(),
    totalRows: integer('total_rows'),
    processedRows: integer('processed_rows').notNull().default(0),
    failedRows: integer('failed_rows').notNull().default(0),
    executedCount: integer('executed_count').notNull().default(0),
    totalQueuedCount: integer('total_queued_count').notNull().default(0),
    retryConfig: text('retry_config', { mode: 'json' }).$type<RetryConfig>().notNull(),
    trafficSplit: text('traffic_split', { mode: 'json' }).$type<StoredTrafficSplit | null>(),
    allocationSeed: text('allocation_seed').notNull(),
    maxConcurrency: integer('max_concurrency'),
    rateLimitPerSecond: integer('rate_limit_per_second').notNull().default(1),
    scheduleConfig: text('schedule_config', { mode: 'json' }).$type<ScheduleConfig | null>(),
    circuitBreaker: text('circuit_breaker', { mode: 'json' }).$type<CircuitBreakerConfig>().notNull(),
    breakerWindowResetAt: integer('breaker_window_reset_at').notNull().default(0),
    /** Added by migrations/0020_campaign_pacing.sql: the dial rhythm every instance shares (campaigns/pacer.ts). */
    dialRhythmRate: integer('dial_rhythm_rate'),
    dialRhythmStartedAt: integer('dial_rhythm_started_at'),
    dialRhythmDials: integer('dial_rhythm_dials').notNull().default(0),
    lastDialAt: integer('last_dial_at'),
    outsideScheduleLoggedFor: integer('outside_schedule_logged_for'),
    parentCampaignId: integer('parent_campaign_id'),
    redialedCampaignId: integer('redialed_campaign_id'),
    telephonyConfigurationId: integer('telephony_configuration_id'),
    /** Added by migrations/0007_models.sql: the spec's model_overrides for every call of the campaign. */
    modelOverrides: text('model_overrides', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    /** Added by migrations/0022_campaign_imports.sql: the instance importing the contacts, while importing. */
    importInstanceId: text('import_instance_id'),
    createdAt: text('created_at').notNull(),
    startedAt: text('started_at'),
    completedAt: text('completed_at'),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    index('campaigns_org').on(table.organizationId, table.id),
    index('campaigns_state').on(table.state),
    index('campaigns_telephony').on(table.telephonyConfigurationId),
  ],
)

export const campaignContacts = sqliteTable(
  'campaign_contacts',
  {
    id: integer('id').primaryKey(),
    campaignId: integer('campaign_id').notNull(),
    organizationId: integer('organization_id').notNull(),
    rowNumber: integer('row_number').notNull(),
    phoneNumber: text('phone_number').notNull(),
    context: text('context', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    greetingOverride: text('greeting_override', { mode: 'json' }).$type<GreetingOverride | null>(),
    state: text('state').$type<ContactState>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastOutcome: text('last_outcome'),
    lastRunId: integer('last_run_id'),
    variantId: text('variant_id'),
  },
  (table) => [
    unique().on(table.campaignId, table.phoneNumber),
    index('campaign_contacts_due').on(table.campaignId, table.state, table.nextAttemptAt, table.id),
  ],
)

export const campaignLogs = sqliteTable(
  'campaign_logs',
  {
    id: integer('id').primaryKey(),
    campaignId: integer('campaign_id').notNull(),
    ts: text('ts').notNull(),
    level: text('level').$type<CampaignLogLevel>().notNull(),
    event: text('event').notNull(),
    message: text('message').notNull(),
    details: text('details', { mode: 'json' }).$type<Record<string, unknown> | null>(),
  },
  (table) => [index('campaign_logs_campaign').on(table.campaignId, table.id)],
)
