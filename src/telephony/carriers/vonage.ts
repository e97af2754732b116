import { createHash, createPrivateKey, randomUUID, sign } from 'node:crypto'
import type { AppContext } from '../../context'
import { refused } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import { bearer, callCarrier, callCarrierForJson, requireId } from './http'
import {
  hmac,
  jsonAnswer,
  legEnded,
  sameText,
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
import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, nullableString, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../lib/limits'

// Vonage Voice API: calls created with a JWT signed RS256 by the application's private key, NCCO answers that connect a
// WebSocket (16-bit linear PCM at 16 kHz), JSON events signed with an HS256 JWT under the signature secret.

export const VonageConfigSchema = t.Object({
  provider: providerTag('vonage'),
  api_key: t.String({ maxLength: MAX_NAME_LENGTH, description: 'API key.' }),
  api_secret: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'API secret.' }),
  application_id: t.String({ maxLength: MAX_NAME_LENGTH, description: 'Voice application id.' }),
  private_key: t.String({
    maxLength: MAX_SECRET_LENGTH,
    description: 'Private key of the application, used to sign JWTs.',
  }),
  signature_secret: nullableString('Secret used to verify signed webhooks.', MAX_SECRET_LENGTH),
})

export const vonage: ProviderInfo = {
  name: 'vonage',
  displayName: 'Vonage',
  connectivity: 'api',
  schema: VonageConfigSchema,
  fields: [
    { name: 'api_key', label: 'API Key', type: 'text', sensitive: true },
    { name: 'api_secret', label: 'API Secret', type: 'password', sensitive: true },
    { name: 'application_id', label: 'Application ID', type: 'text' },
    {
      name: 'private_key',
      label: 'Private Key',
      type: 'textarea',
      sensitive: true,
      placeholder: '-----BEGIN PRIVATE KEY-----',
    },
    { name: 'signature_secret', label: 'Signature Secret', type: 'password', sensitive: true },
  ],
  ...CARRIER_ACCOUNT,
}

const STATUSES: Record<string, CarrierCallStatus> = {
  started: 'initiated',
  ringing: 'ringing',
  answered: 'answered',
  completed: 'completed',
  disconnected: 'completed',
  busy: 'busy',
  rejected: 'busy',
  timeout: 'no-answer',
  unanswered: 'no-answer',
  cancelled: 'canceled',
  failed: 'failed',
}

const LIVE_STATUSES = new Set(['started', 'ringing', 'answered'])
const JWT_LIFETIME_SECONDS = 300
/** How old a webhook's token may be (its `iat`), and how far ahead of our clock. */
export const VONAGE_WEBHOOK_MAX_AGE_SECONDS = 300
const VONAGE_WEBHOOK_CLOCK_SKEW_SECONDS = 30

const base64url = (data: string | Buffer) => Buffer.from(data).toString('base64url')

/** The application's API token: an RS256 JWT with application_id, iat, exp and jti, signed by its private key. */
export function vonageApplicationJwt(credentials: Credentials, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000)
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))
  const claims = base64url(
    JSON.stringify({
      application_id: credentials.application_id,
      iat,
      exp: iat + JWT_LIFETIME_SECONDS,
      jti: randomUUID(),
    }),
  )
  let key
  try {
    key = createPrivateKey(String(credentials.private_key))
  } catch {
    throw refused('The Vonage private key of this configuration is not a valid PEM private key')
  }
  return `${header}.${claims}.${sign('RSA-SHA256', Buffer.from(`${header}.${claims}`), key).toString('base64url')}`
}

function decodeSegment(segment: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return isPlainObject(parsed) ? parsed : null
  } catch {
    return null
  }
}

/**
 * A signed Vonage webhook: `Authorization: Bearer <JWT>` signed HS256 with the signature secret, issued by Vonage for
 * this account (`api_key`) and application within the last 5 minutes (`iat`), and bound to the body's SHA-256
 * (`payload_hash`, required whenever there is a body): a captured token cannot carry another body, nor be replayed later.
 */
export function verifyVonageWebhook(webhook: WebhookRequest, credentials: Credentials, nowMs: number): Verdict {
  const token = /^Bearer\s+(\S+)$/.exec(webhook.headers.get('authorization') ?? '')?.[1]
  if (!token) return 'unsigned'
  const secret = credentials.signature_secret
  const [header, claims, signature] = token.split('.')
  if (typeof secret !== 'string' || secret === '' || !header || !claims || !signature) return 'invalid'
  if (decodeSegment(header)?.alg !== 'HS256') return 'invalid'
  if (!sameText(signature, hmac('sha256', secret, `${header}.${claims}`).digest('base64url'))) return 'invalid'
  const payload = decodeSegment(claims)
  if (!payload || payload.iss !== 'Vonage' || payload.api_key !== credentials.api_key) return 'invalid'
  if (payload.application_id !== undefined && payload.application_id !== credentials.application_id) return 'invalid'
  const age = nowMs / 1000 - Number(payload.iat)
  if (
    typeof payload.iat !== 'number' ||
    !(age <= VONAGE_WEBHOOK_MAX_AGE_SECONDS && age >= -VONAGE_WEBHOOK_CLOCK_SKEW_SECONDS)
  )
    return 'invalid'
  const bodyHash = createHash('sha256').update(webhook.rawBody).digest('hex')
  if ((webhook.rawBody !== '' || payload.payload_hash !== undefined) && payload.payload_hash !== bodyHash)
    return 'invalid'
  return 'valid'
}

const fieldsOf = (webhook: WebhookRequest): Record<string, unknown> => webhook.json ?? webhook.params

function parseStatus(webhook: WebhookRequest): StatusUpdate | null {
  const { uuid, status, duration } = fieldsOf(webhook)
  if (typeof uuid !== 'string') return null
  const machine =
    status === 'machine' || status === 'human' ? { answeredBy: String(status), machine: status === 'machine' } : {}
  return {
    status: STATUSES[String(status)] ?? null,
    providerStatus: String(status ?? 'unknown'),
    providerCallId: uuid,
    ...(duration !== undefined && duration !== '' ? { durationSeconds: Number(duration) } : {}),
    ...machine,
  }
}

const bareNumber = (number: string) => number.replace(/^\+/, '')

const TRANSFER_FAILURES: Record<string, TransferFailureReason> = {
  busy: 'busy',
  rejected: 'rejected',
  timeout: 'no_answer',
  unanswered: 'no_answer',
  failed: 'failed',
  cancelled: 'failed',
}

/**
 * Events of the transfer's connect leg (its synchronous eventUrl): answered, then completed with its duration. Vonage
 * sends `completed` for legs that never answered too (busy, unanswered, failed; before or after their own status), so it
 * says the destination talked only with a positive duration; the failure is the leg's own status.
 */
function parseTransferEvent(webhook: WebhookRequest): TransferEvent | null {
  const { status, duration } = fieldsOf(webhook)
  if (status === 'answered') return { kind: 'answered', providerStatus: status }
  if (status === 'completed') return legEnded(status, duration)
  const failure = TRANSFER_FAILURES[String(status)]
  return failure ? { kind: 'ended', failure, answered: false, providerStatus: String(status) } : null
}

/**
 * The NCCO a transfer moves the call to: connect the destination; with a synchronous eventUrl, a failure's answer is the
 * next NCCO. `from` must be one of the account's numbers, else the destination sees an unknown caller.
 */
function transferNcco(transfer: CarrierTransferRequest) {
  const { type, address } = transfer.destination
  return [
    {
      action: 'connect',
      ...(transfer.callerId ? { from: bareNumber(transfer.callerId) } : {}),
      timeout: transfer.timeoutSeconds,
      eventType: 'synchronous',
      eventUrl: [transfer.eventsUrl],
      eventMethod: 'POST',
      endpoint: [type === 'sip' ? { type: 'sip', uri: address } : { type: 'phone', number: bareNumber(address) }],
    },
  ]
}

const request = (ctx: AppContext, credentials: Credentials) => ({
  provider: 'vonage' as const,
  displayName: vonage.displayName,
  baseUrl: ctx.providerApis.vonage,
  headers: { authorization: bearer(vonageApplicationJwt(credentials, ctx.clock.now())) },
  secrets: [credentials.api_key, credentials.api_secret, credentials.signature_secret],
})

export const vonageCarrier: Carrier = {
  provider: 'vonage',
  mediaFraming: 'vonage',
  // The application's event URL.
  reportsInboundCalls: true,
  callbackPaths: ['events'],
  async dial(ctx, dial, links) {
    if (typeof dial.credentials.signature_secret !== 'string' || dial.credentials.signature_secret === '') {
      // Its events could not be verified, so the call could never settle.
      throw refused(
        'Vonage calls need the signature secret of the account (Dashboard → Settings) in signature_secret, with signed webhooks on',
      )
    }
    const action = 'place the call'
    const answer = await callCarrierForJson(ctx, {
      ...request(ctx, dial.credentials),
      action,
      method: 'POST',
      path: '/v1/calls',
      json: {
        to: [{ type: 'phone', number: bareNumber(dial.destination) }],
        from: { type: 'phone', number: bareNumber(dial.callerId!) },
        answer_url: [`${links.publicUrl}/api/v1/telephony/vonage/answer/${links.runId}`],
        // A signed GET would carry a payload_hash over its query; a POST's is the SHA-256 of its JSON body.
        answer_method: 'POST',
        event_url: [`${links.publicUrl}/api/v1/telephony/vonage/events/${links.runId}`],
        event_method: 'POST',
        ringing_timer: dial.ringTimeoutSeconds,
        ...timeLimitField('length_timer', dial),
        ...(dial.detectAnsweringMachine ? { machine_detection: 'continue' } : {}),
      },
    })
    return requireId(vonage.displayName, action, answer.uuid)
  },
  async hangup(ctx, credentials, uuid) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'hang up the call',
      method: 'PUT',
      path: `/v1/calls/${encodeURIComponent(uuid)}`,
      json: { action: 'hangup' },
      idempotent: true,
      accept: [404, 400],
    })
  },
  async callState(ctx, credentials, uuid) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'look up the call',
      method: 'GET',
      path: `/v1/calls/${encodeURIComponent(uuid)}`,
      idempotent: true,
      accept: [404],
    })
    if (status === 404) return 'gone'
    return LIVE_STATUSES.has(String(payload?.status)) ? 'alive' : 'gone'
  },
  verify: (webhook, credentials, { nowMs }) => verifyVonageWebhook(webhook, credentials, nowMs),
  parseStatus,
  transfer: {
    async start(ctx, credentials, uuid, transfer) {
      await callCarrier(ctx, {
        ...request(ctx, credentials),
        action: 'transfer the call',
        method: 'PUT',
        path: `/v1/calls/${encodeURIComponent(uuid)}`,
        json: { action: 'transfer', destination: { type: 'ncco', ncco: transferNcco(transfer) } },
      })
    },
    parseEvent: parseTransferEvent,
  },
  connect: (links) =>
    jsonAnswer([
      {
        action: 'connect',
        endpoint: [
          { type: 'websocket', uri: links.mediaStreamUrl, 'content-type': 'audio/l16;rate=16000', headers: {} },
        ],
      },
    ]),
  // An NCCO with no action ends the call.
  refuse: () => jsonAnswer([]),
  parseInbound(webhook): InboundCallStart | null {
    const { uuid, from, to, status } = fieldsOf(webhook)
    if (typeof uuid !== 'string' || typeof to !== 'string' || status !== undefined) return null
    return { providerCallId: uuid, from: String(from ?? ''), to }
  },
}
