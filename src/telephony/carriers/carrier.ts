import { createHmac, timingSafeEqual } from 'node:crypto'
import { and, eq, isNull } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { workflowRuns, type WorkflowRunRow } from '../../db/schema'
import { DomainError } from '../../lib/errors'
import { deriveKey } from '../../lib/hmac'
import type { Credentials, ProviderName } from '../../db/schema/telephony'
import type { MediaFraming } from '../../voice/carrier-media'
import type { TransferFailureReason } from '../ari/transfer'
import { DialError, type CallState, type DialRequest } from '../provider'

/**
 * What every carrier (Twilio, Telnyx, Plivo, Vobiz, Vonage, Cloudonix, Exotel, WhatsApp) provides, and the
 * TelephonyProvider built on top of one. A Carrier knows its wire formats only: the REST calls, how a webhook
 * is signed, what its status callbacks say, the markup that opens a media stream. Runs, outcomes and campaigns are
 * handled once, here and in status-callbacks.ts, media-streams.ts and inbound.ts.
 */

export type CarrierName = Exclude<ProviderName, 'ari'>

/** A carrier's webhook as it arrived, addressed by the URL the carrier called (our public URL, which it signs). */
export type WebhookRequest = {
  method: string
  url: string
  headers: Headers
  rawBody: string
  /** The form body of a POST, else the query string's parameters. */
  params: Record<string, string>
  /** The body when it is a JSON object. */
  json: Record<string, unknown> | null
}

/** `unsigned` answers 401, `invalid` 403; either way nothing changes. */
export type Verdict = 'valid' | 'unsigned' | 'invalid'

/** A carrier's call status in the reference's vocabulary (what `logs.telephony_status_callbacks` and dispositions show). */
export type CarrierCallStatus =
  | 'initiated'
  | 'ringing'
  | 'answered'
  | 'completed'
  | 'busy'
  | 'no-answer'
  | 'failed'
  | 'canceled'

export const FINAL_STATUSES = new Set<CarrierCallStatus>(['completed', 'busy', 'no-answer', 'failed', 'canceled'])

/** One status callback, read. `status` null: an event that says nothing about the call's progress (kept in the log). */
export type StatusUpdate = {
  status: CarrierCallStatus | null
  /** The carrier's own word for it (CallStatus, event type, hangup cause…). */
  providerStatus: string
  providerCallId?: string
  durationSeconds?: number
  /** The carrier's answering machine verdict as it said it, and whether it means a machine. */
  answeredBy?: string
  machine?: boolean
}

/** The URLs a call's carrier is given. */
export type CallLinks = {
  runId: number
  /** Base of every callback: our public URL. */
  publicUrl: string
  /** ws(s) URL the carrier streams the call's audio to; the admission token is in the path (carriers drop queries). */
  mediaStreamUrl: string
}

/** The start of an inbound call, as the carrier announces it. */
export type InboundCallStart = { providerCallId: string; from: string; to: string }

/** What a webhook answers: markup for the carrier, or an empty acknowledgement. */
export type WebhookAnswer = { status: number; contentType: string; body: string }

export const acknowledge = (): WebhookAnswer => ({ status: 200, contentType: 'text/plain', body: '' })
export const xmlAnswer = (body: string): WebhookAnswer => ({
  status: 200,
  contentType: 'application/xml',
  body: `<?xml version="1.0" encoding="UTF-8"?>${body}`,
})
export const jsonAnswer = (body: unknown): WebhookAnswer => ({
  status: 200,
  contentType: 'application/json',
  body: JSON.stringify(body),
})

/**
 * The carrier's time-limit field for a call: the agent's max duration, or no field (the carrier's own ceiling) when the
 * call may be transferred, so the caller's talk with the destination is not cut at the agent's limit.
 */
export function timeLimitField<F extends string, V = number>(
  field: F,
  dial: DialRequest,
  format?: (seconds: number) => V,
): Partial<Record<F, V>> {
  if (dial.mayBeTransferred) return {}
  const seconds = dial.maxCallDurationSeconds
  return { [field]: format ? format(seconds) : seconds } as Partial<Record<F, V>>
}

export const escapeXml = (value: string) =>
  value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')

/** A transfer's destination as carriers take it: a number or a SIP URI. */
export type TransferAddress = { type: 'number' | 'sip'; address: string }

/**
 * What a carrier is asked to do for a transfer; `eventsUrl` is where it reports the destination's leg. `callerId`: the
 * run's own number (the one it called from, or was called at), shown to the destination; carriers want one of the
 * account's numbers there.
 */
export type CarrierTransferRequest = {
  destination: TransferAddress
  timeoutSeconds: number
  eventsUrl: string
  callerId: string | null
}

/** What a transfer webhook says about the destination's leg. */
export type TransferEvent =
  | { kind: 'answered'; providerStatus: string }
  /**
   * The destination's leg is over: `failure` when the carrier says it never connected. `answered`: the event itself says
   * the destination answered (Twilio's DialCallStatus `completed`); otherwise only an earlier `answered` event makes it
   * a connected leg's end (after talking for `talkSeconds`, when said), and a leg that ends unanswered failed, unless
   * `failureFollows`: the carrier sends this for unanswered legs too, with their failure in an event of its own.
   */
  | {
      kind: 'ended'
      failure: TransferFailureReason | null
      answered: boolean
      talkSeconds?: number
      providerStatus: string
      failureFollows?: true
    }
  /** The carrier asks what to do with the caller now (Plivo fetches the transfer URL): answered with `instructions`. */
  | { kind: 'instructions'; providerStatus: string }
  /** An event about the caller's own call that reached the transfer URL (Telnyx): a status callback of the run. */
  | { kind: 'caller'; providerStatus: string }

/**
 * The end of a leg that the carrier reports for unanswered legs too (Vonage's `completed`, Plivo's DialAction `hangup`):
 * only a positive talk time says the destination answered; otherwise the leg's failure comes in an event of its own.
 */
export function legEnded(providerStatus: string, duration: unknown): TransferEvent {
  const talkSeconds = Number(duration)
  const talked = Number.isFinite(talkSeconds) && talkSeconds > 0
  return {
    kind: 'ended',
    failure: null,
    answered: talked,
    providerStatus,
    failureFollows: true,
    ...(talked ? { talkSeconds } : {}),
  }
}

/**
 * A carrier's own transfer: the caller's call is handed to the destination by the carrier, which reports the
 * destination's leg to `eventsUrl`. Markup carriers (Twilio, Plivo, Vobiz, Vonage) replace the call's markup, which
 * ends its media stream; after a failure their answer to the event connects the caller to a new media stream.
 */
export type CarrierTransfer = {
  start(
    ctx: AppContext,
    credentials: Credentials,
    providerCallId: string,
    request: CarrierTransferRequest,
  ): Promise<void>
  /** `callerCallId`: the carrier's id of the run's own call, to tell its events from the destination leg's. */
  parseEvent(request: WebhookRequest, callerCallId: string | null): TransferEvent | null
  /** The markup that rings the destination, for carriers that fetch it (`instructions`). */
  instructions?(request: CarrierTransferRequest): WebhookAnswer
}

export type Carrier = {
  provider: CarrierName
  /** How its media stream is framed; null when it has none we can carry (WhatsApp's is WebRTC). */
  mediaFraming: MediaFraming | null
  /**
   * Whether it always sends a final status for inbound calls too (CDRs, events to the connection or application URL);
   * it always does for the calls we place, since we ask for their callbacks.
   */
  reportsInboundCalls: boolean
  /** Its callback paths under `/api/v1/telephony/<provider>/` (e.g. `status-callback`, `events`), each with or without a run id. */
  callbackPaths: string[]
  /**
   * Handles its callbacks itself instead of as status callbacks (WhatsApp's one webhook carries every event);
   * `activeCredentials`: those of the carrier's active configurations, which the webhook is matched against.
   */
  webhook?(ctx: AppContext, request: WebhookRequest, activeCredentials: Credentials[]): Promise<WebhookAnswer>
  /** Places the call and returns the carrier's id for it. Throws the DomainError of `callCarrier`. */
  dial(ctx: AppContext, request: DialRequest, links: CallLinks): Promise<string>
  hangup(ctx: AppContext, credentials: Credentials, providerCallId: string): Promise<void>
  callState(ctx: AppContext, credentials: Credentials, providerCallId: string): Promise<CallState>
  /** `runId`: the run the webhook's URL names (null on inbound and number-level URLs); `nowMs`: our clock, for replay windows. */
  verify(request: WebhookRequest, credentials: Credentials, context: { runId: number | null; nowMs: number }): Verdict
  parseStatus(request: WebhookRequest): StatusUpdate | null
  /** Markup that connects the answered call to its media stream (answer URLs, inbound calls). */
  connect?(links: CallLinks, credentials: Credentials): WebhookAnswer
  /** Markup that ends the call at once: an answered outbound call (a machine answered), an inbound call nobody takes. */
  refuse?(direction: 'inbound' | 'outbound'): WebhookAnswer
  /** The start of an inbound call in a webhook; null when the webhook is about something else. */
  parseInbound?(request: WebhookRequest): InboundCallStart | null
  /** Carriers driven by API calls rather than markup (Telnyx) answer or reject inbound calls here. */
  answerInbound?(
    ctx: AppContext,
    credentials: Credentials,
    call: InboundCallStart,
    links: CallLinks,
  ): Promise<WebhookAnswer>
  rejectInbound?(ctx: AppContext, credentials: Credentials | null, call: InboundCallStart): Promise<WebhookAnswer>
  /** Hands an answered call to another destination; carriers without it cannot transfer (provider metadata says so). */
  transfer?: CarrierTransfer
}

/** Constant-time string comparison. */
export function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

export const hmac = (algorithm: 'sha1' | 'sha256', key: string, message: string) =>
  createHmac(algorithm, key).update(message)

function mediaStreamToken(ctx: AppContext, agentId: number, organizationId: number, runId: number): string {
  return createHmac('sha256', deriveKey(ctx.masterKey, 'carrier-media-stream'))
    .update(`${agentId}:${organizationId}:${runId}`)
    .digest('hex')
}

export function mediaStreamTokenMatches(
  ctx: AppContext,
  agentId: number,
  organizationId: number,
  runId: number,
  token: string,
): boolean {
  return sameText(token, mediaStreamToken(ctx, agentId, organizationId, runId))
}

export function callLinks(ctx: AppContext, run: { runId: number; agentId: number; organizationId: number }): CallLinks {
  const { publicUrl } = ctx.config
  const token = mediaStreamToken(ctx, run.agentId, run.organizationId, run.runId)
  return {
    runId: run.runId,
    publicUrl,
    mediaStreamUrl: `${publicUrl.replace(/^http/, 'ws')}/api/v1/telephony/ws/${run.agentId}/${run.organizationId}/${run.runId}/${token}`,
  }
}

export const runById = (ctx: AppContext, runId: number): WorkflowRunRow | undefined =>
  ctx.db.select().from(workflowRuns).where(eq(workflowRuns.id, runId)).get()

export const runByProviderCallId = (
  ctx: AppContext,
  provider: CarrierName,
  providerCallId: string,
): WorkflowRunRow | undefined =>
  ctx.db
    .select()
    .from(workflowRuns)
    .where(and(eq(workflowRuns.mode, provider), eq(workflowRuns.providerCallId, providerCallId)))
    .get()

export const runByCallId = (ctx: AppContext, callId: string): WorkflowRunRow | undefined =>
  ctx.db.select().from(workflowRuns).where(eq(workflowRuns.callId, callId)).get()

/** Stores the carrier's id of a run's call, unless one is stored already (the first one learnt wins). */
export function recordProviderCallId(ctx: AppContext, runId: number, providerCallId: string): void {
  ctx.db
    .update(workflowRuns)
    .set({ providerCallId })
    .where(and(eq(workflowRuns.id, runId), isNull(workflowRuns.providerCallId)))
    .run()
}

/** The carrier's refusal as a DialError (its detail is safe to show); anything else is a bug and rethrown. */
export function asDialError(error: unknown): never {
  if (error instanceof DomainError) throw new DialError(String(error.detail), error.kind === 'upstream_failed')
  throw error
}
