import type { AppContext } from '../context'
import { DialError, type DialRequest, type TelephonyProvider } from '../telephony/provider'

/** Why a dial did not happen: a reason safe to show, and whether the provider was unreachable rather than refusing. */
export type DialRefusal = { reason: string; unreachable: boolean }

/**
 * Asks the provider to dial a call whose run already exists. When it refuses (or cannot be reached) the call ends there,
 * reported like any other ending so its run and campaign contact settle the usual way. Resolves to null once the provider
 * accepted the call, else to the refusal.
 */
export async function placeCall(
  ctx: AppContext,
  provider: TelephonyProvider,
  request: DialRequest,
): Promise<DialRefusal | null> {
  try {
    await provider.dial(request)
    return null
  } catch (error) {
    const refusal =
      error instanceof DialError
        ? { reason: error.message, unreachable: error.unreachable }
        : { reason: 'the telephony provider could not be reached', unreachable: true }
    if (!(error instanceof DialError)) ctx.log.error({ err: error, runId: request.runId }, 'dial failed')
    ctx.telephony.report({
      kind: 'ended',
      callId: request.callId,
      outcome: 'failed',
      at: ctx.clock.now(),
      answeredAt: null,
      providerStatus: `dial_failed: ${refusal.reason}`,
    })
    return refusal
  }
}
