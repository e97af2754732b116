import type { AppContext } from '../context'
import type { JsonObject } from '../db/schema'
import { reportedCallOf } from '../runs/call-end'
import { claimRunForRecovery, finishRun, INTERRUPTED_DISPOSITION } from '../runs/service'
import { liveSince } from '../instances/registry'
import type { CallState } from '../telephony/provider'
import { recordedTransfer } from '../telephony/carriers/status-callbacks'
import { transaction } from '../db/transaction'
import { removeLeftoverCallObjects } from './leftovers'
import { reportedCallOutcome, type ContactAttempts } from './outcomes'
import { openCallsOfDeadInstances, openCallsOfInstanceCreatedBefore, type OpenCall } from './queries'

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
    if (completeReported(ctx, attempts, call)) return
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
 * A run whose call's end was reported while its conversation was under way, and that its run session never completed
 * (the process died in between, or the session is stuck): completed with the call's own outcome, not `interrupted`,
 * and its campaign attempt settled with it. False when no report came.
 */
function completeReported(ctx: AppContext, attempts: ContactAttempts, call: OpenCall): boolean {
  const reported = reportedCallOutcome(JSON.parse(call.logs) as JsonObject)
  if (!reported) return false
  if (finishRun(ctx, call.id, reported.run) && call.campaign_contact_id !== null)
    attempts.settle(ctx, call.campaign_contact_id, reported.outcome, call.id)
  return true
}

/**
 * A call whose instance died cannot be followed any more (its session state was in that process's memory), so every
 * open call that no live instance handles is closed, by the instance that claims it (runs/service.ts
 * claimRunForRecovery: of several survivors one does): a call still up at the provider is hung up, and every run ends
 * `interrupted`. A campaign contact whose call was answered has been reached and is never dialled again (whether its
 * call was still up or ended meanwhile); one whose call was never answered gets a new attempt, within its campaign's
 * retry_config, rather than being redialled under the same one. Except transferred carrier calls (`logs.transfer`): the
 * caller is talking to the destination, and the call's end comes through the carrier's transfer and status callbacks,
 * which need no session (the watchdog closes it if they never come). Runs at start-up and after every heartbeat, so a
 * survivor closes a dead peer's calls. Returns how many runs were closed.
 */
async function closeCallsOfDeadInstances(ctx: AppContext, attempts: ContactAttempts): Promise<number> {
  const open = openCallsOfDeadInstances(ctx, liveSince(ctx)).filter((call) => !recordedTransfer(JSON.parse(call.logs)))
  let closed = 0
  for (const call of open) {
    if (!claimRunForRecovery(ctx, call.id)) continue
    const state = await callState(ctx, call)
    if (state === 'alive') {
      await ctx.telephony
        .providerFor(call.mode)!
        .hangup(call.telephony_configuration_id!, call.call_id)
        .catch(() => undefined)
    }
    const reason = state === 'alive' ? 'hung_up_after_restart' : `not_followed_after_restart (${state})`
    closeInterrupted(ctx, attempts, call, reason, call.state === 'running' ? 'reached' : 'retry')
    closed++
  }
  if (closed > 0) ctx.log.warn({ calls: closed }, 'closed calls whose instance stopped (crash or restart)')
  return closed
}

/**
 * At start-up: the calls of dead instances (this one's predecessor among them) are closed, then the PBX objects
 * (bridges, media channels) of closed calls are removed, whether closed now or before the restart.
 */
export async function closeCallsInterruptedByRestart(ctx: AppContext, attempts: ContactAttempts): Promise<number> {
  const closed = await closeCallsOfDeadInstances(ctx, attempts)
  await removeLeftoverCallObjects(ctx)
  return closed
}

/** After a heartbeat: a dead peer's calls are closed, and their PBX objects removed when there were any. */
export async function closeCallsOfDeadPeers(ctx: AppContext, attempts: ContactAttempts): Promise<number> {
  const closed = await closeCallsOfDeadInstances(ctx, attempts)
  if (closed > 0) await removeLeftoverCallObjects(ctx)
  return closed
}

/** The call's end was reported after `cutoff`: its run session may still be writing what the conversation produced. */
function reportedSince(call: OpenCall, cutoff: string): boolean {
  const reported = reportedCallOf(JSON.parse(call.logs) as JsonObject)
  return reported !== null && String(reported.telephony.ended_at) >= cutoff
}

/**
 * The watchdog: a call of this instance open longer than `maxOpenMs` whose channel is gone at the provider (or cannot be asked) is
 * closed as `interrupted` (or with its reported outcome, when its end was reported longer than `maxOpenMs` ago and its
 * run session never completed it), so no run stays open forever. Returns how many runs were closed.
 */
export async function closeVanishedCalls(
  ctx: AppContext,
  maxOpenMs: number,
  attempts: ContactAttempts,
): Promise<number> {
  const cutoff = new Date(ctx.clock.now() - maxOpenMs).toISOString()
  const stale = openCallsOfInstanceCreatedBefore(ctx, ctx.instanceId, cutoff).filter(
    (call) => !reportedSince(call, cutoff),
  )
  let closed = 0
  for (const call of stale) {
    if ((await callState(ctx, call)) === 'alive') continue
    closeInterrupted(ctx, attempts, call, 'vanished', 'failed')
    closed++
  }
  if (closed > 0) ctx.log.warn({ calls: closed }, 'watchdog closed calls that vanished')
  return closed
}
