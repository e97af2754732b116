import type { ContactAttempts } from '../calls/outcomes'
import type { AppContext } from '../context'
import type { CallOutcome } from '../telephony/provider'
import {
  evaluateBreaker,
  tripDetails,
  tripMessage,
  type BreakerOutcome,
  type CircuitBreakerConfig,
} from './circuit-breaker'
import { appendCampaignLog } from './lifecycle'
import { hasRetriesLeft, retryDecision, type RetryConfig } from './retry'
import { applyTransition } from './state-machine'
import {
  closeContactAttempt,
  contactWithCampaign,
  countExecutedAttempt,
  runsCompletedSince,
  type SettlingContact,
} from './queries'

/** Dispositions of runs that count as failures for the circuit breaker: calls that could not be placed or failed. */
export const FAILED_DISPOSITION = 'failed'

/**
 * Closes the claimed attempt of a campaign contact after its call ended: schedules the retry the policy asks for
 * (unless the campaign was stopped) or closes the contact, and keeps the campaign's counters exact. Runs inside the
 * caller's transaction, next to the run's own update. Settling a contact that is not dialing does nothing, so a
 * report delivered twice changes nothing.
 */
export function settleAttempt(ctx: AppContext, contactId: number, outcome: CallOutcome, runId: number): void {
  const contact = dialingContact(ctx, contactId)
  if (!contact) return
  const now = ctx.clock.now()
  const decision = retryDecision(JSON.parse(contact.retry_config) as RetryConfig, outcome, contact.attempts, now)
  const retries = decision.retry && contact.campaign_state !== 'stopped'
  closeContactAttempt(ctx, contactId, {
    state: retries ? 'queued' : 'done',
    nextAttemptAt: retries ? decision.at : null,
    outcome,
    runId,
  })
  countExecutedAttempt(ctx, contact.campaign_id, {
    requeued: retries,
    closedUnreached: !retries && outcome !== 'completed',
  })

  const breaker = JSON.parse(contact.circuit_breaker) as CircuitBreakerConfig
  if (outcome === 'failed' && breaker.enabled && contact.campaign_state === 'running') {
    tripBreakerIfNeeded(ctx, contact.campaign_id, breaker, contact.breaker_window_reset_at, now)
  }
}

/** The contact with its campaign's settings, when its attempt is still open (state `dialing`). */
function dialingContact(ctx: AppContext, contactId: number): SettlingContact | null {
  const contact = contactWithCampaign(ctx, contactId)
  return contact?.state === 'dialing' ? contact : null
}

/** Evaluates the campaign's sliding window of finished calls and pauses it, with a warning log, when it trips. */
function tripBreakerIfNeeded(
  ctx: AppContext,
  campaignId: number,
  config: CircuitBreakerConfig,
  resetAt: number,
  now: number,
): void {
  const windowStart = new Date(Math.max(now - config.window_seconds * 1000, resetAt)).toISOString()
  const runs = runsCompletedSince(ctx, campaignId, windowStart)
  const outcomes: BreakerOutcome[] = runs.map((run) => ({
    at: Date.parse(run.completed_at),
    failed: run.disposition === FAILED_DISPOSITION,
    runId: run.id,
    reason: run.disposition ?? undefined,
  }))
  const stats = evaluateBreaker(config, outcomes, now)
  if (!stats.trip) return
  applyTransition(ctx, campaignId, 'suspend')
  appendCampaignLog(
    ctx,
    campaignId,
    'warning',
    'circuit_breaker_tripped',
    tripMessage(stats, config),
    tripDetails(stats, config, outcomes, now),
  )
}

/**
 * After a restart, an attempt whose call was never answered and cannot be followed any more goes back to the queue as
 * a new attempt when `retry_config` allows one more (its attempt number was already spent, so the same attempt is
 * never dialled twice); otherwise the contact closes unreached. Inside the caller's transaction.
 */
export function retryInterruptedAttempt(ctx: AppContext, contactId: number, runId: number): void {
  const contact = dialingContact(ctx, contactId)
  if (!contact) return
  const retries =
    contact.campaign_state !== 'stopped' &&
    hasRetriesLeft(JSON.parse(contact.retry_config) as RetryConfig, contact.attempts)
  closeContactAttempt(ctx, contactId, {
    state: retries ? 'queued' : 'done',
    nextAttemptAt: ctx.clock.now(),
    outcome: 'interrupted',
    runId,
  })
  countExecutedAttempt(ctx, contact.campaign_id, { requeued: retries, closedUnreached: !retries })
}

/** What a call's end does to its campaign contact, as calls/ takes it (src/boot.ts wires it in). */
export const contactAttempts: ContactAttempts = { settle: settleAttempt, retryInterrupted: retryInterruptedAttempt }
