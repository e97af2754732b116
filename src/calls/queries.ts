import type { AppContext } from '../context'
import { HANDLED_BY_NO_LIVE_INSTANCE } from '../instances/queries'

/** The calls' statements written as SQL: runs found by their call, open calls for recovery, routing look-ups. */

/** A run as a call's report needs it. */
export type ReportedRun = { id: number; state: string; campaign_contact_id: number | null; logs: string }

export function runOfCall(ctx: AppContext, callId: string): ReportedRun | null {
  return ctx.sqlite
    .query<ReportedRun, [string]>('SELECT id, state, campaign_contact_id, logs FROM workflow_runs WHERE call_id = ?')
    .get(callId)
}

export function reportedRunById(ctx: AppContext, runId: number): ReportedRun | null {
  return ctx.sqlite
    .query<ReportedRun, [number]>('SELECT id, state, campaign_contact_id, logs FROM workflow_runs WHERE id = ?')
    .get(runId)
}

/** The contact's attempt in flight is this run's. */
export function isOpenAttemptOf(ctx: AppContext, contactId: number, runId: number): boolean {
  return (
    ctx.sqlite
      .query<{ id: number }, [number, number]>(
        `SELECT id FROM campaign_contacts WHERE id = ? AND last_run_id = ? AND state = 'dialing'`,
      )
      .get(contactId, runId) !== null
  )
}

/** A run whose call is not known to have ended, for recovery and the watchdog. */
export type OpenCall = {
  id: number
  call_id: string
  mode: string
  telephony_configuration_id: number | null
  campaign_contact_id: number | null
  created_at: string
  /** `running` once the call was answered. */
  state: string
  logs: string
}

const OPEN_CALLS = `SELECT id, call_id, mode, telephony_configuration_id, campaign_contact_id, created_at, state, logs
  FROM workflow_runs WHERE call_id IS NOT NULL AND state <> 'completed'`

/** Open calls that no live instance handles (`liveSince`: the liveness cutoff, ISO). */
export function openCallsOfDeadInstances(ctx: AppContext, liveSince: string): OpenCall[] {
  return ctx.sqlite.query<OpenCall, [string]>(`${OPEN_CALLS} AND ${HANDLED_BY_NO_LIVE_INSTANCE}`).all(liveSince)
}

/** The instance's open calls whose run was created before `cutoff` (ISO). */
export function openCallsOfInstanceCreatedBefore(ctx: AppContext, instanceId: string, cutoff: string): OpenCall[] {
  return ctx.sqlite
    .query<OpenCall, [string, string]>(`${OPEN_CALLS} AND instance_id = ? AND created_at < ?`)
    .all(instanceId, cutoff)
}

/** The state of the run a call id belongs to, or null when it is no run's. */
export function runStateOfCall(ctx: AppContext, callId: string): string | null {
  return (
    ctx.sqlite.query<{ state: string }, [string]>('SELECT state FROM workflow_runs WHERE call_id = ?').get(callId)
      ?.state ?? null
  )
}

/** Calls of the organization that may be up at once. */
export function concurrentCallLimit(ctx: AppContext, organizationId: number): number {
  return ctx.sqlite
    .query<{ limit: number }, [number]>('SELECT concurrent_call_limit AS "limit" FROM organizations WHERE id = ?')
    .get(organizationId)!.limit
}

/** The active configurations of a provider, any organization's. */
export function activeConfigurationIds(ctx: AppContext, provider: string): number[] {
  return ctx.sqlite
    .query<{ id: number }, [string]>(
      'SELECT id FROM telephony_configurations WHERE provider = ? AND inactive = 0 ORDER BY id',
    )
    .all(provider)
    .map((configuration) => configuration.id)
}

/** The organization of an active configuration of the provider; null when it is not one. */
export function activeConfigurationOrganization(
  ctx: AppContext,
  configurationId: number,
  provider: string,
): number | null {
  return (
    ctx.sqlite
      .query<{ organization_id: number }, [number, string]>(
        'SELECT organization_id FROM telephony_configurations WHERE id = ? AND provider = ? AND inactive = 0',
      )
      .get(configurationId, provider)?.organization_id ?? null
  )
}

export type ActiveNumber = {
  id: number
  address_normalized: string
  country_code: string | null
  inbound_workflow_id: number | null
}

export function activeNumbersOf(ctx: AppContext, configurationId: number): ActiveNumber[] {
  return ctx.sqlite
    .query<ActiveNumber, [number]>(
      'SELECT id, address_normalized, country_code, inbound_workflow_id FROM phone_numbers WHERE telephony_configuration_id = ? AND is_active = 1 ORDER BY id',
    )
    .all(configurationId)
}
