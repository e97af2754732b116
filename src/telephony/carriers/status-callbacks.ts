import { eq } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { workflowRuns, type JsonObject, type WorkflowRunRow } from '../../db/schema'
import { transaction } from '../../db/transaction'
import { forbidden, notFound, unauthenticated } from '../../lib/errors'
import { isoNow } from '../../lib/clock'
import { isPlainObject } from '../../lib/values'
import {
  acknowledge,
  FINAL_STATUSES,
  recordProviderCallId,
  runById,
  runByProviderCallId,
  type CarrierCallStatus,
  type Carrier,
  type StatusUpdate,
  type Verdict,
  type WebhookAnswer,
  type WebhookRequest,
} from './carrier'
import type { CallOutcome } from '../provider'

/**
 * Carrier status callbacks: authenticated with the stored secret of the run's configuration before anything changes,
 * appended to the run's `logs.telephony_status_callbacks` (every one, duplicates and late ones included), and turned
 * into the call's single 'ended' report on the first final status. A finished run never moves again: a duplicate,
 * late or out-of-order callback only adds a log entry.
 */

export const RUN_NOT_FOUND = 'Run not found'

const FINAL_OUTCOMES: Record<Exclude<CarrierCallStatus, 'initiated' | 'ringing' | 'answered'>, CallOutcome> = {
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
}

/** Throws 401 / 403 unless the verdict is valid. */
export function requireValid(verdict: Verdict): void {
  if (verdict === 'unsigned') throw unauthenticated('Missing webhook signature')
  if (verdict === 'invalid') throw forbidden('Invalid webhook signature')
}

/** The credentials of the run's configuration; a run of a deleted configuration cannot be verified: not found. */
function runCredentials(ctx: AppContext, run: WorkflowRunRow) {
  const configuration =
    run.telephonyConfigurationId === null ? null : ctx.telephony.configurations.opened(run.telephonyConfigurationId)
  if (!configuration || configuration.organizationId !== run.organizationId) throw notFound(RUN_NOT_FOUND)
  return configuration.credentials
}

/** Verifies a webhook about a run of this carrier, or throws (404 for runs that are not its, 401/403 for signatures). */
export function verifiedRun(
  ctx: AppContext,
  carrier: Carrier,
  run: WorkflowRunRow | undefined,
  request: WebhookRequest,
) {
  if (!run || run.mode !== carrier.provider) throw notFound(RUN_NOT_FOUND)
  const credentials = runCredentials(ctx, run)
  requireValid(carrier.verify(request, credentials, { runId: run.id, nowMs: ctx.clock.now() }))
  return { run, credentials }
}

/**
 * A status callback for `runId` (in the URL we gave the carrier), or, without one, for the run whose carrier call id the
 * callback names (number-level webhooks, CDRs).
 */
export function handleStatusCallback(
  ctx: AppContext,
  carrier: Carrier,
  runId: number | null,
  request: WebhookRequest,
): WebhookAnswer {
  const update = carrier.parseStatus(request)
  const run =
    runId !== null
      ? runById(ctx, runId)
      : update?.providerCallId
        ? runByProviderCallId(ctx, carrier.provider, update.providerCallId)
        : undefined
  const verified = verifiedRun(ctx, carrier, run, request)
  if (update?.providerCallId && verified.run.providerCallId && update.providerCallId !== verified.run.providerCallId) {
    throw forbidden('The callback is about another call')
  }
  const ended = applyStatusUpdate(
    ctx,
    carrier,
    verified.run,
    update ?? { status: null, providerStatus: 'unrecognised' },
  )
  const providerCallId = update?.providerCallId ?? verified.run.providerCallId
  // A machine answered a call that is still up: no agent talks to it; its hang-up ends the call as voicemail.
  if (update?.machine && !ended && verified.run.state !== 'completed' && providerCallId) {
    void carrier.hangup(ctx, verified.credentials, providerCallId).catch((error) => {
      ctx.log.warn(
        { provider: carrier.provider, runId: verified.run.id, err: error },
        'hanging up a call a machine answered failed',
      )
    })
  }
  return acknowledge()
}

/** The transfer a run's call went through (`logs.transfer`, see carrier-transfer.ts); undefined when it was not transferred. */
export function recordedTransfer(logs: JsonObject): { destination: string; connectedAt: number } | undefined {
  const transfer = logs.transfer
  if (!isPlainObject(transfer)) return undefined
  const { destination, connected_at: connectedAt } = transfer
  if (typeof destination !== 'string' || typeof connectedAt !== 'string') return undefined
  return { destination, connectedAt: Date.parse(connectedAt) }
}

type CallbackEntry = JsonObject & { status: string; timestamp: string }

const answeredEntryTime = (entries: CallbackEntry[]) => {
  const answered = entries.find((entry) => entry.normalized_status === 'answered')
  return answered ? Date.parse(answered.timestamp) : null
}

/**
 * Appends the callback to the run's log, keeps what it taught (carrier call id, machine verdict), and ends the call on
 * its first final status. Returns whether this callback ended it.
 */
export function applyStatusUpdate(
  ctx: AppContext,
  carrier: Carrier,
  run: WorkflowRunRow,
  update: StatusUpdate,
): boolean {
  const at = ctx.clock.now()
  const ending = transaction(ctx, () => {
    const current = ctx.db.select().from(workflowRuns).where(eq(workflowRuns.id, run.id)).get()!
    const entries = (
      Array.isArray(current.logs.telephony_status_callbacks) ? current.logs.telephony_status_callbacks : []
    ) as CallbackEntry[]
    const entry: CallbackEntry = {
      status: update.providerStatus,
      normalized_status: update.status,
      timestamp: isoNow(ctx.clock),
      ...(update.providerCallId ? { call_id: update.providerCallId } : {}),
      ...(update.durationSeconds !== undefined ? { duration: update.durationSeconds } : {}),
      ...(update.answeredBy ? { answered_by: update.answeredBy } : {}),
    }
    const gathered: JsonObject = {
      ...current.gatheredContext,
      ...(update.answeredBy ? { answered_by: update.answeredBy } : {}),
      ...(update.machine ? { answering_machine_detected: true } : {}),
    }
    ctx.db
      .update(workflowRuns)
      .set({
        logs: { ...current.logs, telephony_status_callbacks: [...entries, entry] },
        gatheredContext: gathered,
      })
      .where(eq(workflowRuns.id, run.id))
      .run()
    if (update.providerCallId) recordProviderCallId(ctx, run.id, update.providerCallId)
    if (current.state === 'completed' || !update.status || !FINAL_STATUSES.has(update.status)) return null
    const machine = gathered.answering_machine_detected === true
    const outcome =
      update.status === 'completed' && machine
        ? 'voicemail'
        : FINAL_OUTCOMES[update.status as keyof typeof FINAL_OUTCOMES]
    const answeredAt = update.durationSeconds ? at - update.durationSeconds * 1000 : answeredEntryTime(entries)
    return {
      outcome,
      answeredAt: update.status === 'completed' ? (answeredAt ?? at) : null,
      transfer: recordedTransfer(current.logs),
    }
  })
  ctx.log.info(
    { provider: carrier.provider, runId: run.id, status: update.providerStatus, outcome: ending?.outcome },
    'carrier status callback',
  )
  if (!ending || !run.callId) return false
  ctx.telephony.report({
    kind: 'ended',
    callId: run.callId,
    outcome: ending.outcome,
    at,
    answeredAt: ending.answeredAt,
    providerStatus: update.providerStatus,
    ...(ending.transfer ? { transfer: ending.transfer } : {}),
  })
  return true
}
