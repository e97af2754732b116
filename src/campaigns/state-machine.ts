import { and, eq, inArray } from 'drizzle-orm'
import type { AppContext } from '../context'
import { campaigns, type CampaignState } from '../db/schema/campaigns'

/**
 * The campaign state machine: every change of a campaign's state, from any caller (API, scheduler, attempt
 * settlement, circuit breaker, import), goes through `applyTransition`, the only code that writes `campaigns.state`.
 */

export type CampaignTransition = 'imported' | 'start' | 'pause' | 'resume' | 'stop' | 'complete' | 'suspend'

type TransitionRule = { from: readonly CampaignState[]; to: CampaignState }

export const CAMPAIGN_TRANSITIONS: Record<CampaignTransition, TransitionRule> = {
  /** The contacts import finished. */
  imported: { from: ['importing'], to: 'draft' },
  start: { from: ['draft', 'paused'], to: 'running' },
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  stop: { from: ['running', 'paused'], to: 'stopped' },
  /** Nothing is queued, dialing or waiting for a retry. */
  complete: { from: ['running'], to: 'completed' },
  /** The system pauses a running campaign: telephony or agent unusable, circuit breaker tripped. */
  suspend: { from: ['running'], to: 'paused' },
}

/** Columns a transition may write beside the state (counters set when an import finishes). */
export type TransitionColumns = Pick<typeof campaigns.$inferInsert, 'totalRows' | 'totalQueuedCount'>

/**
 * Moves the campaign through `transition` if its current state allows it, as one conditional UPDATE, with the
 * timestamps the new state implies (started_at on the first run, completed_at when it ends, a fresh circuit breaker
 * window when a paused campaign runs again). Returns the state it left, or null when it was in no state the
 * transition leaves from (nothing is written). Runs inside the caller's transaction, if any.
 */
export function applyTransition(
  ctx: AppContext,
  campaignId: number,
  transition: CampaignTransition,
  columns: TransitionColumns = {},
): CampaignState | null {
  const rule = CAMPAIGN_TRANSITIONS[transition]
  const current = ctx.db
    .select({ state: campaigns.state, startedAt: campaigns.startedAt })
    .from(campaigns)
    .where(and(eq(campaigns.id, campaignId), inArray(campaigns.state, [...rule.from])))
    .get()
  if (!current) return null
  const now = ctx.clock.now()
  const at = new Date(now).toISOString()
  const ends = rule.to === 'stopped' || rule.to === 'completed'
  const moved = ctx.db
    .update(campaigns)
    .set({
      state: rule.to,
      // The end of the import is still the campaign's creation.
      ...(transition === 'imported' ? {} : { updatedAt: at }),
      ...(rule.to === 'running' && current.startedAt === null ? { startedAt: at } : {}),
      ...(ends ? { completedAt: at } : {}),
      ...(rule.to === 'running' && current.state === 'paused' ? { breakerWindowResetAt: now } : {}),
      ...columns,
    })
    .where(and(eq(campaigns.id, campaignId), eq(campaigns.state, current.state)))
    .returning({ organizationId: campaigns.organizationId })
    .get()
  if (!moved) return null
  ctx.events.publish({ kind: 'campaign', organizationId: moved.organizationId, campaignId })
  return current.state
}
