import { and, eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowRuns, type CallType, type JsonObject, type WorkflowRunRow } from '../db/schema'
import { isoNow } from '../lib/clock'
import { transaction } from '../db/transaction'

/**
 * The run record every entry point shares (API trigger, campaign dialer, inbound calls): create it when a call is about
 * to be placed or has arrived, mark it running when media flows, finish it exactly once with its outcome, attach the
 * artifacts stored in `ctx.objects` (src/runs/artifacts.ts). Resolve what to run first with `findRunTarget`
 * (src/runs/target.ts).
 */

export type NewRun = {
  organizationId: number
  workflowId: number
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
  const { id } = ctx.sqlite
    .query<{ id: number }, (string | number | null)[]>(
      `INSERT INTO workflow_runs (organization_id, workflow_id, definition_id, name, mode, call_type, campaign_id, campaign_contact_id,
       telephony_configuration_id, call_id, provider_call_id, traffic_variant_id, model_overrides, initial_context, gathered_context, logs, annotations, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', ?) RETURNING id`,
    )
    .get(
      run.organizationId,
      run.workflowId,
      run.definitionId,
      run.name,
      run.mode,
      run.callType,
      run.campaignId ?? null,
      run.campaignContactId ?? null,
      run.telephonyConfigurationId ?? null,
      run.callId ?? null,
      run.providerCallId ?? null,
      run.trafficVariantId ?? null,
      run.modelOverrides ? JSON.stringify(run.modelOverrides) : null,
      JSON.stringify(run.initialContext ?? {}),
      JSON.stringify(run.gatheredContext ?? {}),
      isoNow(ctx.clock),
    )!
  ctx.events.publish({ kind: 'run', organizationId: run.organizationId, runId: id })
  return { id, name: run.name }
}

/** Tells the live events stream that the run changed (its organization looked up only when someone listens). */
function announceRunChange(ctx: AppContext, runId: number): void {
  if (!ctx.events.hasListeners()) return
  const run = ctx.sqlite
    .query<{ organization_id: number }, [number]>('SELECT organization_id FROM workflow_runs WHERE id = ?')
    .get(runId)
  if (run) ctx.events.publish({ kind: 'run', organizationId: run.organization_id, runId })
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
  const changed =
    ctx.sqlite
      .query(`UPDATE workflow_runs SET state = 'running', started_at = ? WHERE id = ? AND state = 'initialized'`)
      .run(isoNow(ctx.clock), runId).changes > 0
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

type OpenRunJson = {
  workflow_id: number
  initial_context: string
  gathered_context: string
  logs: string
  annotations: string
  cost_info: string | null
}

/**
 * Completes the run with its outcome, exactly once: true when this call completed it, false when it already was.
 * Setting usage_info is what puts the run in the usage report. Plain SQL: every call that ends goes through here.
 */
export function finishRun(ctx: AppContext, runId: number, outcome: RunOutcome): boolean {
  const finished = transaction(ctx, () => {
    const run = ctx.sqlite
      .query<OpenRunJson, [number]>(
        `SELECT workflow_id, initial_context, gathered_context, logs, annotations, cost_info FROM workflow_runs WHERE id = ? AND state <> 'completed'`,
      )
      .get(runId)
    if (!run) return false
    const { disposition } = outcome
    const merged = (stored: string, patch: JsonObject | undefined, extra?: JsonObject) =>
      patch || extra ? JSON.stringify({ ...(JSON.parse(stored) as JsonObject), ...patch, ...extra }) : stored
    if (disposition) addDispositionCode(ctx, run.workflow_id, disposition)
    ctx.sqlite
      .query(
        `UPDATE workflow_runs SET state = 'completed', completed_at = ?, usage_info = ?, cost_info = ?,
         initial_context = ?, gathered_context = ?, logs = ?, annotations = ? WHERE id = ?`,
      )
      .run(
        isoNow(ctx.clock),
        JSON.stringify({ ...outcome.usage, call_duration_seconds: outcome.durationSeconds }),
        outcome.cost === undefined ? run.cost_info : outcome.cost === null ? null : JSON.stringify(outcome.cost),
        merged(run.initial_context, outcome.initialContext),
        merged(
          run.gathered_context,
          outcome.gatheredContext,
          disposition ? { call_disposition: disposition, mapped_call_disposition: disposition } : undefined,
        ),
        merged(run.logs, outcome.logs),
        merged(run.annotations, outcome.annotations),
        runId,
      )
    return true
  })
  if (finished) announceRunChange(ctx, runId)
  return finished
}

/**
 * Writes an outcome onto a run that is already completed (a call's hang-up report may complete it before its
 * conversation has written what it produced): contexts, logs and annotations merged, usage merged with the stored call
 * duration kept, cost replaced when given. False when the run is not completed.
 */
export function amendCompletedRun(
  ctx: AppContext,
  runId: number,
  outcome: Omit<RunOutcome, 'durationSeconds'>,
): boolean {
  const amended = transaction(ctx, () => {
    const run = ctx.db
      .select()
      .from(workflowRuns)
      .where(and(eq(workflowRuns.id, runId), eq(workflowRuns.state, 'completed')))
      .get()
    if (!run) return false
    const { disposition } = outcome
    if (disposition) addDispositionCode(ctx, run.workflowId, disposition)
    const values = patchedValues(run, {
      ...outcome,
      gatheredContext: {
        ...outcome.gatheredContext,
        ...(disposition ? { call_disposition: disposition, mapped_call_disposition: disposition } : {}),
      },
    })
    ctx.db
      .update(workflowRuns)
      .set({
        ...values,
        usageInfo: {
          ...run.usageInfo,
          ...outcome.usage,
          call_duration_seconds: run.usageInfo?.call_duration_seconds ?? 0,
        },
        ...(outcome.cost === undefined ? {} : { costInfo: outcome.cost }),
      })
      .where(eq(workflowRuns.id, runId))
      .run()
    return true
  })
  if (amended) announceRunChange(ctx, runId)
  return amended
}

function addDispositionCode(ctx: AppContext, workflowId: number, code: string): void {
  const workflow = ctx.sqlite
    .query<{ codes: string }, [number]>('SELECT call_disposition_codes AS codes FROM workflows WHERE id = ?')
    .get(workflowId)
  if (!workflow) return
  const codes = JSON.parse(workflow.codes) as string[]
  if (codes.includes(code)) return
  ctx.sqlite
    .query('UPDATE workflows SET call_disposition_codes = ? WHERE id = ?')
    .run(JSON.stringify([...codes, code]), workflowId)
}

/** Calls of the organization placed and not finished yet, whatever started them: what its concurrent call limit counts. */
/** The run mode of a voice call from a browser (api/web-calls): channel `web` in usage, no telephony minutes. */
export const WEB_CALL_MODE = 'webcall'

/** Web calls of the organization not completed yet (waiting for their socket, or talking). */
export function openWebCallCount(ctx: AppContext, organizationId: number): number {
  return ctx.sqlite
    .query<{ n: number }, [number, string]>(
      `SELECT count(*) AS n FROM workflow_runs WHERE organization_id = ? AND call_id IS NOT NULL AND mode = ? AND state <> 'completed'`,
    )
    .get(organizationId, WEB_CALL_MODE)!.n
}

export function openCallCount(ctx: AppContext, organizationId: number): number {
  return ctx.sqlite
    .query<{ n: number }, [number]>(
      `SELECT count(*) AS n FROM workflow_runs WHERE organization_id = ? AND call_id IS NOT NULL AND state <> 'completed'`,
    )
    .get(organizationId)!.n
}
