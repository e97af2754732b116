import type { AppContext } from '../context'
import type { JsonObject } from '../db/schema'
import { transaction } from '../db/transaction'
import { databaseUnavailable, whenDatabaseAnswers } from '../db/when-answering'
import { isPlainObject } from '../lib/values'
import { attachArtifact } from '../runs/artifacts'
import { connectedSeconds, conversationUnderWay, reportedCallOf } from '../runs/call-end'
import { finishRun, markRunRunning, updateRun, type RunOutcome } from '../runs/service'
import type { CallOutcome, CallReport } from '../telephony/provider'
import { isOpenAttemptOf, reportedRunById, runOfCall } from './queries'

/** The disposition a run gets from how its call ended (before any conversation sets a richer one). */
export const OUTCOME_DISPOSITIONS: Record<CallOutcome, string> = {
  completed: 'completed',
  busy: 'busy',
  no_answer: 'no-answer',
  voicemail: 'voicemail_detected',
  failed: 'failed',
  canceled: 'canceled',
}

/**
 * What a call's end does to the campaign contact it dialled, inside the caller's transaction. campaigns/ (a layer above
 * calls/) provides it as `contactAttempts`; src/boot.ts and src/background.ts pass it in.
 */
export type ContactAttempts = {
  settle(ctx: AppContext, contactId: number, outcome: CallOutcome, runId: number): void
  retryInterrupted(ctx: AppContext, contactId: number, runId: number): void
}

/**
 * Applies a provider's call report to the run it belongs to (found by call id) and, for campaign calls, to the
 * contact's attempt, in one transaction. Reports for unknown calls and reports after the end are ignored, so a
 * provider may repeat itself safely. Returns whether anything changed.
 *
 * A run's end is written once. Without a conversation (never answered, failed before one started) the report completes
 * it and settles the campaign attempt. With a conversation under way (a run session opened on it: `logs.session`) the
 * report only writes the call's end into `logs.telephony`; the run session completes the run with it once the
 * conversation has written what it produced, and the attempt is settled in that transaction (`settleReportedAttempt`,
 * calls/voice.ts). Should the process die in between, recovery completes the run from `logs.telephony` (recovery.ts).
 *
 * A run its conversation completed before the call ended (its models could not be used) keeps what it has, but the
 * call's end still settles the campaign attempt when that attempt is this run's and is still open.
 */
export function applyCallReport(ctx: AppContext, report: CallReport, attempts: ContactAttempts): boolean {
  return transaction(ctx, () => {
    const run = runOfCall(ctx, report.callId)
    if (!run) return false
    if (run.state === 'completed') {
      if (
        report.kind === 'ended' &&
        run.campaign_contact_id !== null &&
        isOpenAttemptOf(ctx, run.campaign_contact_id, run.id)
      ) {
        attempts.settle(ctx, run.campaign_contact_id, report.outcome, run.id)
        return true
      }
      return false
    }
    if (report.kind === 'answered') return markRunRunning(ctx, run.id)
    const logs = JSON.parse(run.logs) as JsonObject
    if (reportedCallOf(logs)) return false
    if (report.recordingKey) attachArtifact(ctx, run.id, 'recording', report.recordingKey)
    const outcome = callOutcome(report)
    if (conversationUnderWay(logs)) {
      updateRun(ctx, run.id, { gatheredContext: outcome.gatheredContext, logs: outcome.logs })
      return true
    }
    const finished = finishRun(ctx, run.id, outcome)
    if (finished && run.campaign_contact_id !== null)
      attempts.settle(ctx, run.campaign_contact_id, report.outcome, run.id)
    return finished
  })
}

/**
 * Applies call reports in the order they come. One the database could not take (an outage) waits, with every report
 * after it, and is applied once the database answers (tried every 2 s for 15 minutes): before, it was logged and lost,
 * and a campaign contact whose call ended during the outage stayed dialling, holding a slot of the campaign's
 * concurrency, until the next restart's recovery.
 */
export function orderedCallReports(
  apply: (report: CallReport) => void,
  onError: (error: unknown, report: CallReport) => void,
  retryMs?: number,
): (report: CallReport) => void {
  const waiting: CallReport[] = []
  async function drain(): Promise<void> {
    while (waiting.length > 0) {
      const report = waiting[0]
      await whenDatabaseAnswers(() => apply(report), { retryMs }).catch((error) => onError(error, report))
      waiting.shift()
    }
  }
  return (report) => {
    if (waiting.length === 0) {
      try {
        return apply(report)
      } catch (error) {
        if (!databaseUnavailable(error)) return onError(error, report)
      }
    }
    waiting.push(report)
    if (waiting.length === 1) void drain()
  }
}

function callOutcome(report: Extract<CallReport, { kind: 'ended' }>): RunOutcome {
  const transfer = report.transfer && {
    destination: report.transfer.destination,
    connected_at: new Date(report.transfer.connectedAt).toISOString(),
    talk_seconds: Math.max(0, Math.round((report.at - report.transfer.connectedAt) / 1000)),
  }
  return {
    durationSeconds: connectedSeconds(report.answeredAt, report.at),
    disposition: transfer ? 'call_transferred' : OUTCOME_DISPOSITIONS[report.outcome],
    ...(transfer
      ? {
          gatheredContext: {
            transfer_destination: transfer.destination,
            transfer_talk_seconds: transfer.talk_seconds,
          },
        }
      : {}),
    logs: {
      telephony: {
        outcome: report.outcome,
        answered_at: report.answeredAt === null ? null : new Date(report.answeredAt).toISOString(),
        ended_at: new Date(report.at).toISOString(),
        ...(report.cause ? { hangup_cause: report.cause.code, hangup_cause_text: report.cause.text } : {}),
        ...(report.providerStatus ? { provider_status: report.providerStatus } : {}),
        ...(transfer ? { transfer } : {}),
      },
    },
  }
}

/** The call outcome its report wrote into `logs.telephony`, or null when no report came. */
function reportedOutcomeOf(logs: JsonObject): CallOutcome | null {
  const reported = reportedCallOf(logs)
  if (!reported) return null
  const outcome = reported.telephony.outcome
  return typeof outcome === 'string' && outcome in OUTCOME_DISPOSITIONS ? (outcome as CallOutcome) : 'failed'
}

/**
 * Inside the transaction that completes a run its conversation ran on: settles the campaign attempt with the call's
 * outcome its report left on the run (the report leaves it to the run's completion), when that attempt is still open.
 */
export function settleReportedAttempt(ctx: AppContext, attempts: ContactAttempts, runId: number): void {
  const run = reportedRunById(ctx, runId)
  if (!run || run.campaign_contact_id === null || !isOpenAttemptOf(ctx, run.campaign_contact_id, run.id)) return
  const outcome = reportedOutcomeOf(JSON.parse(run.logs) as JsonObject)
  if (outcome) attempts.settle(ctx, run.campaign_contact_id, outcome, run.id)
}

/**
 * The outcome of a run whose call's end was reported while its conversation was under way, for a run its session
 * never completed (the process died in between, or the session is stuck): the call's outcome, as the report alone
 * would have completed it. Null when no report came.
 */
export function reportedCallOutcome(logs: JsonObject): { outcome: CallOutcome; run: RunOutcome } | null {
  const reported = reportedCallOf(logs)
  const outcome = reportedOutcomeOf(logs)
  if (!reported || !outcome) return null
  return {
    outcome,
    run: {
      durationSeconds: reported.durationSeconds,
      disposition: isPlainObject(reported.telephony.transfer) ? 'call_transferred' : OUTCOME_DISPOSITIONS[outcome],
    },
  }
}
