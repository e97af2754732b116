import { isPlainObject } from '../../lib/values'
import { basicAuth, callCarrier, callCarrierForJson, requireId } from './http'
import {
  acknowledge,
  hmac,
  jsonAnswer,
  sameText,
  type Carrier,
  type InboundCallStart,
  type StatusUpdate,
  type Verdict,
  type WebhookRequest,
  timeLimitField,
} from './carrier'
import type { Credentials } from '../../db/schema/telephony'
import { LIVE_CALL_STATUSES, TWILIO_CALL_STATUSES } from './twilio'
import { Type as t } from '@sinclair/typebox'
import { HTTP_URL_PATTERN, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH, MAX_URL_LENGTH } from '../../lib/limits'

// Exotel: "connect to a stream" calls (form-encoded, Basic auth with the API key and token, on the configuration's
// regional api_base_url), terminal status callbacks authenticated by a per-run HMAC token in their URL, inbound calls
// through the Voicebot applet's dynamic URL (answered with the stream's WebSocket URL). Its media stream carries 16-bit
// linear PCM at 8 kHz in JSON.

export const ExotelConfigSchema = t.Object({
  provider: providerTag('exotel'),
  account_sid: t.String({ maxLength: MAX_NAME_LENGTH, description: 'Account SID.' }),
  api_key: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'API key.' }),
  api_token: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'API token.' }),
  api_base_url: t.Optional(
    t.String({
      default: 'https://api.in.exotel.com',
      maxLength: MAX_URL_LENGTH,
      pattern: HTTP_URL_PATTERN,
      description: 'Regional API base URL; the default is the India region.',
    }),
  ),
  from_numbers: t.Optional(
    t.Array(t.String({ maxLength: MAX_NAME_LENGTH }), {
      description: 'Ignored: phone numbers are managed through the phone-number endpoints.',
    }),
  ),
})

export const exotel: ProviderInfo = {
  name: 'exotel',
  displayName: 'Exotel',
  connectivity: 'api',
  schema: ExotelConfigSchema,
  fields: [
    { name: 'account_sid', label: 'Account SID', type: 'text', sensitive: true },
    { name: 'api_key', label: 'API Key', type: 'password', sensitive: true },
    { name: 'api_token', label: 'API Token', type: 'password', sensitive: true },
    {
      name: 'api_base_url',
      label: 'API Base URL',
      type: 'text',
      destination: true,
      placeholder: 'https://api.in.exotel.com',
    },
  ],
  serverManaged: [],
  supportsTrunks: false,
  supportsOutbound: true,
  // A "connect to a stream" call has no API to redirect it (a transfer needs a Connect applet in a dashboard flow).
  supportsCallTransfer: false,
  // Inbound routing on this provider is configured in its own console, not over its API.
  supportsPhoneNumberSync: false,
  requiresCallerId: true,
}

/** The token that authenticates a run's status callback: hex HMAC-SHA256 under the API token of "exotel-status:<sid>:<run>". */
export const exotelStatusToken = (credentials: Credentials, runId: number) =>
  hmac('sha256', String(credentials.api_token), `exotel-status:${String(credentials.account_sid)}:${runId}`).digest(
    'hex',
  )

const callsPath = (credentials: Credentials) =>
  `/v1/Accounts/${encodeURIComponent(String(credentials.account_sid))}/Calls`

const request = (credentials: Credentials) => ({
  provider: 'exotel' as const,
  displayName: exotel.displayName,
  baseUrl: String(credentials.api_base_url).replace(/\/+$/, ''),
  headers: { authorization: basicAuth(credentials.api_key, credentials.api_token) },
  secrets: [credentials.account_sid, credentials.api_key, credentials.api_token],
})

/** A status callback's per-run token; an inbound webhook's Basic credentials (the applet URL's user and password). */
function verifyExotel(webhook: WebhookRequest, credentials: Credentials, runId: number | null): Verdict {
  const token = new URL(webhook.url).searchParams.get('exotel_auth')
  const authorization = webhook.headers.get('authorization')
  if (token !== null && runId !== null)
    return sameText(token, exotelStatusToken(credentials, runId)) ? 'valid' : 'invalid'
  if (authorization)
    return sameText(authorization, basicAuth(credentials.api_key, credentials.api_token)) ? 'valid' : 'invalid'
  return token !== null ? 'invalid' : 'unsigned'
}

const fieldsOf = (webhook: WebhookRequest): Record<string, unknown> => webhook.json ?? webhook.params

function parseStatus(webhook: WebhookRequest): StatusUpdate | null {
  const { CallSid: callSid, Status: status, ConversationDuration: talk, Duration: duration } = fieldsOf(webhook)
  if (typeof callSid !== 'string') return null
  const seconds = Number(talk ?? duration)
  return {
    status: TWILIO_CALL_STATUSES[String(status)] ?? null,
    providerStatus: String(status ?? 'unknown'),
    providerCallId: callSid,
    ...(Number.isFinite(seconds) && (talk ?? duration) !== undefined ? { durationSeconds: seconds } : {}),
  }
}

export const exotelCarrier: Carrier = {
  provider: 'exotel',
  mediaFraming: 'exotel',
  reportsInboundCalls: false,
  callbackPaths: ['status-callback'],
  async dial(ctx, dial, links) {
    const form = new URLSearchParams({
      From: dial.destination,
      CallerId: dial.callerId!,
      StreamUrl: links.mediaStreamUrl,
      StreamType: 'bidirectional',
      TimeOut: String(dial.ringTimeoutSeconds),
      ...timeLimitField('TimeLimit', dial, String),
      StatusCallback: `${links.publicUrl}/api/v1/telephony/exotel/status-callback/${links.runId}?exotel_auth=${exotelStatusToken(dial.credentials, links.runId)}`,
      'StatusCallbackEvents[]': 'terminal',
    })
    const action = 'place the call'
    const answer = await callCarrierForJson(ctx, {
      ...request(dial.credentials),
      action,
      method: 'POST',
      path: `${callsPath(dial.credentials)}/connect.json`,
      form,
    })
    return requireId(exotel.displayName, action, isPlainObject(answer.Call) ? answer.Call.Sid : undefined)
  },
  // Exotel has no API to end a call: a "connect to a stream" call ends when its stream closes.
  async hangup(ctx, _credentials, callSid) {
    ctx.log.info(
      { provider: 'exotel', providerCallId: callSid },
      'Exotel calls end with their media stream; nothing to ask Exotel',
    )
  },
  async callState(ctx, credentials, callSid) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(credentials),
      action: 'look up the call',
      method: 'GET',
      path: `${callsPath(credentials)}/${encodeURIComponent(callSid)}.json`,
      idempotent: true,
      accept: [404],
    })
    const call = isPlainObject(payload?.Call) ? payload.Call : null
    return status !== 404 && LIVE_CALL_STATUSES.has(String(call?.Status)) ? 'alive' : 'gone'
  },
  verify: (webhook, credentials, { runId }) => verifyExotel(webhook, credentials, runId),
  parseStatus,
  // The Voicebot applet's dynamic URL expects the WebSocket URL to stream to.
  connect: (links) => jsonAnswer({ url: links.mediaStreamUrl }),
  refuse: () => acknowledge(),
  parseInbound(webhook): InboundCallStart | null {
    const { CallSid: callSid, CallFrom: from, CallTo: to, Status: status } = fieldsOf(webhook)
    if (typeof callSid !== 'string' || typeof to !== 'string' || status !== undefined) return null
    return { providerCallId: callSid, from: String(from ?? ''), to }
  },
}
