import { and, eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowRuns, type CallType, type JsonObject, type WorkflowRunRow } from '../db/schema'
import { isoNow } from '../lib/clock'
import { transaction } from '../db/transaction'
import { liveSince } from '../instances/registry'
import {
  agentDispositionCodesJson,
  claimRunOfDeadInstance,
  insertRun,
  markRunStarted,
  openRunJson,
  openRunsOfMode,
  runOrganizationId,
  setAgentDispositionCodesJson,
  writeCompletedRun,
} from './queries'

/**
 * The run record every entry point shares (API trigger, campaign dialer, inbound calls): create it when a call is about
 * to be placed or has arrived, mark it running when media flows, finish it exactly once with its outcome, attach the
 * artifacts stored in `ctx.objects` (src/runs/artifacts.ts). Resolve what to run first with `findRunTarget`
 * (src/runs/target.ts).
 */

export type NewRun = {
  organizationId: number
  agentId: number
  /** The agent version the run executes (RunTarget.definitionId); in-progress calls keep it when the agent changes. */
  definitionId: number
  /** e.g. `WR-API-4821`, `WR-CAMPAIGN-3-17`, `ARI Inbound +4420…`. */
  name: string
  /** Provider name (`ari`, `twilio`, …) for calls, `webcall` (WEB_CALL_MODE) for a voice call from a browser, or `textchat`. */
  mode: string
  callType: CallType
  /** Template variables and call facts; `caller_number` and `called_number` (or `phone_number`) feed the usage filters. */
  initialContext?: JsonObject
  gatheredContext?: JsonObject
  campaignId?: number | null
  /** The campaign contact (CSV row) this attempt dials. */
  campaignContactId?: number | null
  telephonyConfigurationId?: number | null
  /** Our id for the call at the provider (the ARI channel id), chosen before dialing so its events find the run. */
  callId?: string | null
  /** The carrier's own id of the call, when known at creation (inbound calls). */
  providerCallId?: string | null
  /** The campaign traffic-split variant this call was placed for. */
  trafficVariantId?: string | null
  /** The spec's model_overrides (already validated), resolved when the conversation starts. */
  modelOverrides?: JsonObject | null
}

export type CreatedRun = { id: number; name: string }

/**
 * Creates a run in state `initialized`. The workflow's total_runs follows (database trigger). Plain SQL through the
 * connection's statement cache: every call placed goes through here.
 */
export function createRun(ctx: AppContext, run: NewRun): CreatedRun {
  const id = insertRun(ctx, {
    organizationId: run.organizationId,
    agentId: run.agentId,
    definitionId: run.definitionId,
    name: run.name,
    mode: run.mode,
    callType: run.callType,
    campaignId: run.campaignId ?? null,
    campaignContactId: run.campaignContactId ?? null,
    telephonyConfigurationId: run.telephonyConfigurationId ?? null,
    callId: run.callId ?? null,
    providerCallId: run.providerCallId ?? null,
    trafficVariantId: run.trafficVariantId ?? null,
    modelOverrides: run.modelOverrides ? JSON.stringify(run.modelOverrides) : null,
    initialContext: JSON.stringify(run.initialContext ?? {}),
    gatheredContext: JSON.stringify(run.gatheredContext ?? {}),
    createdAt: isoNow(ctx.clock),
    instanceId: ctx.instanceId,
  })
  ctx.events.publish({ kind: 'run', organizationId: run.organizationId, runId: id })
  return { id, name: run.name }
}

/**
 * Claims an open run that no live instance handles (its instance died), for this one to recover it. In a transaction:
 * of several surviving instances only one gets it. False when another did, or the run completed meanwhile.
 */
export function claimRunForRecovery(ctx: AppContext, runId: number): boolean {
  return transaction(ctx, () => claimRunOfDeadInstance(ctx, runId, ctx.instanceId, liveSince(ctx)))
}

/** Tells the live events stream that the run changed (its organization looked up only when someone listens). */
function announceRunChange(ctx: AppContext, runId: number): void {
  if (!ctx.events.hasListeners()) return
  const organizationId = runOrganizationId(ctx, runId)
  if (organizationId !== null) ctx.events.publish({ kind: 'run', organizationId, runId })
}

/** The run if it belongs to the organization. */
export function getRun(ctx: AppContext, organizationId: number, runId: number): WorkflowRunRow | null {
  return (
    ctx.db
      .select()
      .from(workflowRuns)
      .where(and(eq(workflowRuns.id, runId), eq(workflowRuns.organizationId, organizationId)))
      .get() ?? null
  )
}

/** `initialized` → `running` (media is flowing). False when the run was already running or finished: a duplicate. */
export function markRunRunning(ctx: AppContext, runId: number): boolean {
  const changed = markRunStarted(ctx, runId, isoNow(ctx.clock))
  if (changed) announceRunChange(ctx, runId)
  return changed
}

/** Keys to add or replace in a run's JSON objects; keys not named keep their values. */
export type RunContextPatch = {
  initialContext?: JsonObject
  gatheredContext?: JsonObject
  logs?: JsonObject
  annotations?: JsonObject
}

const mergeInto = (stored: JsonObject, patch: JsonObject | undefined) => (patch ? { ...stored, ...patch } : stored)

function patchedValues(run: WorkflowRunRow, patch: RunContextPatch) {
  return {
    initialContext: mergeInto(run.initialContext, patch.initialContext),
    gatheredContext: mergeInto(run.gatheredContext, patch.gatheredContext),
    logs: mergeInto(run.logs, patch.logs),
    annotations: mergeInto(run.annotations, patch.annotations),
  }
}

/** Shallow-merges call facts learnt while the call goes on (e.g. `caller_number` once dialled, the provider's call id). */
export function updateRun(ctx: AppContext, runId: number, patch: RunContextPatch): void {
  transaction(ctx, () => {
    const run = ctx.db.select().from(workflowRuns).where(eq(workflowRuns.id, runId)).get()
    if (!run) throw new Error(`Run ${runId} does not exist`)
    ctx.db.update(workflowRuns).set(patchedValues(run, patch)).where(eq(workflowRuns.id, runId)).run()
  })
  announceRunChange(ctx, runId)
}

/** Runs whose call or session is neither known to be alive nor finished end with this disposition. */
export const INTERRUPTED_DISPOSITION = 'interrupted'

export type RunOutcome = {
  /** Seconds the call was connected (answer to hang-up); 0 when it never connected. */
  durationSeconds: number
  /**
   * Why it ended: the disposition the conversation produced, else the end reason (`user_hangup`, `busy`, `no-answer`,
   * `failed`, `voicemail_detected`, `max_call_duration`, …). Stored as gathered_context.mapped_call_disposition (what the
   * usage report shows and filters) and added to the agent's call_disposition_codes.
   */
  disposition?: string | null
  /** Usage to keep beside the duration in usage_info (`llm`, `tts`, `stt`, …). */
  usage?: JsonObject
  /**
   * Replaces cost_info when given (null clears it). The usage report reads `service_token_usage` (integer) and
   * `charge_usd` (number) from it.
   */
  cost?: JsonObject | null
} & RunContextPatch

/**
 * Completes the run with its outcome, exactly once: true when this call completed it, false when it already was.
 * Setting usage_info is what puts the run in the usage report. Plain SQL: every call that ends goes through here.
 */
export function finishRun(ctx: AppContext, runId: number, outcome: RunOutcome): boolean {
  const finished = transaction(ctx, () => {
    const run = openRunJson(ctx, runId)
    if (!run) return false
    const { disposition } = outcome
    const merged = (stored: string, patch: JsonObject | undefined, extra?: JsonObject) =>
      patch || extra ? JSON.stringify({ ...(JSON.parse(stored) as JsonObject), ...patch, ...extra }) : stored
    if (disposition) addDispositionCode(ctx, run.workflow_id, disposition)
    writeCompletedRun(ctx, runId, {
      completedAt: isoNow(ctx.clock),
      usageInfo: JSON.stringify({ ...outcome.usage, call_duration_seconds: outcome.durationSeconds }),
      costInfo:
        outcome.cost === undefined ? run.cost_info : outcome.cost === null ? null : JSON.stringify(outcome.cost),
      initialContext: merged(run.initial_context, outcome.initialContext),
      gatheredContext: merged(
        run.gathered_context,
        outcome.gatheredContext,
        disposition ? { call_disposition: disposition, mapped_call_disposition: disposition } : undefined,
      ),
      logs: merged(run.logs, outcome.logs),
      annotations: merged(run.annotations, outcome.annotations),
    })
    return true
  })
  if (finished) announceRunChange(ctx, runId)
  return finished
}

function addDispositionCode(ctx: AppContext, agentId: number, code: string): void {
  const stored = agentDispositionCodesJson(ctx, agentId)
  if (stored === null) return
  const codes = JSON.parse(stored) as string[]
  if (codes.includes(code)) return
  setAgentDispositionCodesJson(ctx, agentId, JSON.stringify([...codes, code]))
}

/** The run mode of a voice call from a browser (api/web-calls): channel `web` in usage, no telephony minutes. */
export const WEB_CALL_MODE = 'webcall'

/** What an organization's concurrent call limit counts (calls/ and campaigns/ ask it here, with the rest of the run's record). */
export { openCallCount } from './queries'

/** Web calls of the organization not completed yet (waiting for their socket, or talking). */
export const openWebCallCount = (ctx: AppContext, organizationId: number) =>
  openRunsOfMode(ctx, organizationId, WEB_CALL_MODE)
