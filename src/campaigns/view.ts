import { inArray } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { nextWindowStart } from './schedule-window'
import { campaignLogs, campaigns, type StoredTrafficSplit } from '../db/schema/campaigns'
import { organizations } from '../db/schema/core'
import { telephonyConfigurations } from '../db/schema/telephony'
import { setupFactsByConfiguration } from '../telephony/config/queries'
import { PROVIDERS } from '../telephony/config/providers'
import { workflowDefinitions, workflows } from '../db/schema'
import type { CampaignResponse } from './schemas'

export type CampaignRow = typeof campaigns.$inferSelect
export type CampaignView = Static<typeof CampaignResponse>

const byId = <T extends { id: number }>(rows: T[]) => new Map(rows.map((row) => [row.id, row]))
const unique = (values: (number | null | undefined)[]) => [
  ...new Set(values.filter((value): value is number => value != null)),
]

/** Names and versions every campaign view needs, fetched once for a whole page of campaigns. */
function lookups(ctx: AppContext, rows: CampaignRow[]) {
  const splitVariants = rows.flatMap((row) => row.trafficSplit?.variants ?? [])
  const agentIds = unique([
    ...rows.map((row) => row.workflowId),
    ...splitVariants.map((variant) => variant.workflow_id),
  ])
  const configurationIds = unique(rows.map((row) => row.telephonyConfigurationId))
  const agentNames = byId(
    agentIds.length
      ? ctx.db
          .select({ id: workflows.id, name: workflows.name })
          .from(workflows)
          .where(inArray(workflows.id, agentIds))
          .all()
      : [],
  )
  const definitions = byId(
    agentIds.length
      ? ctx.db
          .select({
            id: workflowDefinitions.id,
            workflowId: workflowDefinitions.workflowId,
            versionNumber: workflowDefinitions.versionNumber,
            status: workflowDefinitions.status,
          })
          .from(workflowDefinitions)
          .where(inArray(workflowDefinitions.workflowId, agentIds))
          .all()
      : [],
  )
  const latestPublishedVersion = new Map<number, number>()
  for (const definition of definitions.values()) {
    if (definition.status === 'published') latestPublishedVersion.set(definition.workflowId, definition.versionNumber)
  }
  const configurationRows = byId(
    configurationIds.length
      ? ctx.db
          .select({
            id: telephonyConfigurations.id,
            name: telephonyConfigurations.name,
            inactive: telephonyConfigurations.inactive,
            provider: telephonyConfigurations.provider,
          })
          .from(telephonyConfigurations)
          .where(inArray(telephonyConfigurations.id, configurationIds))
          .all()
      : [],
  )
  const campaignIds = rows.map((row) => row.id)
  const logsByCampaign = new Map<number, CampaignView['logs']>()
  for (const entry of campaignIds.length
    ? ctx.db
        .select()
        .from(campaignLogs)
        .where(inArray(campaignLogs.campaignId, campaignIds))
        .orderBy(campaignLogs.id)
        .all()
    : []) {
    const list = logsByCampaign.get(entry.campaignId) ?? []
    list.push({
      ts: entry.ts,
      level: entry.level,
      event: entry.event,
      message: entry.message,
      details: entry.details ?? {},
    })
    logsByCampaign.set(entry.campaignId, list)
  }
  const organizationIds = unique(rows.map((row) => row.organizationId))
  const callLimits = byId(
    organizationIds.length
      ? ctx.db
          .select({ id: organizations.id, limit: organizations.concurrentCallLimit })
          .from(organizations)
          .where(inArray(organizations.id, organizationIds))
          .all()
      : [],
  )
  const setupFacts = setupFactsByConfiguration(ctx, configurationIds)
  return {
    agentNames,
    definitions,
    latestPublishedVersion,
    configurationRows,
    setupFacts,
    logsByCampaign,
    callLimits,
  }
}

type Lookups = ReturnType<typeof lookups>

function trafficSplitView(split: StoredTrafficSplit | null, found: Lookups): CampaignView['traffic_split'] {
  if (!split) return null
  return {
    revision: split.revision,
    variants: split.variants.map((variant) => ({
      id: variant.id,
      workflow_id: variant.workflow_id,
      weight: variant.weight,
      workflow_name: found.agentNames.get(variant.workflow_id)?.name ?? 'Unknown',
      workflow_definition_id: variant.workflow_definition_id,
      version_number:
        variant.workflow_definition_id === null
          ? (found.latestPublishedVersion.get(variant.workflow_id) ?? null)
          : (found.definitions.get(variant.workflow_definition_id)?.versionNumber ?? null),
    })),
  }
}

/** Human-readable problems with how a campaign is set up, recomputed on every read. */
function warnings(ctx: AppContext, row: CampaignRow, found: Lookups): string[] {
  const problems: string[] = []
  const callLimit = found.callLimits.get(row.organizationId)?.limit
  if (row.maxConcurrency !== null && callLimit !== undefined && row.maxConcurrency > callLimit) {
    problems.push(
      `max_concurrency (${row.maxConcurrency}) is above the organization's concurrent call limit (${callLimit}): at most ${callLimit} calls run at once`,
    )
  }
  const configuration =
    row.telephonyConfigurationId === null ? undefined : found.configurationRows.get(row.telephonyConfigurationId)
  const callerIds =
    row.telephonyConfigurationId === null
      ? undefined
      : found.setupFacts.get(row.telephonyConfigurationId)?.activeNumberCount
  if (
    configuration &&
    PROVIDERS[configuration.provider].requiresCallerId &&
    callerIds !== undefined &&
    row.maxConcurrency !== null &&
    row.maxConcurrency > callerIds
  ) {
    problems.push(
      `max_concurrency (${row.maxConcurrency}) is above the ${callerIds} caller id(s) of telephony configuration '${configuration.name}': calls will share caller ids`,
    )
  }
  if (configuration?.inactive)
    problems.push(`Telephony configuration '${configuration.name}' is inactive: reactivate it before dialing`)
  if (row.scheduleConfig?.enabled && nextWindowStart(row.scheduleConfig, new Date(ctx.clock.now())) === null) {
    problems.push('The schedule opens no calling window in the next 8 days: nothing will be dialled')
  }
  return problems
}

/** Campaign responses for rows of one organization, with every related name fetched in a handful of queries. */
export function campaignViews(ctx: AppContext, rows: CampaignRow[]): CampaignView[] {
  const found = lookups(ctx, rows)
  return rows.map((row) => {
    const agentId = row.workflowId ?? row.trafficSplit?.variants[0]?.workflow_id ?? 0
    return {
      id: row.id,
      name: row.name,
      workflow_id: agentId,
      workflow_name: found.agentNames.get(agentId)?.name ?? 'Unknown',
      state: row.state,
      source_type: row.sourceType,
      source_id: row.sourceId,
      total_rows: row.totalRows,
      processed_rows: row.processedRows,
      failed_rows: row.failedRows,
      created_at: row.createdAt,
      started_at: row.startedAt,
      completed_at: row.completedAt,
      retry_config: row.retryConfig,
      traffic_split: trafficSplitView(row.trafficSplit, found),
      max_concurrency: row.maxConcurrency,
      rate_limit_per_second: row.rateLimitPerSecond,
      schedule_config: row.scheduleConfig && { ...row.scheduleConfig, slots: [...row.scheduleConfig.slots] },
      circuit_breaker: row.circuitBreaker,
      executed_count: row.executedCount,
      total_queued_count: row.totalQueuedCount,
      parent_campaign_id: row.parentCampaignId,
      redialed_campaign_id: row.redialedCampaignId,
      telephony_configuration_id: row.telephonyConfigurationId,
      telephony_configuration_name:
        row.telephonyConfigurationId === null
          ? null
          : (found.configurationRows.get(row.telephonyConfigurationId)?.name ?? null),
      model_overrides: row.modelOverrides,
      logs: found.logsByCampaign.get(row.id) ?? [],
      warnings: warnings(ctx, row, found),
    }
  })
}
