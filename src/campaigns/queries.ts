import type { AppContext } from '../context'

/** The campaigns' statements written as SQL: the dialer's (prepared once per scheduler) and the import clean-up. */

export type RunningCampaign = {
  id: number
  organization_id: number
  workflow_id: number | null
  rate_limit_per_second: number
  max_concurrency: number | null
  schedule_config: string | null
  traffic_split: string | null
  allocation_seed: string
  telephony_configuration_id: number | null
  model_overrides: string | null
  concurrent_call_limit: number
}

export type ClaimedContact = {
  id: number
  phone_number: string
  context: string
  greeting_override: string | null
  attempts: number
  last_outcome: string | null
}

const RUNNING_CAMPAIGNS = `
  SELECT c.id, c.organization_id, c.workflow_id, c.rate_limit_per_second, c.max_concurrency, c.schedule_config,
         c.traffic_split, c.allocation_seed, c.telephony_configuration_id, c.model_overrides, o.concurrent_call_limit
    FROM campaigns c JOIN organizations o ON o.id = c.organization_id
   WHERE c.state = 'running'`

/** Due contacts are taken oldest due time first; a contact's first attempt is due from the campaign's creation. */
const CLAIM_NEXT_CONTACT = `
  UPDATE campaign_contacts SET state = 'dialing', attempts = attempts + 1
   WHERE id = (SELECT id FROM campaign_contacts
                WHERE campaign_id = ? AND state = 'queued' AND next_attempt_at <= ?
                ORDER BY next_attempt_at, id LIMIT 1)
  RETURNING id, phone_number, context, greeting_override, attempts, last_outcome`

/** The dialer's prepared statements. */
export function schedulerQueries(ctx: AppContext) {
  const runningCampaigns = ctx.sqlite.query<RunningCampaign, []>(RUNNING_CAMPAIGNS)
  const countDialing = ctx.sqlite.query<{ n: number }, [number]>(
    `SELECT count(*) AS n FROM campaign_contacts WHERE campaign_id = ? AND state = 'dialing'`,
  )
  const hasOpenContacts = ctx.sqlite.query<{ n: number }, [number]>(
    `SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = ? AND state IN ('queued', 'dialing')) AS n`,
  )
  const hasDueContact = ctx.sqlite.query<{ n: number }, [number, number]>(
    `SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = ? AND state = 'queued' AND next_attempt_at <= ?) AS n`,
  )
  const claimNextContact = ctx.sqlite.query<ClaimedContact, [number, number]>(CLAIM_NEXT_CONTACT)
  return {
    runningCampaigns: () => runningCampaigns.all(),
    dialingCount: (campaignId: number) => countDialing.get(campaignId)!.n,
    hasOpenContacts: (campaignId: number) => hasOpenContacts.get(campaignId)!.n !== 0,
    hasDueContact: (campaignId: number, now: number) => hasDueContact.get(campaignId, now)!.n !== 0,
    /** Takes the next due contact (state `dialing`, one more attempt), or null when none is due. */
    claimNextContact: (campaignId: number, now: number) => claimNextContact.get(campaignId, now),
    /** The run a claimed contact's attempt created, and one more processed row for its campaign. */
    recordDial(campaignId: number, contactId: number, runId: number, variantId: string | null): void {
      ctx.sqlite
        .query('UPDATE campaign_contacts SET last_run_id = ?, variant_id = ? WHERE id = ?')
        .run(runId, variantId, contactId)
      ctx.sqlite.query('UPDATE campaigns SET processed_rows = processed_rows + 1 WHERE id = ?').run(campaignId)
    },
  }
}

/** Deletes campaigns still importing (one, or all of them for null) with their contacts; returns how many campaigns. */
export function deleteImportingCampaigns(ctx: AppContext, campaignId: number | null): number {
  const which = `state = 'importing' AND (? IS NULL OR id = ?)`
  ctx.sqlite
    .query(`DELETE FROM campaign_contacts WHERE campaign_id IN (SELECT id FROM campaigns WHERE ${which})`)
    .run(campaignId, campaignId)
  return ctx.sqlite.query(`DELETE FROM campaigns WHERE ${which}`).run(campaignId, campaignId).changes
}

/** A campaign's contacts by where they are; a contact queued again after an attempt is a retry due. */
export type ContactCounts = { waiting: number; dialing: number; retries_due: number; done: number; cancelled: number }

export function contactCounts(ctx: AppContext, campaignId: number): ContactCounts {
  return ctx.sqlite
    .query<ContactCounts, [number]>(
      `SELECT coalesce(sum(state = 'queued' AND attempts = 0), 0) AS waiting,
              coalesce(sum(state = 'dialing'), 0) AS dialing,
              coalesce(sum(state = 'queued' AND attempts > 0), 0) AS retries_due,
              coalesce(sum(state = 'done'), 0) AS done,
              coalesce(sum(state = 'cancelled'), 0) AS cancelled
         FROM campaign_contacts WHERE campaign_id = ?`,
    )
    .get(campaignId)!
}
