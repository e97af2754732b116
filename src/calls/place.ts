import type { AppContext } from '../context'
import { DialError, type DialRequest, type TelephonyProvider } from '../telephony/provider'

/**
 * Asks the provider to dial a call whose run already exists. When it refuses (or cannot be reached) the call ends there,
 * reported like any other ending so its run and campaign contact settle the usual way. Resolves to null once the provider
 * accepted the call, else to a reason that is safe to show.
 */
export async function placeCall(ctx: AppContext, provider: TelephonyProvider, request: DialRequest): Promise<string | null> {
  try {
    await provider.dial(request)
    return null
  } catch (error) {
    const reason = error instanceof DialError ? error.message : 'the telephony provider could not be reached'
    if (!(error instanceof DialError)) ctx.log.error({ err: error, runId: request.runId }, 'dial failed')
    ctx.telephony.report({ kind: 'ended', callId: request.callId, outcome: 'failed', at: ctx.clock.now(), answeredAt: null, providerStatus: `dial_failed: ${reason}` })
    return reason
  }
}
