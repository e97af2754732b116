import type { AppContext } from '../context'
import type { AnsweredCall } from '../telephony/ari/call-session'

/**
 * The one enforcer of a call's time limit (the agent's `max_call_duration_seconds`), on every transport: one timer per
 * answered call, counted from the answer, started where the call gets its conversation (calls/voice.ts). When it
 * passes, the conversation ends at once (`call_duration_exceeded`: a reply under way is cut) and the call is hung up
 * the way every call is (`AnsweredCall.hangup`), whatever the conversation is doing; the call's report says
 * `max_call_duration`. A transfer that connected lifts it: the caller's talk with the destination is no longer the
 * agent's. The backstops derive from the same value: a carrier is given it as its own time-limit field when the call
 * cannot be transferred (telephony/carriers/carrier.ts, for when this process is gone), and the ARI watchdog's deadline
 * adds a margin to it (telephony/ari/adapter.ts). A text chat has no call: its sweeper applies the same limit
 * (runs/text-chat.ts).
 */

/** The provider status of a call the time limit hung up. */
export const TIME_LIMIT_STATUS = 'max_call_duration'

export type TimeLimit = {
  /** The call, its transfers lifting the limit once connected. */
  readonly call: AnsweredCall
  /** Starts counting (from the answer) with the agent's limit; `onReached` ends the conversation. */
  start(maxCallDurationSeconds: number, onReached: () => void): void
}

export function timeLimitOf(ctx: AppContext, call: AnsweredCall): TimeLimit {
  const answeredAt = ctx.clock.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  let lifted = false
  const lift = () => {
    lifted = true
    clearTimeout(timer)
  }
  void call.ended.then(lift)
  const transfer = call.transfer
  return {
    call: transfer
      ? {
          ...call,
          async transfer(request, signal) {
            const outcome = await transfer(request, signal)
            if (outcome.status === 'transferred') lift()
            return outcome
          },
        }
      : call,
    start(maxCallDurationSeconds, onReached) {
      if (lifted) return
      const remainingMs = Math.max(0, answeredAt + maxCallDurationSeconds * 1000 - ctx.clock.now())
      timer = setTimeout(() => {
        if (lifted) return
        const log = ctx.log.child({ runId: call.runId, callId: call.callId })
        log.info({ maxCallDurationSeconds }, 'max call duration reached: hanging up')
        onReached()
        void call
          .hangup(TIME_LIMIT_STATUS)
          .catch((error) => log.warn({ err: error }, 'hanging up at the max call duration failed'))
      }, remainingMs)
    },
  }
}
