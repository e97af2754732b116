import type { AppContext } from '../../context'
import type { WorkflowRunRow } from '../../db/schema'
import { DomainError, notFound } from '../../lib/errors'
import { isE164, isSipUri } from '../../lib/phone'
import { updateRun } from '../../runs/service'
import type { TransferFailureReason } from '../ari/transfer'
import type { CallTransferResult } from '../ari/call-session'
import {
  acknowledge,
  callLinks,
  runById,
  type Carrier,
  type CarrierTransferRequest,
  type TransferAddress,
  type TransferEvent,
  type WebhookAnswer,
  type WebhookRequest,
} from './carrier'
import type { CarrierMediaTransport } from '../../voice/carrier-media'
import type { MediaTransport } from '../../voice/media-transport'
import { applyStatusUpdate, recordedTransfer, verifiedRun } from './status-callbacks'
import { displayName } from './registry'

/**
 * Transfers of carrier calls, one flow for every carrier that has `transfer`: the agent's last words are heard,
 * the carrier is asked to ring the destination and bridge the caller to it, and its events about the destination's leg
 * (at `/api/v1/telephony/<provider>/transfer/<run_id>`, authenticated like its status callbacks) settle the outcome.
 *
 * Answered: the run keeps `logs.transfer` (destination, connected_at) and the agent's media stream is released without
 * hanging the call up; the call's end, reported by the destination leg's end or the call's final status, carries the
 * transfer (`call_transferred`, the destination, the talk time after the transfer).
 * Busy, no answer, refused or failed (a destination leg that ends without having answered): the model is told
 * (`transfer_failed`) and the conversation goes on. Markup carriers lose the call's media stream when its markup is
 * replaced, so we close it once the carrier took the transfer; their answer to the failure connects the caller to a new
 * stream of the same run, which takes the old one's place under the conversation (`CallMedia`). A caller who is not
 * back on a stream in time (`waits.transferReturnMs`) is hung up.
 * No outcome in time (ring timeout + `waits.transferOutcomeGraceMs`: a lost or late callback): the carrier is asked
 * about the call. One still up counts as transferred, since an unanswered destination stops ringing at the carrier's
 * own timeout and a hang-up could cut the caller off from the destination; its end comes with the final status. One
 * that is gone, or that the carrier cannot tell us about, failed (`no_answer`).
 */

export const TRANSFER_CALLBACK = 'transfer'
/** How long the agent's words before the transfer (the tool's message) may take to be heard. */
const HEARD_TIMEOUT_MS = 15_000

/**
 * The media of a carrier call as the conversation sees it: one transport over the streams the call has. While held (a
 * transfer is under way) a stream that ends leaves the call's media open; `attach` puts the caller's next stream in
 * its place.
 */
export type CallMedia = MediaTransport & {
  onDtmf(listener: (digit: string) => void): void
  hold(): void
  /** While held: closes the current stream (the carrier replaced the markup that fed it); the media stays open. */
  detach(): void
  /** The caller's new stream (after a failed transfer): replaces the current one, and holding ends. */
  attach(next: CarrierMediaTransport): void
  /** Holding ends; without a stream the media ends now. */
  release(): void
  /** Whether a stream carries the caller's audio now. */
  readonly streaming: boolean
}

/** A carrier call being transferred, and what the media stream side needs to know. */
export type TransferringCall = {
  run: WorkflowRunRow
  carrier: Carrier
  media: CallMedia
  /** Resolves once the call's end has been reported (the caller may hang up while the destination rings). */
  reported: Promise<void>
  /** The caller is with the destination: the stream's end must not hang the call up. Called before the media is released. */
  connected(): void
}

type PendingTransfer = {
  destination: string
  request: CarrierTransferRequest
  /** The carrier answered a failure with a new media stream for the caller: the next stream admitted for the run is it. */
  returning: boolean
  /** The outcome is known (from the carrier, or our own timeout): later events change nothing. */
  settled: boolean
  settle(outcome: CallTransferResult): void
  resume(transport: CarrierMediaTransport): void
}

const pendingByContext = new WeakMap<AppContext, Map<number, PendingTransfer>>()

function pendingTransfers(ctx: AppContext): Map<number, PendingTransfer> {
  let pending = pendingByContext.get(ctx)
  if (!pending) pendingByContext.set(ctx, (pending = new Map()))
  return pending
}

/** Markup carriers: a transfer replaces the call's markup, which ends its media stream; `connect` brings the caller back. */
const replacesStream = (carrier: Carrier) => carrier.connect !== undefined

const failed = (reason: TransferFailureReason, message: string): CallTransferResult => ({
  status: 'failed',
  reason,
  message,
})

const FAILURE_MESSAGES: Record<TransferFailureReason, (timeoutSeconds: number) => string> = {
  busy: () => 'The destination is busy',
  no_answer: (timeoutSeconds) => `No answer within ${timeoutSeconds} seconds`,
  rejected: () => 'The destination refused the call',
  failed: () => 'The transfer failed',
}

/** A carrier transfer's destination: an E.164 number or a SIP URI; null for anything else (extensions, dial strings). */
export function transferAddress(destination: string): TransferAddress | null {
  if (isE164(destination)) return { type: 'number', address: destination }
  return isSipUri(destination) ? { type: 'sip', address: destination } : null
}

/** The run's own number: the one its outbound call came from, or the one its inbound call was made to. */
const ownNumber = (run: WorkflowRunRow): string | null =>
  run.callType === 'inbound' ? run.calledNumber : run.callerNumber

/** Takes a stream opened for a run whose caller is coming back from a failed transfer; null when none is expected. */
export function returningCaller(ctx: AppContext, runId: number): ((transport: CarrierMediaTransport) => void) | null {
  const pending = pendingTransfers(ctx).get(runId)
  return pending?.returning ? pending.resume : null
}

function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** Hands the caller to `destination` through the carrier. Resolves to the outcome; never throws. One transfer at a time. */
export async function transferCarrierCall(
  ctx: AppContext,
  call: TransferringCall,
  { destination, timeoutSeconds }: { destination: string; timeoutSeconds: number },
  signal?: AbortSignal,
): Promise<CallTransferResult> {
  const { run, carrier, media } = call
  const transfers = pendingTransfers(ctx)
  if (!carrier.transfer) return failed('failed', `Calls on ${displayName(carrier.provider)} cannot be transferred`)
  const address = transferAddress(destination)
  if (!address)
    return failed(
      'failed',
      `Destination ${JSON.stringify(destination)} must be an E.164 number or a SIP URI to transfer a ${displayName(carrier.provider)} call`,
    )
  const providerCallId = runById(ctx, run.id)?.providerCallId
  const configuration =
    run.telephonyConfigurationId === null ? null : ctx.telephony.configurations.opened(run.telephonyConfigurationId)
  if (!providerCallId || !configuration)
    return failed('failed', 'The call cannot be transferred: the carrier has not identified it')
  if (transfers.has(run.id)) return failed('failed', 'The call is already being transferred')

  const links = callLinks(ctx, { runId: run.id, agentId: run.workflowId, organizationId: run.organizationId })
  const request: CarrierTransferRequest = {
    destination: address,
    timeoutSeconds,
    eventsUrl: `${links.publicUrl}/api/v1/telephony/${carrier.provider}/${TRANSFER_CALLBACK}/${run.id}`,
    callerId: ownNumber(run),
  }
  let resolveOutcome!: (outcome: CallTransferResult) => void
  const outcome = new Promise<CallTransferResult>((resolve) => {
    resolveOutcome = resolve
  })
  let onReturned!: () => void
  const returned = new Promise<void>((resolve) => {
    onReturned = resolve
  })
  const pending: PendingTransfer = {
    destination,
    request,
    returning: false,
    settled: false,
    settle(result) {
      pending.settled = true
      resolveOutcome(result)
    },
    resume(transport) {
      pending.returning = false
      media.attach(transport)
      onReturned()
    },
  }
  const logContext = { provider: carrier.provider, runId: run.id }
  transfers.set(run.id, pending)
  await within(media.mark(), HEARD_TIMEOUT_MS, 'closed')
  if (media.closed || signal?.aborted) {
    transfers.delete(run.id)
    return failed('failed', 'The call ended before the transfer')
  }
  media.hold()
  try {
    await carrier.transfer.start(ctx, configuration.credentials, providerCallId, request)
  } catch (error) {
    transfers.delete(run.id)
    media.release()
    if (!(error instanceof DomainError)) ctx.log.error({ ...logContext, err: error }, 'carrier transfer request failed')
    return failed(
      'failed',
      error instanceof DomainError ? String(error.detail) : 'The carrier could not be asked to transfer the call',
    )
  }
  if (replacesStream(carrier)) media.detach()
  const onAbort = () => pending.settle(failed('failed', 'The call ended during the transfer'))
  signal?.addEventListener('abort', onAbort, { once: true })
  void call.reported.then(() => {
    onAbort()
    onReturned()
  })
  const { waits } = ctx.telephony
  if (!(await within(outcome, timeoutSeconds * 1000 + waits.transferOutcomeGraceMs, null)))
    await settleUnheard(ctx, run, pending)
  const result = await outcome
  signal?.removeEventListener('abort', onAbort)
  ctx.log.info(
    { ...logContext, outcome: result.status, reason: result.status === 'failed' ? result.reason : undefined },
    'carrier call transfer',
  )
  if (result.status === 'transferred') {
    transfers.delete(run.id)
    call.connected()
    media.release()
    return result
  }
  // The carrier's answer to the failure reconnects the caller, or may still do so (a late failure after our timeout).
  if (pending.returning || !media.streaming) await within(returned, waits.transferReturnMs, undefined)
  transfers.delete(run.id)
  if (!media.streaming)
    ctx.log.warn(logContext, 'the caller did not come back on a media stream after the failed transfer')
  media.release()
  return result
}

/** No word from the carrier in time: the call's state at the carrier settles the transfer (see the top comment). */
async function settleUnheard(ctx: AppContext, run: WorkflowRunRow, pending: PendingTransfer): Promise<void> {
  const provider = ctx.telephony.providerFor(run.mode)
  const state =
    provider && run.callId && run.telephonyConfigurationId !== null
      ? await provider.callState(run.telephonyConfigurationId, run.callId)
      : 'unknown'
  ctx.log.warn({ provider: run.mode, runId: run.id, callState: state }, 'the carrier gave no transfer outcome in time')
  if (state === 'alive') recordConnected(ctx, run, pending)
  else if (!pending.settled)
    pending.settle(failed('no_answer', FAILURE_MESSAGES.no_answer(pending.request.timeoutSeconds)))
}

/** The destination answered while the transfer waits: the run keeps where the caller went and since when. */
function recordConnected(ctx: AppContext, run: WorkflowRunRow, pending: PendingTransfer | undefined): void {
  if (!pending || pending.settled) return
  updateRun(ctx, run.id, {
    logs: { transfer: { destination: pending.destination, connected_at: new Date(ctx.clock.now()).toISOString() } },
  })
  pending.settle({ status: 'transferred' })
}

/** The destination's leg ended after talking: the call is over for the caller too (the carrier hangs up the bridge). */
function endTransferredCall(
  ctx: AppContext,
  run: WorkflowRunRow,
  event: Extract<TransferEvent, { kind: 'ended' }>,
): void {
  const current = runById(ctx, run.id)
  const transfer = current && recordedTransfer(current.logs)
  if (!current || !transfer || !current.callId || current.state === 'completed') return
  const at = ctx.clock.now()
  const connectedAt = event.talkSeconds === undefined ? transfer.connectedAt : at - event.talkSeconds * 1000
  ctx.telephony.report({
    kind: 'ended',
    callId: current.callId,
    outcome: 'completed',
    at,
    answeredAt: current.startedAt ? Date.parse(current.startedAt) : null,
    providerStatus: `transfer:${event.providerStatus}`,
    transfer: { destination: transfer.destination, connectedAt },
  })
}

/** `/<provider>/transfer/<run_id>`: the carrier's events about a transfer's destination leg. */
export function handleTransferCallback(
  ctx: AppContext,
  carrier: Carrier,
  runId: number,
  webhook: WebhookRequest,
): WebhookAnswer {
  if (!carrier.transfer) throw notFound('Unknown telephony webhook')
  const { run, credentials } = verifiedRun(ctx, carrier, runById(ctx, runId), webhook)
  const event = carrier.transfer.parseEvent(webhook, run.providerCallId)
  const pending = pendingTransfers(ctx).get(run.id)
  ctx.log.info(
    {
      provider: carrier.provider,
      runId: run.id,
      event: event?.kind,
      status: event?.providerStatus,
      waiting: pending !== undefined,
    },
    'carrier transfer event',
  )
  const hangUp = () => carrier.refuse?.('outbound') ?? acknowledge()
  switch (event?.kind) {
    case undefined:
      return acknowledge()
    case 'instructions':
      // Once settled, nobody waits for the destination any more: the carrier must not ring it.
      return pending && !pending.settled && carrier.transfer.instructions
        ? carrier.transfer.instructions(pending.request)
        : hangUp()
    case 'answered':
      recordConnected(ctx, run, pending)
      return acknowledge()
    case 'caller':
      applyStatusUpdate(
        ctx,
        carrier,
        run,
        carrier.parseStatus(webhook) ?? { status: null, providerStatus: event.providerStatus },
      )
      return acknowledge()
    case 'ended': {
      // Not the outcome yet: an unanswered leg's own failure event follows, and the caller's call must go on till then.
      if (event.failureFollows && !event.failure && !event.answered && !recordedTransfer(run.logs)) return acknowledge()
      // A leg that ends while the transfer waits, and that neither this event nor an earlier one says was answered, failed.
      const failure = event.failure ?? (!event.answered && pending && !pending.settled ? 'failed' : null)
      if (failure) {
        // Nobody waits for the caller any more (a restart, or the outcome came too late): the call ends.
        if (!pending) return hangUp()
        pending.returning = replacesStream(carrier)
        pending.settle(failed(failure, FAILURE_MESSAGES[failure](pending.request.timeoutSeconds)))
        if (!carrier.connect) return acknowledge()
        return carrier.connect(
          callLinks(ctx, { runId: run.id, agentId: run.workflowId, organizationId: run.organizationId }),
          credentials,
        )
      }
      // Some carriers say the destination answered only once its leg is over.
      recordConnected(ctx, run, pending)
      endTransferredCall(ctx, run, event)
      return hangUp()
    }
  }
}
