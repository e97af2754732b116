import type { AppContext } from '../context'
import type { GreetingOverride, StoredTrafficSplit } from '../db/schema/campaigns'
import { DomainError } from '../lib/errors'
import { openCallCount } from '../runs/service'
import { findRunTarget, RUN_TARGET_PROBLEMS, type RunTarget } from '../runs/target'
import { runModelsProblem } from '../models/readiness'
import type { TelephonyProvider } from '../telephony/provider'
import { placedByAnotherInstance, resolveOutboundLine, startOutboundCall, type OutboundLine } from '../calls/start'
import { appendCampaignLog } from './lifecycle'
import { nextDialSlot, rhythmAfterDial, WINDOW_MS, type DialRhythm } from './pacer'
import { isWithinSchedule, nextWindowStart, type ScheduleConfig } from './schedule-window'
import { assignVariant } from './traffic-split'
import { transaction } from '../db/transaction'
import { schedulerQueries, type ClaimedContact, type DialGate, type RunningCampaign } from './queries'
import { applyTransition } from './state-machine'

/**
 * The agent a campaign dials cannot run (archived, version gone: `agent_unavailable`; its models: `models_unavailable`):
 * the campaign pauses with the reason.
 */
class AgentUnavailableError extends Error {
  constructor(
    message: string,
    readonly event: 'agent_unavailable' | 'models_unavailable',
  ) {
    super(message)
  }
}

/** Longest pause between two looks at the database; dial slots and wake() make it shorter. */
const MAX_TICK_MS = 250

export type CampaignScheduler = {
  start(): void
  /** Stops ticking and waits for dial requests already sent to their providers. */
  stop(): Promise<void>
  /** Asks for a tick soon: a campaign started, a call ended, capacity freed. */
  wake(): void
  /** One pass over every running campaign; returns the ms until a dial slot opens (tests drive it by hand). */
  tick(): Promise<number>
}

/** How a campaign's calls are placed; resolved at most once per TELEPHONY_PLAN_TTL_MS. */
type TelephonyPlan = {
  /** Agent versions resolved for this plan's lifetime, by `workflowId:definitionId|latest`. */
  targets: Map<string, RunTarget>
  line: OutboundLine & { provider: TelephonyProvider }
}

type DialPlan = TelephonyPlan & { campaign: RunningCampaign }

/**
 * Telephony changes (a configuration parked, a new caller id) and newly published agent versions reach running
 * campaigns within this long.
 */
const TELEPHONY_PLAN_TTL_MS = 1000

/** The call a claimed contact gets: its traffic-split variant's agent version, its context, greeting and retry facts. */
function campaignCall(
  plan: DialPlan,
  contact: ClaimedContact,
  targetOf: (agentId: number, definitionId: number | null) => RunTarget,
) {
  const { campaign } = plan
  const split = campaign.traffic_split ? (JSON.parse(campaign.traffic_split) as StoredTrafficSplit) : null
  // The phone number is the contact's identity for allocation, so a redial campaign keeps each contact's variant.
  const variant = split ? assignVariant(contact.phone_number, campaign.allocation_seed, split.variants) : null
  const target = targetOf(variant?.workflow_id ?? campaign.workflow_id!, variant?.workflow_definition_id ?? null)
  const greeting = contact.greeting_override ? (JSON.parse(contact.greeting_override) as GreetingOverride) : null
  return {
    organizationId: campaign.organization_id,
    target,
    line: plan.line,
    destination: contact.phone_number,
    runName: `WR-CAMPAIGN-${campaign.id}-${contact.id}-${contact.attempts}`,
    campaign: { campaignId: campaign.id, contactId: contact.id, trafficVariantId: variant?.id ?? null },
    modelOverrides: campaign.model_overrides ? JSON.parse(campaign.model_overrides) : null,
    context: { ...(JSON.parse(contact.context) as Record<string, string>), campaign_id: campaign.id },
    extraContext: {
      ...(greeting ? { greeting_override: greeting } : {}),
      ...(contact.attempts > 1
        ? { is_retry: true, retry_attempt: contact.attempts - 1, retry_reason: contact.last_outcome }
        : {}),
    },
  }
}

function pauseCampaign(
  ctx: AppContext,
  campaign: RunningCampaign,
  event: string,
  message: string,
  details: Record<string, unknown>,
): void {
  transaction(ctx, () => {
    if (applyTransition(ctx, campaign.id, 'suspend') !== null)
      appendCampaignLog(ctx, campaign.id, 'warning', event, message, details)
  })
}

/** Stored for a closed window whose next opening is more than 8 days away. */
const NO_OPENING_NEAR = -1

/**
 * Logs `outside_schedule` once per closed window, whichever instance sees it first (the campaign row records the
 * opening announced); `logged` keeps what this instance saw, so a tick outside the window writes nothing.
 */
function noteOutsideSchedule(dialer: Dialer, campaign: RunningCampaign, schedule: ScheduleConfig, now: number): void {
  const { ctx } = dialer
  const nextOpening = nextWindowStart(schedule, new Date(now))?.getTime() ?? null
  if (dialer.outsideScheduleLogged.get(campaign.id) === nextOpening) return
  dialer.outsideScheduleLogged.set(campaign.id, nextOpening)
  transaction(ctx, () => {
    if (!dialer.queries.noteOutsideSchedule(campaign.id, nextOpening ?? NO_OPENING_NEAR)) return
    appendCampaignLog(
      ctx,
      campaign.id,
      'info',
      'outside_schedule',
      nextOpening === null
        ? 'Outside the schedule, and no slot opens in the next 8 days'
        : `Outside the schedule: dialing resumes at ${new Date(nextOpening).toISOString()}`,
      {
        timezone: schedule.timezone,
        next_window_start: nextOpening === null ? null : new Date(nextOpening).toISOString(),
      },
    )
  })
}

/** The provider and caller id a campaign dials with now, or null after pausing the campaign. */
function resolveTelephonyPlan(ctx: AppContext, campaign: RunningCampaign): TelephonyPlan | null {
  try {
    const line = resolveOutboundLine(
      ctx,
      campaign.organization_id,
      { telephonyConfigurationId: campaign.telephony_configuration_id },
      'resolved',
    )
    const { provider } = line
    if (!provider) {
      pauseCampaign(
        ctx,
        campaign,
        'telephony_unavailable',
        `Paused: this appliance cannot place calls through provider '${line.providerName}'`,
        { provider: line.providerName },
      )
      return null
    }
    return { targets: new Map(), line: { ...line, provider } }
  } catch (error) {
    if (!(error instanceof DomainError)) throw error
    pauseCampaign(
      ctx,
      campaign,
      'telephony_unavailable',
      `Paused: telephony configuration unusable: ${String(error.detail)}`,
      { reason: error.kind },
    )
    return null
  }
}

/**
 * The agent version a campaign call runs: pinned, or the latest published one at dial time (kept for the plan's life).
 * Checked with its models (the same resolution the run does, no request to a model server) once per plan, so at most
 * once a second.
 */
function runTarget(ctx: AppContext, plan: DialPlan, agentId: number, definitionId: number | null): RunTarget {
  const key = `${agentId}:${definitionId ?? 'latest'}`
  const cached = plan.targets.get(key)
  if (cached) return cached
  const { campaign } = plan
  const found = findRunTarget(ctx, campaign.organization_id, { agentId }, { definitionId })
  if ('problem' in found) throw new AgentUnavailableError(RUN_TARGET_PROBLEMS[found.problem], 'agent_unavailable')
  const overrides = campaign.model_overrides ? JSON.parse(campaign.model_overrides) : null
  const modelsProblem = runModelsProblem(
    ctx,
    campaign.organization_id,
    { overrides, configurations: found.target.configurations },
    'voice',
  )
  if (modelsProblem)
    throw new AgentUnavailableError(`agent ${agentId} cannot take a call: ${modelsProblem}`, 'models_unavailable')
  plan.targets.set(key, found.target)
  return found.target
}

/** Runs `tick` again after the delay it returns (at most MAX_TICK_MS), or sooner on `wake`. */
function createTickLoop(
  tick: () => Promise<number>,
  log: AppContext['log'],
): { start(): void; stop(): void; wake(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null
  let timerDueAt = Infinity
  let running = false

  function schedule(delayMs: number): void {
    if (!running) return
    const delay = Math.max(1, Math.min(MAX_TICK_MS, delayMs))
    // Many wakes in a row (a burst of ended calls) make one tick, not one each.
    if (timer && timerDueAt <= performance.now() + delay) return
    if (timer) clearTimeout(timer)
    timerDueAt = performance.now() + delay
    timer = setTimeout(loop, delay)
  }

  async function loop(): Promise<void> {
    timer = null
    timerDueAt = Infinity
    let delay = MAX_TICK_MS
    try {
      delay = await tick()
    } catch (error) {
      log.error({ err: error }, 'scheduler tick failed')
    }
    schedule(delay)
  }

  return {
    start() {
      running = true
      schedule(0)
    },
    stop() {
      running = false
      if (timer) clearTimeout(timer)
      timer = null
      timerDueAt = Infinity
    },
    wake() {
      schedule(0)
    },
  }
}

/** What the dialer keeps between ticks; the database holds everything else. */
type Dialer = {
  ctx: AppContext
  queries: ReturnType<typeof schedulerQueries>
  /** The next schedule opening this instance saw logged, by campaign (see noteOutsideSchedule). */
  outsideScheduleLogged: Map<number, number | null>
  telephonyPlans: Map<number, { plan: TelephonyPlan; until: number }>
  dialsInFlight: Set<Promise<unknown>>
  ticking: boolean
}

/** The applyTransition's conditional UPDATE decides which instance completes the campaign and logs it: only one. */
function completeCampaign(ctx: AppContext, campaign: RunningCampaign): void {
  transaction(ctx, () => {
    if (applyTransition(ctx, campaign.id, 'complete') !== null)
      appendCampaignLog(
        ctx,
        campaign.id,
        'info',
        'campaign_completed',
        'Campaign completed: every contact has been called',
      )
  })
}

/** The provider and caller id a campaign dials with now (cached for TELEPHONY_PLAN_TTL_MS), or null after pausing it. */
function telephonyPlan(dialer: Dialer, campaign: RunningCampaign, now: number): TelephonyPlan | null {
  const cached = dialer.telephonyPlans.get(campaign.id)
  if (cached && cached.until > now) return cached.plan
  const plan = resolveTelephonyPlan(dialer.ctx, campaign)
  if (plan) dialer.telephonyPlans.set(campaign.id, { plan, until: now + TELEPHONY_PLAN_TTL_MS })
  return plan
}

const rhythmOf = (gate: DialGate): DialRhythm | null =>
  gate.dial_rhythm_rate === null || gate.dial_rhythm_started_at === null || gate.last_dial_at === null
    ? null
    : {
        rate: gate.dial_rhythm_rate,
        startedAt: gate.dial_rhythm_started_at,
        dials: gate.dial_rhythm_dials,
        lastAt: gate.last_dial_at,
      }

/**
 * Whether the campaign may dial at `now`, from the database alone so it holds for every instance dialling it: still
 * running, under max_concurrency and the organization's concurrent call limit, and at its dial slot. Blocked: when to
 * look again (Infinity: when something changes).
 */
function dialGate(dialer: Dialer, campaignId: number, now: number): { gate: DialGate } | { blockedUntil: number } {
  const { ctx, queries } = dialer
  const gate = queries.dialGate(campaignId)
  if (gate?.state !== 'running') return { blockedUntil: Infinity }
  const full =
    gate.dialing >= (gate.max_concurrency ?? Infinity) ||
    openCallCount(ctx, gate.organization_id) >= gate.concurrent_call_limit
  if (full) return { blockedUntil: Infinity }
  const rate = gate.rate_limit_per_second
  // The window cannot bind when the latest dial is a second old; otherwise its start is `rate` dials back.
  const recent = gate.last_dial_at !== null && gate.last_dial_at > now - WINDOW_MS
  const windowStart = recent ? queries.dialStartBack(campaignId, rate - 1) : null
  const slot = nextDialSlot(rhythmOf(gate), rate, windowStart, now)
  return slot > now ? { blockedUntil: slot } : { gate }
}

/**
 * Claims the next due contact when the campaign may dial (checked in the claim's transaction, which serializes every
 * instance's claims), writes its run and the campaign's dial rhythm in that transaction, and dials. Returns null once
 * dialled, else when to look again.
 */
function dialNextContact(dialer: Dialer, plan: DialPlan): number | null {
  const { ctx, queries } = dialer
  const { campaign } = plan
  let blockedUntil = Infinity
  let rhythm: DialRhythm
  const started = startOutboundCall(
    ctx,
    () => {
      const now = ctx.clock.now()
      const verdict = dialGate(dialer, campaign.id, now)
      if ('blockedUntil' in verdict) {
        blockedUntil = verdict.blockedUntil
        return null
      }
      const contact = queries.claimNextContact(campaign.id, now)
      if (!contact) return null
      // The dial counts from when its claim decided it: the claim's own duration (a few round trips to PostgreSQL)
      // must not make every dial late and restart the rhythm.
      rhythm = rhythmAfterDial(rhythmOf(verdict.gate), verdict.gate.rate_limit_per_second, now)
      return campaignCall(plan, contact, (agentId, definitionId) => runTarget(ctx, plan, agentId, definitionId))
    },
    (call, runId) => {
      const { contactId, trafficVariantId } = call.campaign!
      queries.recordDial({ campaignId: campaign.id, contactId, runId, variantId: trafficVariantId }, rhythm)
    },
  )
  if (!started) return blockedUntil
  dialer.dialsInFlight.add(started.placed)
  void started.placed.finally(() => dialer.dialsInFlight.delete(started.placed))
  return null
}

/** Dials what one campaign may dial now; returns when its next dial slot opens (Infinity: nothing to wait for). */
function serveCampaign(dialer: Dialer, campaign: RunningCampaign, now: number): number {
  const { ctx, queries } = dialer
  if (!queries.hasOpenContacts(campaign.id)) {
    completeCampaign(ctx, campaign)
    return Infinity
  }
  const schedule = campaign.schedule_config ? (JSON.parse(campaign.schedule_config) as ScheduleConfig) : null
  if (schedule && !isWithinSchedule(schedule, new Date(now))) {
    noteOutsideSchedule(dialer, campaign, schedule, now)
    return Infinity
  }
  // A look without the write lock first: a campaign at its limits or between slots costs no transaction.
  const verdict = dialGate(dialer, campaign.id, now)
  if ('blockedUntil' in verdict) return verdict.blockedUntil
  if (!queries.hasDueContact(campaign.id, now)) return Infinity
  const telephony = telephonyPlan(dialer, campaign, now)
  // Through ARI, dialled by the instance that holds the configuration's events connection.
  if (!telephony || placedByAnotherInstance(ctx, telephony.line)) return Infinity
  const plan: DialPlan = { ...telephony, campaign }
  for (;;) {
    try {
      const blockedUntil = dialNextContact(dialer, plan)
      if (blockedUntil !== null) return blockedUntil
    } catch (error) {
      if (!(error instanceof AgentUnavailableError)) throw error
      pauseCampaign(ctx, campaign, error.event, `Paused: ${error.message}`, {})
      return Infinity
    }
  }
}

/** One pass over every running campaign; returns the ms until a dial slot opens. */
async function tick(dialer: Dialer): Promise<number> {
  if (dialer.ticking) return MAX_TICK_MS
  dialer.ticking = true
  try {
    const now = dialer.ctx.clock.now()
    let nextSlot = Infinity
    const campaigns = dialer.queries.runningCampaigns()
    for (const campaign of campaigns) {
      try {
        nextSlot = Math.min(nextSlot, serveCampaign(dialer, campaign, now))
      } catch (error) {
        dialer.ctx.log.error({ err: error, campaignId: campaign.id }, 'campaign scheduling failed')
      }
    }
    const runningIds = new Set(campaigns.map((campaign) => campaign.id))
    for (const id of dialer.outsideScheduleLogged.keys())
      if (!runningIds.has(id)) dialer.outsideScheduleLogged.delete(id)
    for (const id of dialer.telephonyPlans.keys()) if (!runningIds.has(id)) dialer.telephonyPlans.delete(id)
    return Math.max(0, nextSlot - now)
  } finally {
    dialer.ticking = false
  }
}

/**
 * The loop that dials every running campaign: schedule windows, rate_limit_per_second (campaigns/pacer.ts),
 * max_concurrency and the organization's concurrent call limit. Each attempt is claimed, its limits checked and its run
 * written in one transaction before the provider is asked to dial, so a crash can never dial an attempt twice and
 * several instances sharing the database share each campaign and its limits. The database is the truth; memory holds
 * only caches (telephony plans, the schedule openings already logged).
 */
export function createCampaignScheduler(ctx: AppContext): CampaignScheduler {
  const dialer: Dialer = {
    ctx,
    queries: schedulerQueries(ctx),
    outsideScheduleLogged: new Map(),
    telephonyPlans: new Map(),
    dialsInFlight: new Set(),
    ticking: false,
  }
  const tickOnce = () => tick(dialer)
  const loop = createTickLoop(tickOnce, ctx.log)
  return {
    start: loop.start,
    async stop() {
      loop.stop()
      await Promise.allSettled([...dialer.dialsInFlight])
    },
    wake: loop.wake,
    tick: tickOnce,
  }
}
