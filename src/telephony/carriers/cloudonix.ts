import type { AppContext } from '../../context'
import { isPlainObject } from '../../lib/values'
import { bearer, callCarrier, callCarrierForJson, requireId } from './http'
import {
  sameText,
  xmlAnswer,
  type CarrierCallStatus,
  type Carrier,
  type InboundCallStart,
  type StatusUpdate,
  type WebhookRequest,
} from './carrier'
import type { Credentials } from '../config/providers'
import { connectTwiml } from './twilio'

// Cloudonix: calls placed through the domain's application API with inline CXML (Twilio's dialect, so the same
// <Connect><Stream> and Media Streams framing), outcomes from the domain's CDR webhook, matched by session token.
// Its webhooks carry no signature: the `x-cx-apikey` header must equal the configuration's bearer token.

const DISPOSITIONS: Record<string, CarrierCallStatus> = {
  ANSWER: 'completed',
  ANSWERED: 'completed',
  BUSY: 'busy',
  CANCEL: 'canceled',
  NOANSWER: 'no-answer',
  'NO ANSWER': 'no-answer',
  FAILED: 'failed',
  CONGESTION: 'failed',
}

const domainOf = (credentials: Credentials) => encodeURIComponent(String(credentials.domain_id))
const sessionPath = (credentials: Credentials, token: string) =>
  `/customers/self/domains/${domainOf(credentials)}/sessions/${encodeURIComponent(token)}`

const request = (ctx: AppContext, credentials: Credentials) => ({
  provider: 'cloudonix' as const,
  baseUrl: ctx.providerApis.cloudonix,
  headers: { authorization: bearer(credentials.bearer_token) },
  secrets: [credentials.bearer_token],
})

/** A CDR: the session token and its disposition (ANSWER, BUSY, CANCEL, NOANSWER, FAILED, CONGESTION), billsec the talk time. */
function parseCdr(webhook: WebhookRequest): StatusUpdate | null {
  const cdr = webhook.json
  const session = isPlainObject(cdr?.session) ? cdr.session : null
  const token = session?.token ?? cdr?.token
  if (typeof token !== 'string') return null
  const disposition = String(cdr?.disposition ?? '').toUpperCase()
  const talkSeconds = Number(cdr?.billsec ?? cdr?.billSec)
  return {
    status: DISPOSITIONS[disposition] ?? null,
    providerStatus: disposition || 'unknown',
    providerCallId: token,
    ...(Number.isFinite(talkSeconds) ? { durationSeconds: talkSeconds } : {}),
  }
}

export const cloudonixCarrier: Carrier = {
  provider: 'cloudonix',
  mediaFraming: 'twilio',
  reportsInboundCalls: true,
  callbackPaths: ['cdr'],
  async dial(ctx, dial, links) {
    const action = 'place the call'
    const answer = await callCarrierForJson(ctx, {
      ...request(ctx, dial.credentials),
      action,
      method: 'POST',
      path: `/calls/${domainOf(dial.credentials)}/application`,
      json: {
        destination: dial.destination,
        'caller-id': dial.callerId,
        timeout: dial.ringTimeoutSeconds,
        cxml: connectTwiml(links.mediaStreamUrl).body,
      },
    })
    return requireId('cloudonix', action, answer.token)
  },
  async hangup(ctx, credentials, token) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'hang up the call',
      method: 'DELETE',
      path: sessionPath(credentials, token),
      idempotent: true,
      accept: [404],
    })
  },
  async callState(ctx, credentials, token) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'look up the call',
      method: 'GET',
      path: sessionPath(credentials, token),
      idempotent: true,
      accept: [404],
    })
    return status === 404 || payload?.status === 'ended' ? 'gone' : 'alive'
  },
  verify(webhook, credentials) {
    const key = webhook.headers.get('x-cx-apikey')
    if (!key) return 'unsigned'
    return sameText(key, String(credentials.bearer_token)) ? 'valid' : 'invalid'
  },
  parseStatus: parseCdr,
  connect: (links) => connectTwiml(links.mediaStreamUrl),
  refuse: () => xmlAnswer('<Response><Hangup/></Response>'),
  parseInbound(webhook): InboundCallStart | null {
    const { Session: session, CallSid: callSid, From: from, To: to } = webhook.params
    const id = session || callSid
    return id && to ? { providerCallId: id, from: from ?? '', to } : null
  },
}
