import type { AppContext } from '../../context'
import { basicAuth, callCarrier, callCarrierForJson, requireId } from './http'
import {
  escapeXml,
  hmac,
  legEnded,
  sameText,
  xmlAnswer,
  type CarrierCallStatus,
  type Carrier,
  type CarrierTransferRequest,
  type InboundCallStart,
  type StatusUpdate,
  type TransferEvent,
  type Verdict,
  type WebhookRequest,
  timeLimitField,
} from './carrier'
import type { TransferFailureReason } from '../ari/transfer'
import type { Credentials } from '../../db/schema/telephony'
import { applicationAccount, applicationAccountSchema } from '../provider-info'

// Plivo, and the carrier factory Vobiz (Plivo-compatible, vobiz.ts) shares: the Call API (JSON, numbers without
// '+'), Plivo XML answers with a bidirectional µ-law <Stream>, hang-up / ring / machine detection callbacks signed with the nonce-based V3 (or V2) signature.
// They differ in authentication headers, in what the V3 signature covers and in their header names.

export const PlivoConfigSchema = applicationAccountSchema('plivo')

export const plivo = applicationAccount('plivo', 'Plivo', PlivoConfigSchema)

const STATUSES: Record<string, CarrierCallStatus> = {
  ringing: 'ringing',
  'in-progress': 'answered',
  completed: 'completed',
  busy: 'busy',
  failed: 'failed',
  timeout: 'no-answer',
  'no-answer': 'no-answer',
  cancel: 'canceled',
}

/** What tells the Plivo-compatible carriers apart; `applicationCarrier` builds a Carrier from one. */
export type PlivoVariant = {
  provider: 'plivo' | 'vobiz'
  displayName: string
  /** Header prefix of its signatures: X-Plivo-Signature-…, X-Vobiz-Signature-…. */
  signaturePrefix: string
  authHeaders(credentials: Credentials): Record<string, string>
  /** What the V3 signature covers besides the nonce. */
  v3SignedUrl(method: string, url: string, params: Record<string, string>): string
}

export const withoutQuery = (url: string) => url.split('?')[0]

/** Plivo's sorted `name=value&…` query string (repeated names sorted by value). */
function sortedQuery(entries: [string, string][]): string {
  return entries
    .sort(([a, av], [b, bv]) => (a === b ? av.localeCompare(bv) : a < b ? -1 : 1))
    .map(([name, value]) => `${name}=${value}`)
    .join('&')
}

/**
 * The URL Plivo's V3 signature covers: for a GET, the URL with its query (and parameters) sorted; for a POST, the URL,
 * `?` and its sorted query, a `.` when there are both a query and POST parameters, then the POST parameters sorted by
 * name, each as name followed by value.
 */
export function plivoSignedUrl(method: string, url: string, params: Record<string, string>): string {
  const parsed = new URL(url)
  const base = `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  const query = [...parsed.searchParams.entries()]
  if (method === 'GET') {
    const sorted = sortedQuery([...query, ...Object.entries(params)])
    return sorted ? `${base}?${sorted}` : base
  }
  const sorted = sortedQuery(query)
  const posted = Object.keys(params)
    .sort()
    .map((name) => `${name}${params[name]}`)
    .join('')
  const hasParams = Object.keys(params).length > 0
  return `${base}${sorted || hasParams ? `?${sorted}` : ''}${sorted && hasParams ? '.' : ''}${posted}`
}

const PLIVO: PlivoVariant = {
  provider: 'plivo',
  displayName: plivo.displayName,
  signaturePrefix: 'x-plivo-signature',
  authHeaders: (credentials) => ({ authorization: basicAuth(credentials.auth_id, credentials.auth_token) }),
  v3SignedUrl: plivoSignedUrl,
}

/** V3: base64 HMAC-SHA256 of "<signed URL>.<nonce>"; the header may list several signatures. V2: "<URL without query><nonce>". */
function verifyNonceSignature(variant: PlivoVariant, webhook: WebhookRequest, authToken: string): Verdict {
  const header = (name: string) => webhook.headers.get(`${variant.signaturePrefix}-${name}`)
  const v3 = header('v3') ?? header('ma-v3')
  const v3Nonce = header('v3-nonce') ?? header('ma-v3-nonce')
  if (v3 && v3Nonce) {
    const params = webhook.method === 'POST' ? webhook.params : {}
    const expected = hmac(
      'sha256',
      authToken,
      `${variant.v3SignedUrl(webhook.method, webhook.url, params)}.${v3Nonce}`,
    ).digest('base64')
    return v3.split(',').some((candidate) => sameText(candidate.trim(), expected)) ? 'valid' : 'invalid'
  }
  const v2 = header('v2')
  const v2Nonce = header('v2-nonce')
  if (v2 && v2Nonce) {
    return sameText(v2, hmac('sha256', authToken, `${withoutQuery(webhook.url)}${v2Nonce}`).digest('base64'))
      ? 'valid'
      : 'invalid'
  }
  return 'unsigned'
}

const bareNumber = (number: string) => number.replace(/^\+/, '')

function parseStatus(webhook: WebhookRequest): StatusUpdate | null {
  const {
    CallUUID: callUuid,
    RequestUUID: requestUuid,
    CallStatus: callStatus,
    Duration: duration,
    Machine: machine,
    Direction: direction,
  } = webhook.params
  const providerCallId = direction === 'inbound' ? callUuid : requestUuid || callUuid
  if (!providerCallId) return null
  return {
    status: STATUSES[callStatus] ?? null,
    providerStatus: callStatus ?? webhook.params.Event ?? 'unknown',
    providerCallId,
    ...(duration ? { durationSeconds: Number(duration) } : {}),
    ...(machine !== undefined
      ? { answeredBy: machine === 'true' ? 'machine' : 'human', machine: machine === 'true' }
      : {}),
  }
}

const DIAL_FAILURES: Record<string, TransferFailureReason> = {
  busy: 'busy',
  'no-answer': 'no_answer',
  timeout: 'no_answer',
  cancel: 'failed',
  failed: 'failed',
}

/**
 * A transfer moves the call (its A leg) to the transfer URL, which answers <Dial>. Its callbackUrl says when the
 * destination answered (DialAction `answer`) and when its leg hung up (DialAction `hangup`, with DialBLegDuration: the
 * talk time); its action URL how the dial ended (DialStatus: completed, busy, no-answer, timeout, failed; Vobiz also
 * cancel), without a duration.
 */
function parseTransferEvent(webhook: WebhookRequest): TransferEvent | null {
  const { DialStatus: dialStatus, DialAction: dialAction, DialBLegDuration: duration } = webhook.params
  if (dialStatus === 'completed') return { kind: 'ended', failure: null, answered: true, providerStatus: dialStatus }
  if (dialStatus)
    return {
      kind: 'ended',
      failure: DIAL_FAILURES[dialStatus] ?? 'failed',
      answered: false,
      providerStatus: dialStatus,
    }
  if (dialAction === 'answer') return { kind: 'answered', providerStatus: dialAction }
  // An unanswered leg hangs up too (duration 0): the action's DialStatus says why.
  if (dialAction === 'hangup') return legEnded(`hangup:${webhook.params.DialBLegHangupCause ?? 'unknown'}`, duration)
  return dialAction ? null : { kind: 'instructions', providerStatus: webhook.params.CallStatus ?? 'transfer' }
}

/** The <Dial> of a transfer; `callerId` shows the run's own number (without it, Vobiz warns, the B leg may fail). */
function transferDial(transfer: CarrierTransferRequest) {
  const url = escapeXml(transfer.eventsUrl)
  const { type, address } = transfer.destination
  const noun =
    type === 'sip' ? `<User>${escapeXml(address)}</User>` : `<Number>${escapeXml(bareNumber(address))}</Number>`
  const callerId = transfer.callerId ? ` callerId="${escapeXml(bareNumber(transfer.callerId))}"` : ''
  return xmlAnswer(
    `<Response><Dial timeout="${transfer.timeoutSeconds}"${callerId} action="${url}" method="POST" callbackUrl="${url}" callbackMethod="POST">${noun}</Dial></Response>`,
  )
}

export function applicationCarrier(variant: PlivoVariant): Carrier {
  const { provider, displayName } = variant
  const request = (ctx: AppContext, credentials: Credentials) => ({
    provider,
    displayName,
    baseUrl: ctx.providerApis[provider],
    headers: variant.authHeaders(credentials),
    secrets: [credentials.auth_id, credentials.auth_token],
  })
  const accountPath = (credentials: Credentials) => `/v1/Account/${encodeURIComponent(String(credentials.auth_id))}`
  return {
    provider,
    mediaFraming: 'plivo',
    // The application's hang-up URL (its answer URL unless set otherwise).
    reportsInboundCalls: true,
    callbackPaths: ['hangup-callback', 'ring-callback', 'machine-detection'],
    async dial(ctx, dial, links) {
      const callback = (name: string) => `${links.publicUrl}/api/v1/telephony/${provider}/${name}/${links.runId}`
      const action = 'place the call'
      const answer = await callCarrierForJson(ctx, {
        ...request(ctx, dial.credentials),
        action,
        method: 'POST',
        path: `${accountPath(dial.credentials)}/Call/`,
        json: {
          from: bareNumber(dial.callerId!),
          to: bareNumber(dial.destination),
          answer_url: `${links.publicUrl}/api/v1/telephony/${provider}/answer/${links.runId}`,
          answer_method: 'POST',
          hangup_url: callback('hangup-callback'),
          hangup_method: 'POST',
          ring_url: callback('ring-callback'),
          ring_method: 'POST',
          ring_timeout: dial.ringTimeoutSeconds,
          ...timeLimitField('time_limit', dial),
          ...(dial.detectAnsweringMachine
            ? {
                machine_detection: 'true',
                machine_detection_url: callback('machine-detection'),
                machine_detection_method: 'POST',
              }
            : {}),
        },
      })
      return requireId(displayName, action, answer.request_uuid ?? answer.call_uuid)
    },
    async hangup(ctx, credentials, callUuid) {
      const base = {
        ...request(ctx, credentials),
        action: 'hang up the call',
        method: 'DELETE' as const,
        idempotent: true,
        accept: [404],
      }
      const { status } = await callCarrier(ctx, {
        ...base,
        path: `${accountPath(credentials)}/Call/${encodeURIComponent(callUuid)}/`,
      })
      // Not answered yet: it is still a call request.
      if (status === 404)
        await callCarrier(ctx, {
          ...base,
          path: `${accountPath(credentials)}/Request/${encodeURIComponent(callUuid)}/`,
        })
    },
    async callState(ctx, credentials, callUuid) {
      const { status } = await callCarrier(ctx, {
        ...request(ctx, credentials),
        action: 'look up the call',
        method: 'GET',
        path: `${accountPath(credentials)}/Call/${encodeURIComponent(callUuid)}/?status=live`,
        idempotent: true,
        accept: [404],
      })
      return status === 404 ? 'gone' : 'alive'
    },
    verify: (webhook, credentials) => verifyNonceSignature(variant, webhook, String(credentials.auth_token)),
    parseStatus,
    transfer: {
      async start(ctx, credentials, callUuid, transfer) {
        await callCarrier(ctx, {
          ...request(ctx, credentials),
          action: 'transfer the call',
          method: 'POST',
          path: `${accountPath(credentials)}/Call/${encodeURIComponent(callUuid)}/`,
          json: { legs: 'aleg', aleg_url: transfer.eventsUrl, aleg_method: 'POST' },
        })
      },
      parseEvent: parseTransferEvent,
      instructions: transferDial,
    },
    connect: (links) =>
      xmlAnswer(
        `<Response><Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000">${escapeXml(links.mediaStreamUrl)}</Stream></Response>`,
      ),
    refuse: (direction) =>
      xmlAnswer(
        direction === 'inbound' ? '<Response><Hangup reason="rejected"/></Response>' : '<Response><Hangup/></Response>',
      ),
    parseInbound(webhook): InboundCallStart | null {
      const { CallUUID: callUuid, From: from, To: to, Direction: direction, Event: event } = webhook.params
      if (!callUuid || !to || direction !== 'inbound' || (event !== undefined && event !== 'StartApp')) return null
      return { providerCallId: callUuid, from: from ?? '', to }
    },
  }
}

export const plivoCarrier = applicationCarrier(PLIVO)
