import { createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto'
import type { AppContext } from '../../context'
import { refused } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import { bearer, callCarrier, callCarrierForJson, requireId } from './http'
import {
  acknowledge,
  type CarrierCallStatus,
  type Carrier,
  type CallLinks,
  type InboundCallStart,
  type StatusUpdate,
  type TransferEvent,
  type WebhookRequest,
  timeLimitField,
} from './carrier'
import type { TransferFailureReason } from '../ari/transfer'
import type { Credentials } from '../../db/schema/telephony'
import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, nullableString, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_SECRET_LENGTH } from '../../lib/limits'

// Telnyx Call Control: calls are driven by API commands (Bearer API key), events arrive as JSON webhooks signed with
// Ed25519 over "<telnyx-timestamp>|<raw body>", verified with the account's public key; media streams are RTP payloads
// (PCMU) in JSON, bidirectional.

export const TelnyxConfigSchema = t.Object({
  provider: providerTag('telnyx'),
  api_key: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'API key.' }),
  connection_id: nullableString(
    'Call Control application id. When omitted, one is created on save and its id is stored.',
  ),
  webhook_public_key: nullableString('Public key used to verify webhook signatures.', MAX_SECRET_LENGTH),
})

export const telnyx: ProviderInfo = {
  name: 'telnyx',
  displayName: 'Telnyx',
  connectivity: 'api',
  schema: TelnyxConfigSchema,
  fields: [
    { name: 'api_key', label: 'API Key', type: 'password', sensitive: true },
    { name: 'connection_id', label: 'Connection ID', type: 'text', placeholder: 'Created on save when empty' },
    { name: 'webhook_public_key', label: 'Webhook Public Key', type: 'text' },
  ],
  ...CARRIER_ACCOUNT,
}

/** Seconds a webhook's timestamp may differ from our clock. */
export const TELNYX_TIMESTAMP_TOLERANCE_SECONDS = 300

/** hangup_cause values that say the call never connected; any other ends a call that was up. */
const UNCONNECTED_CAUSES: Record<string, CarrierCallStatus> = {
  user_busy: 'busy',
  busy: 'busy',
  timeout: 'no-answer',
  no_answer: 'no-answer',
  originator_cancel: 'canceled',
  call_rejected: 'failed',
  unallocated_number: 'failed',
  not_found: 'failed',
  destination_out_of_order: 'failed',
  invalid_number_format: 'failed',
}

const EVENT_STATUSES: Record<string, CarrierCallStatus> = {
  'call.initiated': 'initiated',
  'call.answered': 'answered',
}

const request = (ctx: AppContext, credentials: Credentials) => ({
  provider: 'telnyx' as const,
  displayName: telnyx.displayName,
  baseUrl: ctx.providerApis.telnyx,
  headers: { authorization: bearer(credentials.api_key) },
  secrets: [credentials.api_key],
})

const callPath = (callControlId: string) => `/v2/calls/${encodeURIComponent(callControlId)}`

/** The stream settings of a dial or an answer: both tracks' audio as PCMU RTP payloads, our audio back the same way. */
const streamSettings = (links: CallLinks) => ({
  stream_url: links.mediaStreamUrl,
  stream_track: 'inbound_track',
  stream_bidirectional_mode: 'rtp',
  stream_bidirectional_codec: 'PCMU',
})

type TelnyxEvent = { eventType: string; payload: Record<string, unknown> }

function eventOf(webhook: WebhookRequest): TelnyxEvent | null {
  const data = webhook.json?.data
  if (!isPlainObject(data) || typeof data.event_type !== 'string' || !isPlainObject(data.payload)) return null
  return { eventType: data.event_type, payload: data.payload }
}

const publicKeys = new Map<string, KeyObject | null>()

/** The configuration's webhook public key (base64 of the raw 32-byte Ed25519 key); null when it is not one. */
function publicKeyOf(encoded: string): KeyObject | null {
  if (!publicKeys.has(encoded)) {
    const raw = Buffer.from(encoded, 'base64')
    let key: KeyObject | null = null
    if (raw.length === 32) {
      try {
        key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' })
      } catch {
        key = null
      }
    }
    publicKeys.set(encoded, key)
  }
  return publicKeys.get(encoded)!
}

/** Telnyx's Ed25519 signature over "<timestamp>|<body>", within the tolerance of our clock. */
export function verifyTelnyxSignature(
  webhook: WebhookRequest,
  publicKey: unknown,
  nowMs: number,
): 'valid' | 'unsigned' | 'invalid' {
  const signature = webhook.headers.get('telnyx-signature-ed25519')
  const timestamp = webhook.headers.get('telnyx-timestamp')
  if (!signature || !timestamp) return 'unsigned'
  const key = typeof publicKey === 'string' && publicKey !== '' ? publicKeyOf(publicKey) : null
  if (!key || !/^\d{1,12}$/.test(timestamp)) return 'invalid'
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > TELNYX_TIMESTAMP_TOLERANCE_SECONDS) return 'invalid'
  const signed = verifySignature(
    null,
    Buffer.from(`${timestamp}|${webhook.rawBody}`),
    key,
    Buffer.from(signature, 'base64'),
  )
  return signed ? 'valid' : 'invalid'
}

function parseTelnyxStatus(webhook: WebhookRequest): StatusUpdate | null {
  const event = eventOf(webhook)
  if (!event) return null
  const { payload } = event
  const providerCallId = typeof payload.call_control_id === 'string' ? payload.call_control_id : undefined
  if (event.eventType === 'call.hangup') {
    const cause = String(payload.hangup_cause ?? 'unspecified')
    return { status: UNCONNECTED_CAUSES[cause] ?? 'completed', providerStatus: `call.hangup:${cause}`, providerCallId }
  }
  if (
    event.eventType === 'call.machine.detection.ended' ||
    event.eventType === 'call.machine.premium.detection.ended'
  ) {
    const result = String(payload.result ?? 'not_sure')
    return {
      status: null,
      providerStatus: event.eventType,
      providerCallId,
      answeredBy: result,
      machine: result.startsWith('machine'),
    }
  }
  return { status: EVENT_STATUSES[event.eventType] ?? null, providerStatus: event.eventType, providerCallId }
}

const TRANSFER_FAILURES: Partial<Record<CarrierCallStatus, TransferFailureReason>> = {
  busy: 'busy',
  'no-answer': 'no_answer',
  canceled: 'failed',
  failed: 'failed',
}

/**
 * Events at a transfer's webhook_url: the destination leg's (answered or bridged, then its hang-up), and, since the URL
 * replaces the call's own, those of the caller's call (`callerCallId`): its status, not the destination's outcome.
 */
function parseTransferEvent(webhook: WebhookRequest, callerCallId: string | null): TransferEvent | null {
  const event = eventOf(webhook)
  if (!event) return null
  if (callerCallId !== null && event.payload.call_control_id === callerCallId)
    return { kind: 'caller', providerStatus: event.eventType }
  if (event.eventType === 'call.answered' || event.eventType === 'call.bridged')
    return { kind: 'answered', providerStatus: event.eventType }
  if (event.eventType !== 'call.hangup') return null
  const cause = String(event.payload.hangup_cause ?? 'unspecified')
  const unconnected = UNCONNECTED_CAUSES[cause]
  const failure =
    unconnected === undefined
      ? null
      : cause === 'call_rejected'
        ? 'rejected'
        : (TRANSFER_FAILURES[unconnected] ?? 'failed')
  // A hang-up says nothing about an answer: only call.answered / call.bridged before it do.
  return { kind: 'ended', failure, answered: false, providerStatus: `call.hangup:${cause}` }
}

export const telnyxCarrier: Carrier = {
  provider: 'telnyx',
  mediaFraming: 'telnyx',
  reportsInboundCalls: true,
  callbackPaths: ['events'],
  async dial(ctx, dial, links) {
    if (typeof dial.credentials.webhook_public_key !== 'string' || !publicKeyOf(dial.credentials.webhook_public_key)) {
      // Its call events could not be verified, so the call could never settle.
      throw refused(
        'Telnyx calls need the webhook public key of the account (Mission Control → Keys & Credentials → Public Key) in webhook_public_key',
      )
    }
    const action = 'place the call'
    const answer = await callCarrierForJson(ctx, {
      ...request(ctx, dial.credentials),
      action,
      method: 'POST',
      path: '/v2/calls',
      json: {
        connection_id: dial.credentials.connection_id,
        to: dial.destination,
        from: dial.callerId,
        timeout_secs: dial.ringTimeoutSeconds,
        ...timeLimitField('time_limit_secs', dial),
        webhook_url: `${links.publicUrl}/api/v1/telephony/telnyx/events/${links.runId}`,
        webhook_url_method: 'POST',
        ...streamSettings(links),
        ...(dial.detectAnsweringMachine ? { answering_machine_detection: 'detect' } : {}),
      },
    })
    return requireId(telnyx.displayName, action, isPlainObject(answer.data) ? answer.data.call_control_id : undefined)
  },
  async hangup(ctx, credentials, callControlId) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'hang up the call',
      method: 'POST',
      path: `${callPath(callControlId)}/actions/hangup`,
      json: {},
      idempotent: true,
      accept: [404, 422],
    })
  },
  async callState(ctx, credentials, callControlId) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'look up the call',
      method: 'GET',
      path: callPath(callControlId),
      idempotent: true,
      accept: [404],
    })
    if (status === 404) return 'gone'
    return isPlainObject(payload?.data) && payload.data.is_alive === true ? 'alive' : 'gone'
  },
  verify: (webhook, credentials, { nowMs }) => verifyTelnyxSignature(webhook, credentials.webhook_public_key, nowMs),
  parseStatus: parseTelnyxStatus,
  // The caller's call and its media stream stay as they are while the destination rings; a failure leaves them so.
  transfer: {
    async start(ctx, credentials, callControlId, transfer) {
      await callCarrier(ctx, {
        ...request(ctx, credentials),
        action: 'transfer the call',
        method: 'POST',
        path: `${callPath(callControlId)}/actions/transfer`,
        json: {
          to: transfer.destination.address,
          ...(transfer.callerId ? { from: transfer.callerId } : {}),
          timeout_secs: transfer.timeoutSeconds,
          webhook_url: transfer.eventsUrl,
          webhook_url_method: 'POST',
        },
      })
    },
    parseEvent: parseTransferEvent,
  },
  parseInbound(webhook): InboundCallStart | null {
    const event = eventOf(webhook)
    if (event?.eventType !== 'call.initiated' || event.payload.direction !== 'incoming') return null
    const { call_control_id: id, from, to } = event.payload
    return typeof id === 'string' && typeof to === 'string'
      ? { providerCallId: id, from: String(from ?? ''), to }
      : null
  },
  async answerInbound(ctx, credentials, call, links) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'answer the call',
      method: 'POST',
      path: `${callPath(call.providerCallId)}/actions/answer`,
      json: streamSettings(links),
    })
    return acknowledge()
  },
  async rejectInbound(ctx, credentials, call) {
    if (credentials) {
      await callCarrier(ctx, {
        ...request(ctx, credentials),
        action: 'reject the call',
        method: 'POST',
        path: `${callPath(call.providerCallId)}/actions/reject`,
        json: { cause: 'CALL_REJECTED' },
        idempotent: true,
        accept: [404, 422],
      })
    }
    return acknowledge()
  },
}
