import { AriError, type AriRest } from './rest'
import { eventChannel, type AriEvent, type DialStatus } from './types'

/**
 * Transfers an answered call by bridge swap (reference telephony §1.12, without its Redis machinery): the caller
 * hears a ring tone in their bridge while the destination is originated into our Stasis app with our channel id; when
 * it answers (StasisStart) the tone stops, the destination joins the caller's bridge and the agent's media legs leave
 * it and are hung up. Busy, no answer, a refusal or any other end before the answer is a failure, and the call stays
 * as it was. Events are matched on the destination's channel id (and its Local `;2` half, whose cause is the real one
 * when busy or congested); causes are compared as numbers.
 */

/** Subscribes to the events of one channel id and of its Local `<id>;2` half; returns the unsubscribe. */
export type ChannelWatch = (channelId: string, onEvent: (event: AriEvent) => void) => () => void

export type AriTransferRequest = {
  rest: AriRest
  watch: ChannelWatch
  /** The caller's mixing bridge. */
  bridgeId: string
  /** The agent's media legs in that bridge: released once the destination is in. */
  agentChannelIds: readonly string[]
  /** Dial string of the destination. */
  endpoint: string
  /** Our id for the destination channel. */
  channelId: string
  callerId?: string
  /** How long the destination may ring (ARI originate timeout). */
  timeoutSeconds: number
  signal?: AbortSignal
}

export type TransferFailureReason = 'busy' | 'no_answer' | 'rejected' | 'failed'

export type AriTransferResult =
  | { status: 'transferred'; channelId: string }
  | { status: 'failed'; reason: TransferFailureReason; message: string }

export const HOLD_TONE = 'tone:ring'
/** The first Stasis argument of a transfer's destination channel. */
export const TRANSFER_APP_ARG = 'transfer'
/** Beyond the originate timeout, how long to wait for Asterisk to report the end before giving up ourselves. */
const NO_ANSWER_GRACE_MS = 5_000

type Cause = { code: number; text: string }

const failed = (reason: TransferFailureReason, message: string): AriTransferResult => ({
  status: 'failed',
  reason,
  message,
})

/** Q.850 causes and the Dial status, as numbers and values (the reference compared a string to a number). */
export function transferFailure(cause: Cause, dialStatus: DialStatus, timeoutSeconds: number): AriTransferResult {
  if (cause.code === 17 || dialStatus === 'BUSY') return failed('busy', 'The destination is busy')
  if (cause.code === 21) return failed('rejected', 'The destination refused the call')
  if (cause.code === 18 || cause.code === 19 || dialStatus === 'NOANSWER')
    return failed('no_answer', `No answer within ${timeoutSeconds} seconds`)
  return failed('failed', `The transfer failed: ${cause.text || 'unknown cause'}`)
}

const ignoreGone = (error: unknown) => {
  if (!(error instanceof AriError && error.status === 404)) throw error
}

export async function transferOverAri(request: AriTransferRequest): Promise<AriTransferResult> {
  const { rest, channelId, timeoutSeconds } = request
  const holdId = `${channelId}-hold`
  let dialStatus: DialStatus = ''
  let peerCause: Cause | null = null
  let settle!: (outcome: 'answered' | AriTransferResult) => void
  const outcome = new Promise<'answered' | AriTransferResult>((resolve) => {
    settle = resolve
  })

  const unwatch = request.watch(channelId, (event) => {
    const channel = eventChannel(event)
    if (!channel) return
    if (channel.id !== channelId) {
      if (event.type === 'ChannelDestroyed') peerCause = { code: event.cause, text: event.cause_txt }
      return
    }
    if (event.type === 'Dial' && event.dialstatus !== '') dialStatus = event.dialstatus
    else if (event.type === 'StasisStart') settle('answered')
    else if (event.type === 'ChannelDestroyed') {
      const own = { code: event.cause, text: event.cause_txt }
      settle(transferFailure(own.code === 0 && peerCause ? peerCause : own, dialStatus, timeoutSeconds))
    }
  })
  const timer = setTimeout(
    () => settle(failed('no_answer', `No answer within ${timeoutSeconds} seconds`)),
    timeoutSeconds * 1000 + NO_ANSWER_GRACE_MS,
  )
  const onAbort = () => settle(failed('failed', 'The call ended during the transfer'))
  request.signal?.addEventListener('abort', onAbort, { once: true })
  const stopHoldTone = () => rest.stopPlayback(holdId).catch(() => undefined)
  const hangUpDestination = () =>
    rest
      .hangup(channelId)
      .catch(ignoreGone)
      .catch(() => undefined)

  try {
    if (request.signal?.aborted) return failed('failed', 'The call ended during the transfer')
    // The tone is a courtesy: a transfer goes on without it.
    await rest.playOnBridge(request.bridgeId, { media: HOLD_TONE, playbackId: holdId }).catch(() => undefined)
    rest
      .originate({
        channelId,
        endpoint: request.endpoint,
        appArgs: [TRANSFER_APP_ARG, channelId],
        timeoutSeconds,
        callerId: request.callerId,
      })
      .catch((error) =>
        settle(
          failed(
            'failed',
            error instanceof AriError
              ? `Asterisk refused the transfer call: ${error.message}`
              : 'Asterisk could not be reached',
          ),
        ),
      )
    const result = await outcome
    await stopHoldTone()
    if (result !== 'answered') {
      await hangUpDestination()
      return result
    }
    try {
      await rest.addChannelToBridge(request.bridgeId, [channelId])
    } catch {
      await hangUpDestination()
      return failed('failed', 'The destination answered but could not be connected to the caller')
    }
    if (request.agentChannelIds.length > 0) {
      await rest.removeChannelFromBridge(request.bridgeId, request.agentChannelIds).catch(() => undefined)
      await Promise.all(request.agentChannelIds.map((id) => rest.hangup(id).catch(() => undefined)))
    }
    return { status: 'transferred', channelId }
  } finally {
    clearTimeout(timer)
    request.signal?.removeEventListener('abort', onAbort)
    unwatch()
  }
}
