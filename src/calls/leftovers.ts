import type { AppContext } from '../context'
import type { CallOwnership } from '../telephony/provider'

/** Whose call this is by our records (see CallOwnership). */
function callOwnership(ctx: AppContext, callId: string): CallOwnership {
  const run = ctx.sqlite
    .query<{ state: string }, [string]>('SELECT state FROM workflow_runs WHERE call_id = ?')
    .get(callId)
  if (!run) return 'unknown'
  return run.state === 'completed' ? 'closed' : 'open'
}

/** Asks every provider to remove what it still holds for our closed calls (after a restart closed the open ones). */
export async function removeLeftoverCallObjects(ctx: AppContext): Promise<number> {
  let removed = 0
  for (const provider of ctx.telephony.registered()) {
    removed += (await provider.removeLeftovers?.((callId) => callOwnership(ctx, callId))) ?? 0
  }
  return removed
}
