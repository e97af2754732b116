import type { AppContext } from '../context'
import type { CallOwnership } from '../telephony/provider'
import { runStateOfCall } from './queries'

/** Whose call this is by our records (see CallOwnership). */
function callOwnership(ctx: AppContext, callId: string): CallOwnership {
  const state = runStateOfCall(ctx, callId)
  if (state === null) return 'unknown'
  return state === 'completed' ? 'closed' : 'open'
}

/** Asks every provider to remove what it still holds for our closed calls (after a restart closed the open ones). */
export async function removeLeftoverCallObjects(ctx: AppContext): Promise<number> {
  let removed = 0
  for (const provider of ctx.telephony.registered()) {
    removed += (await provider.removeLeftovers?.((callId) => callOwnership(ctx, callId))) ?? 0
  }
  return removed
}
