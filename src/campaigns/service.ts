import { and, desc, eq, ne } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { resolveCircuitBreakerConfig } from './circuit-breaker'
import { ContactsError, ContactsLimitError, ingestContacts } from './contacts'
import { appendCampaignLog, discardImportingCampaigns, transitionCampaign, type CampaignAction } from './lifecycle'
import { RETRY_CONFIG_REQUEST_DEFAULTS, RETRY_CONFIG_WHEN_OMITTED, type RetryConfig } from './retry'
import { isValidTimeZone, validateSlots, type ScheduleConfig } from './schedule-window'
import { isSameSplit, reconcileVariantIds, validateSplit, type TrafficVariantInput } from './traffic-split'
import { campaigns, type StoredTrafficSplit } from '../db/schema/campaigns'
import { valueError, type Loc, type ValidationItem } from '../lib/validation'
import { invalid, notFound, refused } from '../lib/errors'
import type { Problem } from '../lib/problem'
import { isoNow } from '../lib/clock'
import { listRuns, type RunListOptions } from '../runs/list'
import { findRunTarget, RUN_TARGET_PROBLEMS, type RunTarget } from '../runs/target'
import { resolveOutbound } from '../telephony/config/configurations'
import { modelOverridesProblems } from '../models/resolve'
import { runModelsProblem } from '../models/readiness'
import { ariDestinationRules } from '../telephony/ari/metadata'
import { findUpload } from './sources'
import { markUploadUsed } from '../storage/uploads'
import { applyTransition } from './state-machine'
import type { CreateCampaignBody, RedialBody, UpdateCampaignBody } from './schemas'
import { campaignViews, type CampaignRow, type CampaignView } from './view'
import { transaction } from '../db/transaction'
import { organizationRecordingIds } from '../tools/recordings'
import { campaignProgressCounts, copyContactsForRedial, variantCounts } from './queries'

type CreateRequest = Static<typeof CreateCampaignBody>
type UpdateRequest = Static<typeof UpdateCampaignBody>
type RedialRequest = Static<typeof RedialBody>
type ScheduleRequest = NonNullable<CreateRequest['schedule_config']>
type SplitRequest = NonNullable<CreateRequest['traffic_split']>

const TELEPHONY_CONFIGURATION_NOT_FOUND = 'telephony_configuration_not_found'
const FINISHED_STATES = new Set(['stopped', 'completed', 'failed'])

/** Rules of a campaign request that its schema cannot express, as 422 items. */
function requestProblems(body: Pick<CreateRequest, 'schedule_config' | 'traffic_split'>): ValidationItem[] {
  const problems: ValidationItem[] = []
  const itemsOf = (field: string, value: Record<string, unknown>, found: Problem[]) => {
    for (const { path, message } of found) {
      const input = path.reduce<unknown>((at, key) => (at as Record<string | number, unknown>)?.[key], value)
      problems.push(valueError(['body', field, ...path], message, input))
    }
  }
  if (body.schedule_config) {
    const timezone = body.schedule_config.timezone ?? 'UTC'
    if (!isValidTimeZone(timezone))
      problems.push(valueError(['body', 'schedule_config', 'timezone'], `Invalid timezone: ${timezone}`, timezone))
    itemsOf('schedule_config', body.schedule_config, validateSlots(body.schedule_config.slots))
  }
  if (body.traffic_split) itemsOf('traffic_split', body.traffic_split, validateSplit(body.traffic_split.variants))
  return problems
}

const normalizeSchedule = (schedule: ScheduleRequest): ScheduleConfig => ({
  enabled: schedule.enabled ?? true,
  timezone: schedule.timezone ?? 'UTC',
  slots: schedule.slots,
})

const normalizeRetry = (retry: NonNullable<CreateRequest['retry_config']>): RetryConfig => ({
  ...RETRY_CONFIG_REQUEST_DEFAULTS,
  ...retry,
})

/** The agent version each variant (or the single agent) runs; 404/400/422 when one cannot run. */
function resolveTargets(
  ctx: AppContext,
  organizationId: number,
  selections: { agentId: number; definitionId: number | null; loc: Loc }[],
): RunTarget[] {
  return selections.map(({ agentId, definitionId, loc }) => {
    const found = findRunTarget(ctx, organizationId, { agentId }, { definitionId })
    if (!('problem' in found)) return found.target
    switch (found.problem) {
      case 'workflow_not_found':
        throw notFound(RUN_TARGET_PROBLEMS.workflow_not_found)
      case 'definition_not_found':
        throw invalid([
          valueError(
            [...loc, 'workflow_definition_id'],
            `workflow_definition_id ${definitionId} is not a published or archived version of agent ${agentId}`,
            definitionId,
          ),
        ])
      default:
        throw refused(RUN_TARGET_PROBLEMS[found.problem])
    }
  })
}

/**
 * Why the campaign's calls could not run now (an agent it dials archived or without a version, or its models: see
 * models/readiness.ts), or null. Checked when it starts or resumes; the dialer checks again before its dials.
 */
function startProblem(ctx: AppContext, campaign: CampaignRow): string | null {
  const selections = campaign.trafficSplit
    ? campaign.trafficSplit.variants.map((variant) => ({
        workflowId: variant.workflow_id,
        definitionId: variant.workflow_definition_id,
      }))
    : campaign.workflowId === null
      ? []
      : [{ workflowId: campaign.workflowId, definitionId: null }]
  for (const { workflowId: agentId, definitionId } of selections) {
    const found = findRunTarget(ctx, campaign.organizationId, { agentId }, { definitionId })
    const problem =
      'problem' in found
        ? RUN_TARGET_PROBLEMS[found.problem]
        : runModelsProblem(
            ctx,
            campaign.organizationId,
            { overrides: campaign.modelOverrides, configurations: found.target.configurations },
            'voice',
          )
    if (problem) return `agent ${agentId}: ${problem}`
  }
  return null
}

function splitSelections(split: SplitRequest) {
  return split.variants.map((variant, index) => ({
    agentId: variant.workflow_id,
    definitionId: variant.workflow_definition_id ?? null,
    loc: ['body', 'traffic_split', 'variants', index] as Loc,
  }))
}

function requireCampaign(ctx: AppContext, organizationId: number, campaignId: number): CampaignRow {
  const row = ctx.db
    .select()
    .from(campaigns)
    .where(
      and(eq(campaigns.id, campaignId), eq(campaigns.organizationId, organizationId), ne(campaigns.state, 'importing')),
    )
    .get()
  if (!row) throw notFound('Campaign not found')
  return row
}

export const getCampaign = (ctx: AppContext, organizationId: number, campaignId: number): CampaignView =>
  campaignViews(ctx, [requireCampaign(ctx, organizationId, campaignId)])[0]

export function listCampaigns(ctx: AppContext, organizationId: number): CampaignView[] {
  const rows = ctx.db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.organizationId, organizationId), ne(campaigns.state, 'importing')))
    .orderBy(desc(campaigns.id))
    .all()
  return campaignViews(ctx, rows)
}

/**
 * Creates a campaign in `draft` with its contacts: checks the agents, the uploaded CSV and the telephony
 * configuration, then streams the CSV into contact rows. A CSV that breaks a rule leaves nothing behind (400).
 */
export async function createCampaign(
  ctx: AppContext,
  organizationId: number,
  body: CreateRequest,
): Promise<CampaignView> {
  const problems = requestProblems(body)
  const hasAgent = body.workflow_id != null
  const hasSplit = body.traffic_split != null
  if (hasAgent === hasSplit) {
    problems.push(
      valueError(
        ['body'],
        hasAgent ? 'send either workflow_id or traffic_split, not both' : 'workflow_id or traffic_split is required',
        body,
      ),
    )
  }
  problems.push(...modelOverridesProblems(ctx, organizationId, body.model_overrides, ['body', 'model_overrides']))
  if (problems.length > 0) throw invalid(problems)

  const targets = resolveTargets(
    ctx,
    organizationId,
    body.traffic_split
      ? splitSelections(body.traffic_split)
      : [{ agentId: body.workflow_id!, definitionId: null, loc: ['body'] }],
  )
  const upload = findUpload(ctx, organizationId, body.source_id)
  if (!upload)
    throw refused(
      `Source file '${body.source_id}' not found: upload it with POST /api/v1/s3/presigned-upload-url first`,
    )
  const file = await ctx.objects.get(upload.fileKey)
  if (!file) throw refused(`Source file '${body.source_id}' is no longer stored`)
  const { config } = resolveOutbound(
    ctx,
    organizationId,
    { telephonyConfigurationId: body.telephony_configuration_id ?? null },
    {
      missingConfiguration: () => refused(TELEPHONY_CONFIGURATION_NOT_FOUND),
    },
  )

  const now = isoNow(ctx.clock)
  const split: StoredTrafficSplit | null = body.traffic_split
    ? {
        revision: 1,
        variants: reconcileVariantIds([], body.traffic_split.variants as TrafficVariantInput[]),
        removed: [],
      }
    : null
  const campaignId = ctx.db
    .insert(campaigns)
    .values({
      organizationId,
      name: body.name,
      workflowId: body.workflow_id ?? null,
      state: 'importing',
      sourceType: body.source_type,
      sourceId: body.source_id,
      retryConfig: body.retry_config ? normalizeRetry(body.retry_config) : RETRY_CONFIG_WHEN_OMITTED,
      trafficSplit: split,
      allocationSeed: crypto.randomUUID(),
      maxConcurrency: body.max_concurrency ?? null,
      rateLimitPerSecond: body.rate_limit_per_second ?? 1,
      scheduleConfig: body.schedule_config ? normalizeSchedule(body.schedule_config) : null,
      circuitBreaker: resolveCircuitBreakerConfig(body.circuit_breaker),
      telephonyConfigurationId: config.id,
      modelOverrides: body.model_overrides ?? null,
      importInstanceId: ctx.instanceId,
      createdAt: now,
      updatedAt: now,
    })
    .returning({ id: campaigns.id })
    .get().id

  let contacts: number
  try {
    const requiredVariables = [...new Set(targets.flatMap((target) => target.requiredVariables))]
    contacts = await ingestContacts(
      file.stream(),
      {
        provider: config.provider,
        destinations: ariDestinationRules(config.credentials),
        requiredVariables,
        recordingIds: organizationRecordingIds(ctx, organizationId),
      },
      {
        sqlite: ctx.sqlite,
        campaignId,
        organizationId,
        firstAttemptAt: ctx.clock.now(),
      },
    )
  } catch (error) {
    discardImportingCampaigns(ctx, campaignId)
    if (error instanceof ContactsLimitError)
      throw invalid([valueError(['body', 'source_id'], error.message, body.source_id)])
    if (error instanceof ContactsError) throw refused(error.message)
    throw error
  }
  applyTransition(ctx, campaignId, 'imported', { totalRows: contacts, totalQueuedCount: contacts })
  // Taken once the campaign holds its contacts (a refused file stays unused). Only an upload a day old can have been
  // removed meanwhile: the contacts were read, only the source's download is lost.
  if (!markUploadUsed(ctx, organizationId, upload.fileKey))
    ctx.log.warn({ campaignId, organizationId }, 'campaign created from an upload removed meanwhile (unused for a day)')
  ctx.log.info({ campaignId, organizationId, contacts }, 'campaign created')
  return getCampaign(ctx, organizationId, campaignId)
}

/** Changes settings; traffic split changes are logged and apply to the next dial, retries included. */
export function updateCampaign(
  ctx: AppContext,
  organizationId: number,
  campaignId: number,
  body: UpdateRequest,
): CampaignView {
  const campaign = requireCampaign(ctx, organizationId, campaignId)
  if (FINISHED_STATES.has(campaign.state)) throw refused(`Cannot update a ${campaign.state} campaign`)
  const problems = requestProblems(body)
  if (problems.length > 0) throw invalid(problems)
  if (body.traffic_split) resolveTargets(ctx, organizationId, splitSelections(body.traffic_split))

  transaction(ctx, () => {
    const changes: Partial<typeof campaigns.$inferInsert> = { updatedAt: isoNow(ctx.clock) }
    if (body.name != null) changes.name = body.name
    if (body.retry_config != null) changes.retryConfig = normalizeRetry(body.retry_config)
    if (body.max_concurrency != null) changes.maxConcurrency = body.max_concurrency
    if (body.rate_limit_per_second != null) changes.rateLimitPerSecond = body.rate_limit_per_second
    if (body.schedule_config != null) changes.scheduleConfig = normalizeSchedule(body.schedule_config)
    if (body.circuit_breaker != null) changes.circuitBreaker = resolveCircuitBreakerConfig(body.circuit_breaker)
    if (body.traffic_split != null) {
      const previous = campaign.trafficSplit
      const known = previous ? [...previous.variants, ...previous.removed] : []
      const variants = reconcileVariantIds(known, body.traffic_split.variants as TrafficVariantInput[])
      if (!previous || !isSameSplit(previous.variants, variants)) {
        const kept = new Set(variants.map((variant) => variant.id))
        const removed = known.filter((variant) => !kept.has(variant.id))
        const revision = (previous?.revision ?? 0) + 1
        changes.trafficSplit = { revision, variants, removed }
        appendCampaignLog(
          ctx,
          campaignId,
          'info',
          'traffic_split_changed',
          `Traffic split changed (revision ${revision}); it applies from the next dial`,
          {
            revision,
            previous: previous?.variants ?? null,
            variants,
          },
        )
      }
    }
    ctx.db.update(campaigns).set(changes).where(eq(campaigns.id, campaignId)).run()
  })
  return getCampaign(ctx, organizationId, campaignId)
}

export function changeCampaignState(
  ctx: AppContext,
  organizationId: number,
  campaignId: number,
  action: CampaignAction,
): CampaignView {
  if (action === 'start' || action === 'resume') {
    const problem = startProblem(ctx, requireCampaign(ctx, organizationId, campaignId))
    if (problem) throw refused(`The campaign cannot call: ${problem}`)
  }
  transitionCampaign(ctx, organizationId, campaignId, action)
  return getCampaign(ctx, organizationId, campaignId)
}

export function campaignProgress(ctx: AppContext, organizationId: number, campaignId: number) {
  const campaign = requireCampaign(ctx, organizationId, campaignId)
  const { contacts, failedCalls } = campaignProgressCounts(ctx, campaignId)
  const total = campaign.totalRows ?? 0
  return {
    campaign_id: campaign.id,
    state: campaign.state,
    total_rows: total,
    processed_rows: campaign.processedRows,
    failed_calls: failedCalls,
    progress_percentage: total === 0 ? 0 : Math.round((contacts.done / total) * 10000) / 100,
    contacts,
    source_sync: { status: 'completed', last_synced_at: campaign.createdAt, error: null },
    rate_limit: campaign.rateLimitPerSecond,
    started_at: campaign.startedAt,
    completed_at: campaign.completedAt,
  }
}

/** Per variant, removed ones included: contacts allocated, calls placed, outcomes and agent versions used. */
export function trafficStats(ctx: AppContext, organizationId: number, campaignId: number) {
  const campaign = requireCampaign(ctx, organizationId, campaignId)
  const view = campaignViews(ctx, [campaign])[0]
  const counts = variantCounts(ctx, campaignId)
  const assigned = new Map(counts.assigned.map((row) => [row.variant_id, row.n]))
  const placed = new Map(counts.placed.map((row) => [row.variant_id, row.n]))
  const { outcomes, versions } = counts
  const split = campaign.trafficSplit
  const current = view.traffic_split?.variants ?? []
  const removed = (split?.removed ?? []).map((variant) => ({
    ...variant,
    weight: 0,
    workflow_name: 'Unknown',
    version_number: null,
  }))
  return {
    campaign_id: campaign.id,
    revision: split?.revision ?? null,
    variants: [
      ...current.map((variant) => ({ ...variant, removed: false })),
      ...removed.map((variant) => ({ ...variant, removed: true })),
    ].map((variant) => ({
      id: variant.id,
      workflow_id: variant.workflow_id,
      workflow_name: variant.workflow_name,
      workflow_definition_id: variant.workflow_definition_id,
      weight: variant.weight,
      removed: variant.removed,
      contacts_assigned: assigned.get(variant.id) ?? 0,
      calls_placed: placed.get(variant.id) ?? 0,
      outcomes: Object.fromEntries(
        outcomes.filter((row) => row.variant_id === variant.id).map((row) => [row.disposition ?? 'unknown', row.n]),
      ),
      versions_used: versions
        .filter((row) => row.variant_id === variant.id)
        .map((row) => ({
          workflow_definition_id: row.definition_id,
          version_number: row.version_number,
          calls: row.n,
        })),
    })),
  }
}

const REDIAL_OUTCOMES = {
  retry_on_busy: 'busy',
  retry_on_no_answer: 'no_answer',
  retry_on_voicemail: 'voicemail',
} as const

/**
 * A child campaign in `draft` that calls again the contacts whose last outcome matches the chosen reasons. It inherits
 * the settings, the current traffic split and the allocation seed, so each contact keeps its variant.
 */
export function redialCampaign(
  ctx: AppContext,
  organizationId: number,
  campaignId: number,
  body: RedialRequest,
): CampaignView {
  const chosen = (Object.keys(REDIAL_OUTCOMES) as (keyof typeof REDIAL_OUTCOMES)[]).filter((flag) => body[flag] ?? true)
  if (chosen.length === 0) {
    throw invalid([
      valueError(['body'], 'At least one of retry_on_voicemail, retry_on_no_answer, retry_on_busy must be true', body),
    ])
  }
  const parent = requireCampaign(ctx, organizationId, campaignId)
  if (parent.state !== 'completed' && parent.state !== 'stopped') {
    throw refused(`Only completed or stopped campaigns can be redialed (current state: ${parent.state})`)
  }
  if (parent.redialedCampaignId !== null) throw refused('This campaign has already been redialed')
  const outcomes = chosen.map((flag) => REDIAL_OUTCOMES[flag])
  const now = isoNow(ctx.clock)
  const childId = transaction(ctx, () => {
    const id = ctx.db
      .insert(campaigns)
      .values({
        ...parent,
        id: undefined,
        name: body.name ?? `${parent.name} (Redial)`,
        state: 'draft',
        retryConfig: body.retry_config ? normalizeRetry(body.retry_config) : parent.retryConfig,
        totalRows: 0,
        processedRows: 0,
        failedRows: 0,
        executedCount: 0,
        totalQueuedCount: 0,
        breakerWindowResetAt: 0,
        parentCampaignId: parent.id,
        redialedCampaignId: null,
        createdAt: now,
        startedAt: null,
        completedAt: null,
        updatedAt: now,
      })
      .returning({ id: campaigns.id })
      .get().id
    const copied = copyContactsForRedial(
      ctx,
      { campaignId: id, parentCampaignId: parent.id, firstAttemptAt: ctx.clock.now() },
      outcomes,
    )
    if (copied === 0) throw refused('No contacts match the selected redial criteria')
    ctx.db.update(campaigns).set({ totalRows: copied, totalQueuedCount: copied }).where(eq(campaigns.id, id)).run()
    ctx.db.update(campaigns).set({ redialedCampaignId: id, updatedAt: now }).where(eq(campaigns.id, parent.id)).run()
    appendCampaignLog(
      ctx,
      parent.id,
      'info',
      'campaign_redialed',
      `Redial campaign ${id} created for ${copied} contacts`,
      { redial_campaign_id: id, outcomes },
    )
    return id
  })
  return getCampaign(ctx, organizationId, childId)
}

export function campaignRuns(ctx: AppContext, organizationId: number, campaignId: number, query: RunListOptions) {
  requireCampaign(ctx, organizationId, campaignId)
  return listRuns(ctx, organizationId, { campaignId }, query)
}

/** The organization's contacts file of a campaign, for a signed download link. */
export function campaignSourceKey(ctx: AppContext, organizationId: number, campaignId: number): string {
  const campaign = requireCampaign(ctx, organizationId, campaignId)
  if (campaign.sourceType !== 'csv') throw refused('Only CSV sources can be downloaded')
  if (!findUpload(ctx, organizationId, campaign.sourceId)) throw notFound('Source file not found')
  return campaign.sourceId
}
