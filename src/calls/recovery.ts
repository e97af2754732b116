import type { AppContext } from '../context'
import { requeueInterruptedAttempt, settleAttempt } from '../campaigns/attempts'
import { finishRun } from '../runs/service'
import type { CallState } from '../telephony/provider'
import { transaction } from '../db/transaction'

/** Runs whose call is neither known to be alive nor finished end with this disposition. */
export const INTERRUPTED_DISPOSITION = 'interrupted'

type OpenCall = {
  id: number
  call_id: string
  mode: string
  telephony_configuration_id: number | null
  campaign_contact_id: number | null
  created_at: string
}

async function callState(ctx: AppContext, call: OpenCall): Promise<CallState> {
  const provider = ctx.telephony.providerFor(call.mode)
  if (!provider || call.telephony_configuration_id === null) return 'unknown'
  try {
    return await provider.callState(call.telephony_configuration_id, call.call_id)
  } catch {
    return 'unknown'
  }
}

/** What happens to the campaign contact of a closed call: dialled again as a new attempt, or settled as failed. */
type ContactFollowUp = 'requeue' | 'settle'

function closeInterrupted(ctx: AppContext, call: OpenCall, reason: string, followUp: ContactFollowUp): void {
  transaction(ctx, () => {
    const finished = finishRun(ctx, call.id, {
      durationSeconds: 0,
      disposition: INTERRUPTED_DISPOSITION,
      logs: { telephony: { outcome: 'failed', provider_status: reason, ended_at: new Date(ctx.clock.now()).toISOString() } },
    })
    if (!finished || call.campaign_contact_id === null) return
    if (followUp === 'requeue') requeueInterruptedAttempt(ctx, call.campaign_contact_id, call.id)
    else settleAttempt(ctx, call.campaign_contact_id, 'failed', call.id)
  })
}

/**
 * At start-up, no call placed before the restart can be followed (its session state is gone), so every open call is
 * closed: a call still up at the provider is hung up and its run ends `interrupted`; a call the provider no longer has
 * (ended while we were down, or never placed) ends `interrupted` too, and its campaign contact is queued again as a
 * new attempt rather than redialled under the same one. Returns how many runs were closed.
 */
export async function closeCallsInterruptedByRestart(ctx: AppContext): Promise<number> {
  const open = ctx.sqlite.query<OpenCall, []>(
    `SELECT id, call_id, mode, telephony_configuration_id, campaign_contact_id, created_at
       FROM workflow_runs WHERE call_id IS NOT NULL AND state <> 'completed'`,
  ).all()
  for (const call of open) {
    const state = await callState(ctx, call)
    if (state === 'alive') {
      await ctx.telephony.providerFor(call.mode)!.hangup(call.telephony_configuration_id!, call.call_id).catch(() => undefined)
    }
    closeInterrupted(ctx, call, state === 'alive' ? 'hung_up_after_restart' : `not_followed_after_restart (${state})`, state === 'alive' ? 'settle' : 'requeue')
  }
  if (open.length > 0) ctx.log.warn({ calls: open.length }, 'closed calls interrupted by a restart')
  return open.length
}

/**
 * The watchdog: a call open longer than `maxOpenMs` whose channel is gone at the provider (or cannot be asked) is
 * closed as `interrupted`, so no run stays open forever. Returns how many runs were closed.
 */
export async function closeVanishedCalls(ctx: AppContext, maxOpenMs: number): Promise<number> {
  const cutoff = new Date(ctx.clock.now() - maxOpenMs).toISOString()
  const stale = ctx.sqlite.query<OpenCall, [string]>(
    `SELECT id, call_id, mode, telephony_configuration_id, campaign_contact_id, created_at
       FROM workflow_runs WHERE call_id IS NOT NULL AND state <> 'completed' AND created_at < ?`,
  ).all(cutoff)
  let closed = 0
  for (const call of stale) {
    if ((await callState(ctx, call)) === 'alive') continue
    closeInterrupted(ctx, call, 'vanished', 'settle')
    closed++
  }
  if (closed > 0) ctx.log.warn({ calls: closed }, 'watchdog closed calls that vanished')
  return closed
}
