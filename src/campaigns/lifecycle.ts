import { and, eq } from 'drizzle-orm'
import { liveSince } from '../instances/registry'
import type { AppContext } from '../context'
import { campaignLogs, campaigns, type CampaignLogLevel, type CampaignState } from '../db/schema/campaigns'
import { notFound, refused } from '../lib/errors'
import { isoNow } from '../lib/clock'
import { transaction } from '../db/transaction'
import { deleteImportingCampaigns } from './queries'
import { applyTransition, CAMPAIGN_TRANSITIONS } from './state-machine'

/** The transitions a client asks for over the API. */
export type CampaignAction = 'start' | 'pause' | 'resume' | 'stop'

const ACTION_LOGS: Record<CampaignAction, { event: string; message: string }> = {
  start: { event: 'campaign_started', message: 'Campaign started' },
  pause: { event: 'campaign_paused', message: 'Campaign paused' },
  resume: { event: 'campaign_resumed', message: 'Campaign resumed' },
  stop: {
    event: 'campaign_stopped',
    message: 'Campaign stopped: queued contacts will not be dialled; calls in progress finish',
  },
}

const quoted = (states: readonly CampaignState[]) => states.map((state) => `'${state}'`).join(' or ')

export function appendCampaignLog(
  ctx: AppContext,
  campaignId: number,
  level: CampaignLogLevel,
  event: string,
  message: string,
  details: Record<string, unknown> | null = null,
): void {
  ctx.db
    .insert(campaignLogs)
    .values({ campaignId, ts: isoNow(ctx.clock), level, event, message, details })
    .run()
  const log =
    level === 'error'
      ? ctx.log.error.bind(ctx.log)
      : level === 'warning'
        ? ctx.log.warn.bind(ctx.log)
        : ctx.log.info.bind(ctx.log)
  log({ campaignId, event, ...(details ? { details } : {}) }, message)
}

/**
 * Moves a campaign of the organization through start / pause / resume / stop, with its log entry, in one
 * transaction. A wrong state is a 400 naming the current state.
 */
export function transitionCampaign(
  ctx: AppContext,
  organizationId: number,
  campaignId: number,
  action: CampaignAction,
): void {
  const transition = CAMPAIGN_TRANSITIONS[action]
  transaction(ctx, () => {
    const campaign = ctx.db
      .select({ state: campaigns.state })
      .from(campaigns)
      .where(and(eq(campaigns.id, campaignId), eq(campaigns.organizationId, organizationId)))
      .get()
    if (!campaign || campaign.state === 'importing') throw notFound('Campaign not found')
    if (!transition.from.includes(campaign.state)) {
      throw refused(
        `Campaign must be in ${quoted(transition.from)} state to ${action}, current state: ${campaign.state}`,
      )
    }
    applyTransition(ctx, campaignId, action)
    const resumes = transition.to === 'running' && campaign.state === 'paused'
    const event = ACTION_LOGS[resumes ? 'resume' : action]
    appendCampaignLog(ctx, campaignId, 'info', event.event, event.message, { from: campaign.state, to: transition.to })
  })
}

/**
 * Removes a campaign still importing (its import failed) with the contacts written so far; without an id, every import
 * whose instance is no longer live.
 */
export function discardImportingCampaigns(ctx: AppContext, campaignId: number | null = null): number {
  return transaction(ctx, () => deleteImportingCampaigns(ctx, campaignId, liveSince(ctx)))
}
