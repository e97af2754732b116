import type { AppContext } from '../context'
import { openSessionRunsOfDeadInstances } from './queries'
import { isPlainObject } from '../lib/values'
import { costInfo, emptyUsageInfo } from '../models/usage'
import { readPriceCard } from '../models/price-card'
import { attachArtifact } from './artifacts'
import { claimRunForRecovery, finishRun, INTERRUPTED_DISPOSITION } from './service'
import { liveSince } from '../instances/registry'
import { transaction } from '../db/transaction'
import { transcriptText, type TranscriptTurn } from '../conversation/record'
import { transcriptKeyFor } from './run-session'
import { enqueueWebhookDeliveries } from './webhook-outbox'
import type { AgentDefinition } from '../definition/definition'

/** The end reason recorded for a session the process stopped in the middle of. */
export const RESTART_END_REASON = 'system_cancelled'

/**
 * A conversation whose instance died cannot go on (the engine's state was in its memory), so every run without a call
 * that is not completed and that no live instance handles (text chat, and any other channel without a telephony call;
 * runs with a call are closed by calls/recovery.ts) is completed now, at start-up and after each heartbeat, by the
 * instance that claims it (runs/service.ts claimRunForRecovery, so of several survivors one does): disposition `interrupted`, `logs.session.end_reason` `system_cancelled`, the
 * duration up to its last recorded turn, the transcript written so far stored as its file, its webhook deliveries
 * queued (no QA review: the model clients are gone). Returns how many.
 */
export async function closeSessionsInterruptedByRestart(ctx: AppContext): Promise<number> {
  let closed = 0
  for (const run of openSessionRunsOfDeadInstances(ctx, liveSince(ctx))) {
    if (!claimRunForRecovery(ctx, run.id)) continue
    closed++
    const logs = JSON.parse(run.logs) as Record<string, unknown>
    const session = isPlainObject(logs.session) ? logs.session : {}
    const transcript = (Array.isArray(logs.transcript) ? logs.transcript : []) as TranscriptTurn[]
    const startedAt = typeof session.started_at === 'string' ? session.started_at : run.started_at
    const durationSeconds = Math.round(Math.max(0, ...transcript.map((turn) => turn.end_ms)) / 1000)
    let transcriptKey: string | null = null
    if (transcript.length > 0) {
      transcriptKey = transcriptKeyFor(run.organization_id, run.id)
      await ctx.objects.put(transcriptKey, transcriptText({ started_at: startedAt, logs: { transcript } }))
    }
    const usage = { ...emptyUsageInfo(), call_duration_seconds: durationSeconds }
    transaction(ctx, () => {
      finishRun(ctx, run.id, {
        durationSeconds,
        disposition: INTERRUPTED_DISPOSITION,
        usage: { llm: {}, tts: {}, stt: {} },
        cost: costInfo(usage, readPriceCard(ctx, run.organization_id), { telephony: false }),
        logs: {
          warnings: [
            ...(Array.isArray(logs.warnings) ? logs.warnings : []),
            'The server stopped during the conversation; the run was closed when it (or another instance) started again',
          ],
          session: { ...session, end_reason: RESTART_END_REASON, ended_at: new Date(ctx.clock.now()).toISOString() },
        },
      })
      if (transcriptKey) attachArtifact(ctx, run.id, 'transcript', transcriptKey)
      enqueueWebhookDeliveries(
        ctx,
        { id: run.id, organizationId: run.organization_id },
        JSON.parse(run.definition) as AgentDefinition,
        false,
      )
    })
    ctx.log.warn({ runId: run.id, endReason: RESTART_END_REASON }, 'closed a conversation interrupted by a restart')
  }
  return closed
}
