import type { AppContext } from '../context'
import { attachArtifact } from '../runs/artifacts'
import { finishRun, markRunRunning } from '../runs/service'
import type { CallOutcome, CallReport } from '../telephony/provider'
import { transaction } from '../db/transaction'

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

type CallRun = { id: number; state: string; campaign_contact_id: number | null }

/**
 * Applies a provider's call report to the run it belongs to (found by call id) and, for campaign calls, to the
 * contact's attempt, in one transaction. Reports for unknown calls and reports after the end are ignored, so a
 * provider may repeat itself safely. Returns whether anything changed.
 *
 * A run its conversation completed before the call ended (its models could not be used) keeps what it has, but the
 * call's end still settles the campaign attempt when that attempt is this run's and is still open.
 */
export function applyCallReport(ctx: AppContext, report: CallReport, attempts: ContactAttempts): boolean {
  return transaction(ctx, () => {
    const run = ctx.sqlite
      .query<CallRun, [string]>('SELECT id, state, campaign_contact_id FROM workflow_runs WHERE call_id = ?')
      .get(report.callId)
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
    const durationSeconds =
      report.answeredAt === null ? 0 : Math.max(0, Math.round((report.at - report.answeredAt) / 10) / 100)
    if (report.recordingKey) attachArtifact(ctx, run.id, 'recording', report.recordingKey)
    const transfer = report.transfer && {
      destination: report.transfer.destination,
      connected_at: new Date(report.transfer.connectedAt).toISOString(),
      talk_seconds: Math.max(0, Math.round((report.at - report.transfer.connectedAt) / 1000)),
    }
    const finished = finishRun(ctx, run.id, {
      durationSeconds,
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
    })
    if (finished && run.campaign_contact_id !== null)
      attempts.settle(ctx, run.campaign_contact_id, report.outcome, run.id)
    return finished
  })
}

function isOpenAttemptOf(ctx: AppContext, contactId: number, runId: number): boolean {
  return (
    ctx.sqlite
      .query<{ id: number }, [number, number]>(
        `SELECT id FROM campaign_contacts WHERE id = ? AND last_run_id = ? AND state = 'dialing'`,
      )
      .get(contactId, runId) !== null
  )
}
