import type { AppContext } from '../../context'
import { basicAuth, callCarrier, callCarrierForJson, requireId } from './http'
import {
  escapeXml,
  hmac,
  sameText,
  xmlAnswer,
  type CarrierCallStatus,
  type Carrier,
  type CarrierTransferRequest,
  type InboundCallStart,
  type StatusUpdate,
  type TransferEvent,
  type WebhookRequest,
  timeLimitField,
} from './carrier'
import type { TransferFailureReason } from '../ari/transfer'
import type { Credentials } from '../../db/schema/telephony'
import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../lib/limits'

// Twilio Programmable Voice: Calls API (form-encoded, Basic auth), TwiML answers, X-Twilio-Signature webhooks.
// Cloudonix speaks the same TwiML/Media Streams dialect; its implementation reuses `connectTwiml`.

export const TwilioConfigSchema = t.Object({
  provider: providerTag('twilio'),
  account_sid: t.String({ maxLength: MAX_NAME_LENGTH, description: 'Account SID.' }),
  auth_token: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'Auth token.' }),
})

export const twilio: ProviderInfo = {
  name: 'twilio',
  displayName: 'Twilio',
  connectivity: 'api',
  schema: TwilioConfigSchema,
  fields: [
    { name: 'account_sid', label: 'Account SID', type: 'text', sensitive: true, placeholder: 'AC...' },
    { name: 'auth_token', label: 'Auth Token', type: 'password', sensitive: true },
  ],
  ...CARRIER_ACCOUNT,
}

/** Twilio's CallStatus words, which Exotel's Status shares. */
export const TWILIO_CALL_STATUSES: Record<string, CarrierCallStatus> = {
  queued: 'initiated',
  initiated: 'initiated',
  ringing: 'ringing',
  'in-progress': 'answered',
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no-answer',
  failed: 'failed',
  canceled: 'canceled',
}

/** The statuses (Twilio's and Exotel's) of a call that is not over. */
export const LIVE_CALL_STATUSES = new Set(['queued', 'initiated', 'ringing', 'in-progress'])

/** AnsweredBy values that mean no person: machine_start, machine_end_beep, machine_end_silence, machine_end_other, fax. */
export const isMachineAnswer = (answeredBy: string) => answeredBy.startsWith('machine') || answeredBy === 'fax'

const callsPath = (credentials: Credentials) =>
  `/2010-04-01/Accounts/${encodeURIComponent(String(credentials.account_sid))}/Calls`

const request = (ctx: AppContext, credentials: Credentials) => ({
  provider: 'twilio' as const,
  displayName: twilio.displayName,
  baseUrl: ctx.providerApis.twilio,
  headers: { authorization: basicAuth(credentials.account_sid, credentials.auth_token) },
  secrets: [credentials.account_sid, credentials.auth_token],
})

/** Twilio's signature: base64 HMAC-SHA1 under the auth token of the URL followed by each POST parameter, sorted by name, as name+value. */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((name) => name + params[name])
      .join('')
  return hmac('sha1', authToken, data).digest('base64')
}

/** TwiML that connects the call to a bidirectional media stream; <Connect> holds the call until the stream ends. */
export const connectTwiml = (mediaStreamUrl: string) =>
  xmlAnswer(`<Response><Connect><Stream url="${escapeXml(mediaStreamUrl)}"/></Connect></Response>`)

/**
 * The TwiML a transfer replaces the call's with (ending its media stream): <Dial> rings the destination for the timeout;
 * its `answered` progress event says when the destination picked up, and the action URL is told how the dial ended.
 */
function transferTwiml(transfer: CarrierTransferRequest): string {
  const url = escapeXml(transfer.eventsUrl)
  const progress = `statusCallbackEvent="answered" statusCallback="${url}" statusCallbackMethod="POST"`
  const noun = transfer.destination.type === 'sip' ? 'Sip' : 'Number'
  const callerId = transfer.callerId ? ` callerId="${escapeXml(transfer.callerId)}"` : ''
  return (
    `<Response><Dial timeout="${transfer.timeoutSeconds}"${callerId} action="${url}" method="POST">` +
    `<${noun} ${progress}>${escapeXml(transfer.destination.address)}</${noun}></Dial></Response>`
  )
}

const DIAL_FAILURES: Record<string, TransferFailureReason> = {
  busy: 'busy',
  'no-answer': 'no_answer',
  failed: 'failed',
  canceled: 'failed',
}

/** The <Dial> action (DialCallStatus, DialCallDuration) or the dialled leg's progress callback (ParentCallSid, CallStatus). */
function parseTransferEvent(webhook: WebhookRequest): TransferEvent | null {
  const {
    DialCallStatus: dialStatus,
    DialCallDuration: duration,
    CallStatus: callStatus,
    ParentCallSid: parent,
  } = webhook.params
  if (dialStatus === 'completed' || dialStatus === 'answered') {
    return {
      kind: 'ended',
      failure: null,
      answered: true,
      providerStatus: dialStatus,
      ...(duration ? { talkSeconds: Number(duration) } : {}),
    }
  }
  if (dialStatus)
    return {
      kind: 'ended',
      failure: DIAL_FAILURES[dialStatus] ?? 'failed',
      answered: false,
      providerStatus: dialStatus,
    }
  return parent && callStatus === 'in-progress' ? { kind: 'answered', providerStatus: callStatus } : null
}

export function parseTwilioStatus(request: WebhookRequest): StatusUpdate | null {
  const { CallStatus: callStatus, CallSid: callSid, CallDuration: duration, AnsweredBy: answeredBy } = request.params
  if (!callSid) return null
  return {
    status: TWILIO_CALL_STATUSES[callStatus] ?? null,
    providerStatus: callStatus ?? 'unknown',
    providerCallId: callSid,
    ...(duration !== undefined && duration !== '' ? { durationSeconds: Number(duration) } : {}),
    ...(answeredBy ? { answeredBy, machine: isMachineAnswer(answeredBy) } : {}),
  }
}

export const twilioCarrier: Carrier = {
  provider: 'twilio',
  mediaFraming: 'twilio',
  // Only when a status callback URL is set on the number in its console.
  reportsInboundCalls: false,
  callbackPaths: ['status-callback'],
  async dial(ctx, dial, links) {
    const form = new URLSearchParams({
      To: dial.destination,
      From: dial.callerId!,
      Url: `${links.publicUrl}/api/v1/telephony/twilio/answer/${links.runId}`,
      Method: 'POST',
      StatusCallback: `${links.publicUrl}/api/v1/telephony/twilio/status-callback/${links.runId}`,
      StatusCallbackMethod: 'POST',
      Timeout: String(dial.ringTimeoutSeconds),
      ...timeLimitField('TimeLimit', dial, String),
    })
    for (const event of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', event)
    if (dial.detectAnsweringMachine) form.set('MachineDetection', 'Enable')
    const action = 'place the call'
    const call = await callCarrierForJson(ctx, {
      ...request(ctx, dial.credentials),
      action,
      method: 'POST',
      path: `${callsPath(dial.credentials)}.json`,
      form,
    })
    return requireId(twilio.displayName, action, call.sid)
  },
  async hangup(ctx, credentials, callSid) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'hang up the call',
      method: 'POST',
      path: `${callsPath(credentials)}/${encodeURIComponent(callSid)}.json`,
      form: new URLSearchParams({ Status: 'completed' }),
      idempotent: true,
      accept: [404],
    })
  },
  async callState(ctx, credentials, callSid) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'look up the call',
      method: 'GET',
      path: `${callsPath(credentials)}/${encodeURIComponent(callSid)}.json`,
      idempotent: true,
      accept: [404],
    })
    if (status === 404) return 'gone'
    return LIVE_CALL_STATUSES.has(String(payload?.status)) ? 'alive' : 'gone'
  },
  verify(webhook, credentials) {
    const signature = webhook.headers.get('x-twilio-signature')
    if (!signature) return 'unsigned'
    // Signed by a Webhook Rule's SharedKey (HMAC-SHA256, public beta), whose secret a configuration does not hold: not supported.
    if (webhook.headers.has('x-twilio-webhooks-signature-settings')) return 'invalid'
    const params = webhook.method === 'POST' ? webhook.params : {}
    return sameText(signature, twilioSignature(String(credentials.auth_token), webhook.url, params))
      ? 'valid'
      : 'invalid'
  },
  parseStatus: parseTwilioStatus,
  transfer: {
    async start(ctx, credentials, callSid, transfer) {
      await callCarrier(ctx, {
        ...request(ctx, credentials),
        action: 'transfer the call',
        method: 'POST',
        path: `${callsPath(credentials)}/${encodeURIComponent(callSid)}.json`,
        form: new URLSearchParams({ Twiml: transferTwiml(transfer) }),
      })
    },
    parseEvent: parseTransferEvent,
  },
  connect: (links) => connectTwiml(links.mediaStreamUrl),
  refuse: (direction) =>
    xmlAnswer(direction === 'inbound' ? '<Response><Reject/></Response>' : '<Response><Hangup/></Response>'),
  parseInbound(webhook): InboundCallStart | null {
    const { CallSid: callSid, From: from, To: to } = webhook.params
    return callSid && to ? { providerCallId: callSid, from: from ?? '', to } : null
  },
}
