import type { AppContext } from '../context'
import { finishRun, INTERRUPTED_DISPOSITION } from '../runs/service'
import type { CallState } from '../telephony/provider'
import { recordedTransfer } from '../telephony/carriers/status-callbacks'
import { transaction } from '../db/transaction'
import { removeLeftoverCallObjects } from './leftovers'
import type { ContactAttempts } from './outcomes'

type OpenCall = {
  id: number
  call_id: string
  mode: string
  telephony_configuration_id: number | null
  campaign_contact_id: number | null
  created_at: string
  /** `running` once the call was answered. */
  state: string
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

/**
 * What happens to the campaign contact of a closed call: `reached` (answered: never dialled again), `retry` (never
 * answered: a new attempt if retry_config allows one) or `failed` (settled as a failed attempt).
 */
type ContactFollowUp = 'reached' | 'retry' | 'failed'

function closeInterrupted(
  ctx: AppContext,
  attempts: ContactAttempts,
  call: OpenCall,
  reason: string,
  followUp: ContactFollowUp,
): void {
  transaction(ctx, () => {
    const finished = finishRun(ctx, call.id, {
      durationSeconds: 0,
      disposition: INTERRUPTED_DISPOSITION,
      logs: {
        telephony: { outcome: 'failed', provider_status: reason, ended_at: new Date(ctx.clock.now()).toISOString() },
      },
    })
    if (!finished || call.campaign_contact_id === null) return
    if (followUp === 'retry') attempts.retryInterrupted(ctx, call.campaign_contact_id, call.id)
    else attempts.settle(ctx, call.campaign_contact_id, followUp === 'reached' ? 'completed' : 'failed', call.id)
  })
}

/**
 * At start-up, no call placed before the restart can be followed (its session state is gone), so every open call is
 * closed: a call still up at the provider is hung up, and every run ends `interrupted`. A campaign contact whose call
 * was answered has been reached and is never dialled again (whether its call was still up or ended while we were
 * down); one whose call was never answered gets a new attempt, within its campaign's retry_config, rather than being
 * redialled under the same one. Then the PBX objects (bridges, media channels) of closed calls are removed.
 * Except transferred carrier calls (`logs.transfer`): the caller is talking to the destination, and the call's end comes
 * through the carrier's transfer and status callbacks, which need no session (the watchdog closes it if they never come).
 * Returns how many runs were closed.
 */
export async function closeCallsInterruptedByRestart(ctx: AppContext, attempts: ContactAttempts): Promise<number> {
  const open = ctx.sqlite
    .query<OpenCall & { logs: string }, []>(
      `SELECT id, call_id, mode, telephony_configuration_id, campaign_contact_id, created_at, state, logs
       FROM workflow_runs WHERE call_id IS NOT NULL AND state <> 'completed'`,
    )
    .all()
    .filter((call) => !recordedTransfer(JSON.parse(call.logs)))
  for (const call of open) {
    const state = await callState(ctx, call)
    if (state === 'alive') {
      await ctx.telephony
        .providerFor(call.mode)!
        .hangup(call.telephony_configuration_id!, call.call_id)
        .catch(() => undefined)
    }
    const reason = state === 'alive' ? 'hung_up_after_restart' : `not_followed_after_restart (${state})`
    closeInterrupted(ctx, attempts, call, reason, call.state === 'running' ? 'reached' : 'retry')
  }
  if (open.length > 0) ctx.log.warn({ calls: open.length }, 'closed calls interrupted by a restart')
  await removeLeftoverCallObjects(ctx)
  return open.length
}

/**
 * The watchdog: a call open longer than `maxOpenMs` whose channel is gone at the provider (or cannot be asked) is
 * closed as `interrupted`, so no run stays open forever. Returns how many runs were closed.
 */
export async function closeVanishedCalls(
  ctx: AppContext,
  maxOpenMs: number,
  attempts: ContactAttempts,
): Promise<number> {
  const cutoff = new Date(ctx.clock.now() - maxOpenMs).toISOString()
  const stale = ctx.sqlite
    .query<OpenCall, [string]>(
      `SELECT id, call_id, mode, telephony_configuration_id, campaign_contact_id, created_at, state
       FROM workflow_runs WHERE call_id IS NOT NULL AND state <> 'completed' AND created_at < ?`,
    )
    .all(cutoff)
  let closed = 0
  for (const call of stale) {
    if ((await callState(ctx, call)) === 'alive') continue
    closeInterrupted(ctx, attempts, call, 'vanished', 'failed')
    closed++
  }
  if (closed > 0) ctx.log.warn({ calls: closed }, 'watchdog closed calls that vanished')
  return closed
}
