import type { AppContext } from '../context'
import type { SqlDatabase } from '../db/open'
import type { CampaignState } from '../db/schema/campaigns'
import type { DialRhythm } from './pacer'

/**
 * The campaigns' statements written as SQL: the dialer's (prepared once per scheduler), the contacts import and its
 * clean-up, closing an attempt, and the progress and traffic-split counts.
 */

export type RunningCampaign = {
  id: number
  organization_id: number
  workflow_id: number | null
  schedule_config: string | null
  traffic_split: string | null
  allocation_seed: string
  telephony_configuration_id: number | null
  model_overrides: string | null
}

/** What decides whether a campaign may dial now: its state, limits and dial rhythm (campaigns/pacer.ts). */
export type DialGate = {
  state: CampaignState
  organization_id: number
  rate_limit_per_second: number
  max_concurrency: number | null
  concurrent_call_limit: number
  /** The campaign's contacts whose attempt is open. */
  dialing: number
  dial_rhythm_rate: number | null
  dial_rhythm_started_at: number | null
  dial_rhythm_dials: number
  last_dial_at: number | null
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
  SELECT id, organization_id, workflow_id, schedule_config, traffic_split, allocation_seed, telephony_configuration_id,
         model_overrides
    FROM campaigns WHERE state = 'running'`

const DIAL_GATE = `
  SELECT c.state, c.organization_id, c.rate_limit_per_second, c.max_concurrency, o.concurrent_call_limit,
         (SELECT count(*) FROM campaign_contacts WHERE campaign_id = c.id AND state = 'dialing') AS dialing,
         c.dial_rhythm_rate, c.dial_rhythm_started_at, c.dial_rhythm_dials, c.last_dial_at
    FROM campaigns c JOIN organizations o ON o.id = c.organization_id
   WHERE c.id = ?`

/** Every dial writes one run: the campaign's dial starts are its runs' creation times, latest first. */
const DIAL_START_BACK = 'SELECT created_at FROM workflow_runs WHERE campaign_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?'

/** Due contacts are taken oldest due time first; a contact's first attempt is due from the campaign's creation. */
const CLAIM_NEXT_CONTACT = `
  UPDATE campaign_contacts SET state = 'dialing', attempts = attempts + 1
   WHERE id = (SELECT id FROM campaign_contacts
                WHERE campaign_id = ? AND state = 'queued' AND next_attempt_at <= ?
                ORDER BY next_attempt_at, id LIMIT 1)
  RETURNING id, phone_number, context, greeting_override, attempts, last_outcome`

const RECORD_DIAL = `
  UPDATE campaigns SET processed_rows = processed_rows + 1, dial_rhythm_rate = ?, dial_rhythm_started_at = ?,
         dial_rhythm_dials = ?, last_dial_at = ?
   WHERE id = ?`

/** The dialer's prepared statements. */
export function schedulerQueries(ctx: AppContext) {
  const runningCampaigns = ctx.sqlite.query<RunningCampaign, []>(RUNNING_CAMPAIGNS)
  const dialGate = ctx.sqlite.query<DialGate, [number]>(DIAL_GATE)
  const dialStartBack = ctx.sqlite.query<{ created_at: string }, [number, number]>(DIAL_START_BACK)
  const hasOpenContacts = ctx.sqlite.query<{ n: number }, [number]>(
    `SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = ? AND state IN ('queued', 'dialing')) AS n`,
  )
  const hasDueContact = ctx.sqlite.query<{ n: number }, [number, number]>(
    `SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = ? AND state = 'queued' AND next_attempt_at <= ?) AS n`,
  )
  const claimNextContact = ctx.sqlite.query<ClaimedContact, [number, number]>(CLAIM_NEXT_CONTACT)
  const recordContactRun = ctx.sqlite.query<never, [number, string | null, number]>(
    'UPDATE campaign_contacts SET last_run_id = ?, variant_id = ? WHERE id = ?',
  )
  const recordDial = ctx.sqlite.query<never, [number, number, number, number, number]>(RECORD_DIAL)
  const noteOutsideSchedule = ctx.sqlite.query<never, [number, number, number]>(
    `UPDATE campaigns SET outside_schedule_logged_for = ?
      WHERE id = ? AND (outside_schedule_logged_for IS NULL OR outside_schedule_logged_for <> ?)`,
  )
  return {
    runningCampaigns: () => runningCampaigns.all(),
    /** Null when the campaign is gone. */
    dialGate: (campaignId: number) => dialGate.get(campaignId),
    /** When the dial `back` dials before the latest one started (0: the latest), or null when there were fewer. */
    dialStartBack(campaignId: number, back: number): number | null {
      const run = dialStartBack.get(campaignId, back)
      return run ? Date.parse(run.created_at) : null
    },
    hasOpenContacts: (campaignId: number) => hasOpenContacts.get(campaignId)!.n !== 0,
    hasDueContact: (campaignId: number, now: number) => hasDueContact.get(campaignId, now)!.n !== 0,
    /** Takes the next due contact (state `dialing`, one more attempt), or null when none is due. */
    claimNextContact: (campaignId: number, now: number) => claimNextContact.get(campaignId, now),
    /** The run a claimed contact's attempt created, one more processed row and the rhythm after this dial. */
    recordDial(
      dial: { campaignId: number; contactId: number; runId: number; variantId: string | null },
      rhythm: DialRhythm,
    ) {
      recordContactRun.run(dial.runId, dial.variantId, dial.contactId)
      recordDial.run(rhythm.rate, rhythm.startedAt, rhythm.dials, rhythm.lastAt, dial.campaignId)
    },
    /**
     * Records that the campaign was logged outside its schedule until `opening` (ms, -1: none near); false when that
     * was recorded already (by this instance or another).
     */
    noteOutsideSchedule: (campaignId: number, opening: number) =>
      noteOutsideSchedule.run(opening, campaignId, opening).changes === 1,
  }
}

/**
 * Deletes a campaign still importing with its contacts (`campaignId`), or (null) every import cut off: those of
 * instances not heartbeating since `liveSince`. Returns how many campaigns.
 */
export function deleteImportingCampaigns(ctx: AppContext, campaignId: number | null, liveSince: string): number {
  const which =
    campaignId === null
      ? `state = 'importing' AND (import_instance_id IS NULL OR import_instance_id NOT IN (SELECT id FROM instances WHERE heartbeat_at >= ?))`
      : `state = 'importing' AND id = ?`
  const params = campaignId === null ? [liveSince] : [campaignId]
  ctx.sqlite
    .query(`DELETE FROM campaign_contacts WHERE campaign_id IN (SELECT id FROM campaigns WHERE ${which})`)
    .run(...params)
  return ctx.sqlite.query(`DELETE FROM campaigns WHERE ${which}`).run(...params).changes
}

/** A contact to store: row number, phone number, context JSON, greeting override JSON. */
export type NewContactRow = [number, string, string, string | null]

/** Rows per INSERT statement: fewer round trips into SQLite (64 × 7 bound values stays far below its limit). */
export const CONTACT_INSERT_CHUNK_ROWS = 64

/**
 * The import's statements for one campaign, prepared once: `insert` stores up to CONTACT_INSERT_CHUNK_ROWS contacts
 * (queued, first attempt due at `firstAttemptAt`), skipping a phone number the campaign already has (the unique index),
 * and returns how many it wrote; `storedRowNumber` tells which row a phone number was stored from.
 */
export function contactImportQueries(
  sqlite: SqlDatabase,
  campaign: { campaignId: number; organizationId: number; firstAttemptAt: number },
) {
  const insertRows = (count: number) =>
    sqlite.prepare(
      `INSERT INTO campaign_contacts (campaign_id, organization_id, row_number, phone_number, context, greeting_override, state, attempts, next_attempt_at)
     VALUES ${Array.from({ length: count }, () => "(?, ?, ?, ?, ?, ?, 'queued', 0, ?)").join(', ')}
     ON CONFLICT (campaign_id, phone_number) DO NOTHING`,
    )
  const insertOne = insertRows(1)
  const insertChunk = insertRows(CONTACT_INSERT_CHUNK_ROWS)
  const storedRowNumber = sqlite.prepare<{ row_number: number }, [number, string]>(
    'SELECT row_number FROM campaign_contacts WHERE campaign_id = ? AND phone_number = ?',
  )
  const values = (row: NewContactRow) => [
    campaign.campaignId,
    campaign.organizationId,
    row[0],
    row[1],
    row[2],
    row[3],
    campaign.firstAttemptAt,
  ]
  return {
    insert: (rows: NewContactRow[]): number =>
      rows.length === CONTACT_INSERT_CHUNK_ROWS
        ? insertChunk.run(...rows.flatMap(values)).changes
        : rows.reduce((sum, row) => sum + insertOne.run(...values(row)).changes, 0),
    storedRowNumber: (phone: string): number | undefined => storedRowNumber.get(campaign.campaignId, phone)?.row_number,
  }
}

/** Copies the parent's closed contacts whose last outcome is one of `outcomes` into a redial campaign, queued. */
export function copyContactsForRedial(
  ctx: AppContext,
  redial: { campaignId: number; parentCampaignId: number; firstAttemptAt: number },
  outcomes: readonly string[],
): number {
  return ctx.sqlite
    .query(
      `INSERT INTO campaign_contacts (campaign_id, organization_id, row_number, phone_number, context, greeting_override, state, attempts, next_attempt_at)
       SELECT ?, organization_id, row_number, phone_number, context, greeting_override, 'queued', 0, ?
         FROM campaign_contacts WHERE campaign_id = ? AND state = 'done' AND last_outcome IN (${outcomes.map(() => '?').join(', ')})`,
    )
    .run(redial.campaignId, redial.firstAttemptAt, redial.parentCampaignId, ...outcomes).changes
}

/** A contact with its campaign's settings, for closing its attempt. */
export type SettlingContact = {
  id: number
  campaign_id: number
  state: string
  attempts: number
  campaign_state: CampaignState
  retry_config: string
  circuit_breaker: string
  breaker_window_reset_at: number
}

export function contactWithCampaign(ctx: AppContext, contactId: number): SettlingContact | null {
  return ctx.sqlite
    .query<SettlingContact, [number]>(
      `SELECT c.id, c.campaign_id, c.state, c.attempts, k.state AS campaign_state, k.retry_config, k.circuit_breaker,
            k.breaker_window_reset_at
       FROM campaign_contacts c JOIN campaigns k ON k.id = c.campaign_id
      WHERE c.id = ?`,
    )
    .get(contactId)
}

/**
 * Closes a contact's attempt: queued again (due at `nextAttemptAt`) or closed (`done`), keeping the attempt's outcome
 * and run on the contact; a null `nextAttemptAt` leaves the due time as it was.
 */
export function closeContactAttempt(
  ctx: AppContext,
  contactId: number,
  attempt: { state: 'queued' | 'done'; nextAttemptAt: number | null; outcome: string; runId: number },
): void {
  ctx.sqlite
    .query(
      `UPDATE campaign_contacts SET state = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_outcome = ?,
              last_run_id = ? WHERE id = ?`,
    )
    .run(attempt.state, attempt.nextAttemptAt, attempt.outcome, attempt.runId, contactId)
}

/** One more executed attempt on the campaign's counters: queued again, or closed without reaching the contact. */
export function countExecutedAttempt(
  ctx: AppContext,
  campaignId: number,
  attempt: { requeued: boolean; closedUnreached: boolean },
): void {
  ctx.sqlite
    .query(
      `UPDATE campaigns SET executed_count = executed_count + 1, total_queued_count = total_queued_count + ?,
            failed_rows = failed_rows + ? WHERE id = ?`,
    )
    .run(attempt.requeued ? 1 : 0, attempt.closedUnreached ? 1 : 0, campaignId)
}

export type FinishedRun = { id: number; completed_at: string; disposition: string | null }

/** The campaign's runs completed after `after` (ISO time). */
export function runsCompletedSince(ctx: AppContext, campaignId: number, after: string): FinishedRun[] {
  return ctx.sqlite
    .query<FinishedRun, [number, string]>(
      'SELECT id, completed_at, disposition FROM workflow_runs WHERE campaign_id = ? AND completed_at > ?',
    )
    .all(campaignId, after)
}

/** How many of the campaign's contacts are closed, and how many of its finished calls failed, were busy or unanswered. */
/** A campaign's contacts by where they are; a contact queued again after an attempt is a retry due. */
export type ContactCounts = { waiting: number; dialing: number; retries_due: number; done: number; cancelled: number }

export function campaignProgressCounts(ctx: AppContext, campaignId: number) {
  const contacts = ctx.sqlite
    .query<ContactCounts, [number]>(
      `SELECT count(CASE WHEN state = 'queued' AND attempts = 0 THEN 1 END) AS waiting,
              count(CASE WHEN state = 'dialing' THEN 1 END) AS dialing,
              count(CASE WHEN state = 'queued' AND attempts > 0 THEN 1 END) AS retries_due,
              count(CASE WHEN state = 'done' THEN 1 END) AS done,
              count(CASE WHEN state = 'cancelled' THEN 1 END) AS cancelled
         FROM campaign_contacts WHERE campaign_id = ?`,
    )
    .get(campaignId)!
  const failedCalls = ctx.sqlite
    .query<{ n: number }, [number]>(
      `SELECT count(*) AS n FROM workflow_runs WHERE campaign_id = ? AND completed_at IS NOT NULL AND disposition IN ('failed', 'busy', 'no-answer')`,
    )
    .get(campaignId)!.n
  return { contacts, failedCalls }
}

export type VariantCount = { variant_id: string | null; n: number }

/** Per traffic variant of the campaign: contacts allocated, calls placed, finished calls' outcomes, agent versions used. */
export function variantCounts(ctx: AppContext, campaignId: number) {
  return {
    assigned: ctx.sqlite
      .query<VariantCount, [number]>(
        'SELECT variant_id, count(*) AS n FROM campaign_contacts WHERE campaign_id = ? AND variant_id IS NOT NULL GROUP BY variant_id',
      )
      .all(campaignId),
    placed: ctx.sqlite
      .query<VariantCount, [number]>(
        'SELECT traffic_variant_id AS variant_id, count(*) AS n FROM workflow_runs WHERE campaign_id = ? GROUP BY traffic_variant_id',
      )
      .all(campaignId),
    outcomes: ctx.sqlite
      .query<VariantCount & { disposition: string }, [number]>(
        `SELECT traffic_variant_id AS variant_id, disposition, count(*) AS n FROM workflow_runs
      WHERE campaign_id = ? AND completed_at IS NOT NULL GROUP BY traffic_variant_id, disposition`,
      )
      .all(campaignId),
    versions: ctx.sqlite
      .query<VariantCount & { definition_id: number; version_number: number | null }, [number]>(
        `SELECT r.traffic_variant_id AS variant_id, r.definition_id, d.version_number, count(*) AS n
       FROM workflow_runs r LEFT JOIN workflow_definitions d ON d.id = r.definition_id
      WHERE r.campaign_id = ? GROUP BY r.traffic_variant_id, r.definition_id, d.version_number`,
      )
      .all(campaignId),
  }
}
