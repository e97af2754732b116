import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text, unique, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type JsonObject = Record<string, unknown>

export type WorkflowStatus = 'active' | 'archived'
export type VersionStatus = 'draft' | 'published' | 'archived'
export type CallType = 'inbound' | 'outbound'
export type RunState = 'initialized' | 'running' | 'completed'

export const workflows = sqliteTable(
  'workflows',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    workflowUuid: text('workflow_uuid').notNull().unique(),
    name: text('name').notNull(),
    status: text('status').$type<WorkflowStatus>().notNull().default('active'),
    callDispositionCodes: text('call_disposition_codes', { mode: 'json' }).$type<string[]>().notNull(),
    /** Maintained by triggers on workflow_runs; never written by code. */
    totalRuns: integer('total_runs').notNull().default(0),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    unique().on(table.id, table.organizationId),
    index('workflows_org').on(table.organizationId, table.status),
  ],
)

export const workflowDefinitions = sqliteTable(
  'workflow_definitions',
  {
    id: integer('id').primaryKey(),
    workflowId: integer('workflow_id').notNull(),
    organizationId: integer('organization_id').notNull(),
    versionNumber: integer('version_number').notNull(),
    status: text('status').$type<VersionStatus>().notNull(),
    workflowJson: text('workflow_json', { mode: 'json' }).$type<JsonObject>().notNull(),
    workflowConfigurations: text('workflow_configurations', { mode: 'json' }).$type<JsonObject>().notNull(),
    templateContextVariables: text('template_context_variables', { mode: 'json' })
      .$type<Record<string, string>>()
      .notNull(),
    createdAt: text('created_at').notNull(),
    publishedAt: text('published_at'),
  },
  (table) => [
    unique().on(table.workflowId, table.versionNumber),
    unique().on(table.id, table.workflowId),
    uniqueIndex('workflow_definitions_draft').on(table.workflowId).where(sql`status = 'draft'`),
    uniqueIndex('workflow_definitions_published').on(table.workflowId).where(sql`status = 'published'`),
  ],
)

export const workflowTriggers = sqliteTable(
  'workflow_triggers',
  {
    triggerPath: text('trigger_path').primaryKey(),
    workflowId: integer('workflow_id').notNull(),
    organizationId: integer('organization_id').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (table) => [index('workflow_triggers_workflow').on(table.workflowId)],
)

/** Generated columns: their expressions live in migrations/0002_agents_runs.sql; declared here so inserts skip them. */
const generated = sql`generated`

export const workflowRuns = sqliteTable(
  'workflow_runs',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    workflowId: integer('workflow_id').notNull(),
    definitionId: integer('definition_id').notNull(),
    name: text('name').notNull(),
    mode: text('mode').notNull(),
    callType: text('call_type').$type<CallType>().notNull(),
    state: text('state').$type<RunState>().notNull().default('initialized'),
    campaignId: integer('campaign_id'),
    campaignContactId: integer('campaign_contact_id'),
    telephonyConfigurationId: integer('telephony_configuration_id'),
    initialContext: text('initial_context', { mode: 'json' }).$type<JsonObject>().notNull(),
    gatheredContext: text('gathered_context', { mode: 'json' }).$type<JsonObject>().notNull(),
    usageInfo: text('usage_info', { mode: 'json' }).$type<JsonObject>(),
    costInfo: text('cost_info', { mode: 'json' }).$type<JsonObject>(),
    logs: text('logs', { mode: 'json' }).$type<JsonObject>().notNull(),
    annotations: text('annotations', { mode: 'json' }).$type<JsonObject>().notNull(),
    recordingKey: text('recording_key'),
    userRecordingKey: text('user_recording_key'),
    botRecordingKey: text('bot_recording_key'),
    transcriptKey: text('transcript_key'),
    publicAccessToken: text('public_access_token').unique(),
    publicAccessExpiresAt: text('public_access_expires_at'),
    createdAt: text('created_at').notNull(),
    startedAt: text('started_at'),
    completedAt: text('completed_at'),
    /** Added by migrations/0005_calls.sql. */
    callId: text('call_id'),
    trafficVariantId: text('traffic_variant_id'),
    /** Added by migrations/0007_models.sql: the spec's model_overrides sent with the run's start. */
    modelOverrides: text('model_overrides', { mode: 'json' }).$type<JsonObject | null>(),
    /** Added by migrations/0010_carriers.sql. */
    providerCallId: text('provider_call_id'),
    /** Added by migrations/0019_instances.sql: the instance handling the run (its call, its conversation). */
    instanceId: text('instance_id'),
    callerNumber: text('caller_number').generatedAlwaysAs(generated),
    calledNumber: text('called_number').generatedAlwaysAs(generated),
    disposition: text('disposition').generatedAlwaysAs(generated),
    callDurationSeconds: real('call_duration_seconds').generatedAlwaysAs(generated),
    serviceTokenUsage: integer('service_token_usage').generatedAlwaysAs(generated),
    channel: text('channel').generatedAlwaysAs(generated),
  },
  (table) => [
    index('workflow_runs_workflow').on(table.workflowId, table.createdAt),
    index('workflow_runs_campaign').on(table.campaignId).where(sql`campaign_id IS NOT NULL`),
    index('workflow_runs_usage').on(table.organizationId, table.createdAt).where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_duration')
      .on(table.organizationId, table.callDurationSeconds)
      .where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_workflow')
      .on(table.organizationId, table.workflowId, table.createdAt)
      .where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_campaign')
      .on(table.organizationId, table.campaignId, table.createdAt)
      .where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_disposition')
      .on(table.organizationId, table.disposition, table.createdAt)
      .where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_call_type')
      .on(table.organizationId, table.callType, table.createdAt)
      .where(sql`usage_info IS NOT NULL`),
    index('workflow_runs_usage_channel')
      .on(table.organizationId, table.channel, table.createdAt)
      .where(sql`usage_info IS NOT NULL`),
    uniqueIndex('workflow_runs_call').on(table.callId).where(sql`call_id IS NOT NULL`),
    index('workflow_runs_open_instance').on(table.instanceId).where(sql`state <> 'completed'`),
    index('workflow_runs_open_calls').on(table.organizationId).where(sql`call_id IS NOT NULL AND state <> 'completed'`),
    uniqueIndex('workflow_runs_provider_call')
      .on(table.mode, table.providerCallId)
      .where(sql`provider_call_id IS NOT NULL`),
    index('workflow_runs_campaign_completed')
      .on(table.campaignId, table.completedAt, table.disposition)
      .where(sql`campaign_id IS NOT NULL`),
  ],
)

export type WorkflowRow = typeof workflows.$inferSelect
export type WorkflowDefinitionRow = typeof workflowDefinitions.$inferSelect
export type WorkflowRunRow = typeof workflowRuns.$inferSelect

/** Runs with usage per organization, direction and channel, kept by triggers (see migrations/0002_agents_runs.sql). */
export const usageRunCounts = sqliteTable(
  'usage_run_counts',
  {
    organizationId: integer('organization_id').notNull(),
    callType: text('call_type').notNull(),
    channel: text('channel').notNull(),
    runs: integer('runs').notNull(),
  },
  (table) => [primaryKey({ columns: [table.organizationId, table.callType, table.channel] })],
)
