import type { AppContext } from '../../context'
import type { WorkflowRunRow } from '../../db/schema'
import { markRunRunning } from '../../runs/service'
import type { CarrierMediaTransport, MediaFraming } from '../../voice/carrier-media'
import type { MediaClose } from '../../voice/media-transport'
import { mediaStreamTokenMatches, runById, type Carrier } from './carrier'
import { endReported } from '../provider'
import { returningCaller, transferCarrierCall, type CallMedia } from './transfer'
import { carrierOf } from './registry'

/**
 * The media streams carriers open to `/api/v1/telephony/ws/{workflow_id}/{organization_id}/{run_id}/{token}`.
 * Admission follows the reference's checks and close codes; an admitted stream moves its run from `initialized` to
 * `running` (so a second stream for the same run is refused) and goes to the speech pipeline. When the stream ends the
 * call is over: when the stream did not end with the call (our side closed it, or the socket dropped) the call is hung
 * up at the carrier, and the run ends. A carrier that reports this call's status (every call we placed, and inbound
 * calls of carriers that always report or did report this one) has a few seconds for its final callback: its
 * duration and status are the authority. A call nobody reports on ends with the stream. A stream that ends after the
 * call's end was reported (the caller hung up during a transfer) changes nothing.
 *
 * Transfers (carrier-transfer.ts): once the caller is with the destination, the stream's end neither hangs up nor ends
 * the call; after a failed transfer, the caller's new stream (admitted while the run is `running`) continues the same
 * conversation.
 */

/** WebSocket close codes of a refused stream (the reference's). */
export const MEDIA_CLOSE = { badRequest: 4400, unauthorized: 4401, notFound: 4404, conflict: 4409 } as const

export type MediaStreamPath = { agentId: string; organizationId: string; runId: string; token: string }

export type AdmittedStream = {
  run: WorkflowRunRow
  carrier: Carrier
  framing: MediaFraming
  /** The caller is back from a failed transfer: the stream goes to the conversation already under way. */
  returning?: (transport: CarrierMediaTransport) => void
}

export type MediaAdmission = { admitted: AdmittedStream } | { refused: { code: number; reason: string } }

const refuse = (code: number, reason: string): MediaAdmission => ({ refused: { code, reason } })
const positiveInteger = (text: string) => (/^[1-9]\d{0,15}$/.test(text) ? Number(text) : null)

export function admitMediaStream(ctx: AppContext, path: MediaStreamPath): MediaAdmission {
  const agentId = positiveInteger(path.agentId)
  const organizationId = positiveInteger(path.organizationId)
  const runId = positiveInteger(path.runId)
  if (agentId === null || organizationId === null || runId === null)
    return refuse(MEDIA_CLOSE.badRequest, 'malformed_stream_path')
  if (!mediaStreamTokenMatches(ctx, agentId, organizationId, runId, path.token))
    return refuse(MEDIA_CLOSE.unauthorized, 'invalid_token')
  const run = runById(ctx, runId)
  if (!run || run.organizationId !== organizationId) return refuse(MEDIA_CLOSE.notFound, 'workflow_run_not_found')
  if (run.workflowId !== agentId) return refuse(MEDIA_CLOSE.badRequest, 'workflow_run_workflow_mismatch')
  const carrier = carrierOf(run.mode)
  if (!carrier?.mediaFraming) return refuse(MEDIA_CLOSE.badRequest, 'provider_has_no_media_stream')
  const returning = run.state === 'running' ? returningCaller(ctx, run.id) : null
  if (returning) return { admitted: { run, carrier, framing: carrier.mediaFraming, returning } }
  if (run.state !== 'initialized' || !markRunRunning(ctx, run.id))
    return refuse(MEDIA_CLOSE.conflict, 'workflow_run_not_initialized')
  return { admitted: { run, carrier, framing: carrier.mediaFraming } }
}

/** Normal closes by the carrier: the call ended with the stream. */
const CALL_ENDED_CODES = new Set([1000, 1001, 1005])

function finalStatusExpected(ctx: AppContext, admitted: AdmittedStream): boolean {
  if (admitted.run.callType === 'outbound' || admitted.carrier.reportsInboundCalls) return true
  const callbacks = runById(ctx, admitted.run.id)?.logs.telephony_status_callbacks
  return Array.isArray(callbacks) && callbacks.length > 0
}

/** The call's media over its streams: the first one, then the one a caller returning from a failed transfer opens. */
function createCallMedia(first: CarrierMediaTransport): CallMedia {
  const audioListeners: ((ulaw: Uint8Array, atMs: number) => void)[] = []
  const dtmfListeners: ((digit: string) => void)[] = []
  const closeListeners: ((close: MediaClose) => void)[] = []
  let current: CarrierMediaTransport | null = null
  let held = false
  let closed = false
  const finish = (close: MediaClose) => {
    if (closed) return
    closed = true
    for (const listener of closeListeners) listener(close)
  }
  const use = (transport: CarrierMediaTransport) => {
    current = transport
    transport.onAudio((ulaw, atMs) => {
      if (current === transport) for (const listener of audioListeners) listener(ulaw, atMs)
    })
    transport.onDtmf((digit) => {
      if (current === transport) for (const listener of dtmfListeners) listener(digit)
    })
    transport.onClose((close) => {
      if (current !== transport) return
      current = null
      if (!held) finish(close)
    })
  }
  use(first)
  return {
    onAudio: (listener) => {
      audioListeners.push(listener)
    },
    onDtmf: (listener) => {
      dtmfListeners.push(listener)
    },
    onClose: (listener) => {
      closeListeners.push(listener)
    },
    send: (ulaw) => current?.send(ulaw),
    mark: () => current?.mark() ?? Promise.resolve('flushed'),
    flush: () => current?.flush(),
    close() {
      const transport = current
      current = null
      transport?.close()
      finish({ code: 1000, reason: '', initiatedBy: 'app' })
    },
    get closed() {
      return closed
    },
    get streaming() {
      return current !== null
    },
    hold() {
      held = true
    },
    detach() {
      const transport = current
      current = null
      transport?.close()
    },
    attach(next) {
      const previous = current
      use(next)
      previous?.close()
      held = false
    },
    release() {
      held = false
      if (!current) finish({ code: 1000, reason: 'stream replaced by the carrier', initiatedBy: 'app' })
    },
  }
}

/** Hands an admitted stream to the conversation engine as an answered call, and ends the call with the stream. */
export function startMediaStream(ctx: AppContext, admitted: AdmittedStream, transport: CarrierMediaTransport): void {
  const { run, carrier } = admitted
  if (admitted.returning) {
    ctx.log.info({ provider: run.mode, runId: run.id }, 'carrier media stream resumed after a failed transfer')
    admitted.returning(transport)
    return
  }
  const media = createCallMedia(transport)
  const openedAt = ctx.clock.now()
  const logContext = { provider: run.mode, runId: run.id }
  const hangUpCarrier = async () => {
    const provider = ctx.telephony.providerFor(run.mode)
    if (provider && run.telephonyConfigurationId !== null && run.callId)
      await provider.hangup(run.telephonyConfigurationId, run.callId)
  }
  let hungUp = false
  /** What the conversation's hangup asked the report to say, when the carrier does not report the call itself. */
  let hangupStatus: string | undefined
  let transferred = false
  const hangup = async (providerStatus?: string) => {
    hungUp = true
    hangupStatus ??= providerStatus
    await hangUpCarrier()
    media.close()
  }
  const ended = new Promise<void>((resolve) => media.onClose(() => resolve()))
  const reported = run.callId ? endReported(ctx.telephony, run.callId) : Promise.resolve()
  let endWasReported = false
  void reported.then(() => {
    endWasReported = true
  })
  media.onClose((close) => {
    const closedAt = ctx.clock.now()
    ctx.log.info(
      { ...logContext, code: close.code, initiatedBy: close.initiatedBy, transferred, endWasReported },
      'carrier media stream ended',
    )
    // The caller is with the transfer's destination: the call goes on, and its end is reported by the carrier. Or the
    // call is over already: nothing to hang up, nothing more to report.
    if (transferred || endWasReported) return
    if (!hungUp && (close.initiatedBy === 'app' || !CALL_ENDED_CODES.has(close.code))) {
      void hangUpCarrier().catch((error) =>
        ctx.log.warn({ ...logContext, err: error }, 'hanging up after the media stream ended failed'),
      )
    }
    const endWithStream = () => {
      if (run.callId) {
        ctx.telephony.report({
          kind: 'ended',
          callId: run.callId,
          outcome: 'completed',
          at: closedAt,
          answeredAt: openedAt,
          providerStatus: hangupStatus ?? 'media_stream_ended',
        })
      }
    }
    if (finalStatusExpected(ctx, admitted)) setTimeout(endWithStream, ctx.telephony.waits.finalStatusGraceMs).unref()
    else endWithStream()
  })
  ctx.log.info(logContext, 'carrier media stream admitted')
  const conversation = ctx.telephony.answered({
    callId: run.callId!,
    runId: run.id,
    organizationId: run.organizationId,
    configurationId: run.telephonyConfigurationId!,
    direction: run.callType === 'inbound' ? 'inbound' : 'outbound',
    media,
    onDtmf: (listener) => media.onDtmf(listener),
    ended,
    reported,
    hangup,
    ...(carrier.transfer
      ? {
          transfer: (request, signal) =>
            transferCarrierCall(
              ctx,
              {
                run,
                carrier,
                media,
                reported,
                connected: () => {
                  transferred = true
                },
              },
              request,
              signal,
            ),
        }
      : {}),
  })
  if (!conversation)
    ctx.log.warn(logContext, 'no speech pipeline is attached: the caller hears silence until the call ends')
  else
    void conversation.catch((error) => ctx.log.error({ ...logContext, err: error }, 'carrier call conversation failed'))
}
