import type { AppContext } from '../../context'
import { forbidden, refused, unauthenticated } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import { bearer, callCarrier } from './http'
import {
  acknowledge,
  hmac,
  sameText,
  type Carrier,
  type Verdict,
  type WebhookAnswer,
  type WebhookRequest,
} from './carrier'
import type { Credentials } from '../../db/schema/telephony'
import { Type as t } from '@sinclair/typebox'
import { providerTag, randomHex, type ProviderInfo, type SetupFacts, type SetupStep } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../lib/limits'

// WhatsApp Business Calling: the Graph API webhook (GET subscription handshake with hub.verify_token, POSTs signed with
// X-Hub-Signature-256 under the app secret) and the call signalling. Call audio is WebRTC, which Ringbase cannot
// carry: every call offered is rejected through the Graph API, and no run is ever started on WhatsApp.

export const WhatsappConfigSchema = t.Object({
  provider: providerTag('whatsapp'),
  access_token: t.String({
    minLength: 1,
    maxLength: MAX_SECRET_LENGTH,
    description: 'Access token of the business account.',
  }),
  waba_id: t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'Business account id.' }),
  app_secret: t.String({
    minLength: 1,
    maxLength: MAX_SECRET_LENGTH,
    description: 'App secret used to verify webhook signatures.',
  }),
})

/** Why no call runs on WhatsApp: said in the form metadata, the checklist and every refusal. */
export const WHATSAPP_MEDIA_LIMITATION =
  'WhatsApp calls carry their audio over WebRTC (ICE, DTLS-SRTP, Opus), which Ringbase cannot carry: ' +
  'it verifies the webhooks and follows the call signalling, but rejects WhatsApp calls and places none.'

function whatsappSteps(facts: SetupFacts): SetupStep[] {
  return [
    {
      key: 'business_number',
      title: 'Add your business number',
      description: 'Calls are routed by the business phone number: add it under Phone numbers.',
      complete: facts.activeNumberCount > 0,
      blocks_outbound: false,
    },
  ]
}

export const whatsapp: ProviderInfo = {
  name: 'whatsapp',
  displayName: 'WhatsApp Business',
  connectivity: 'api',
  schema: WhatsappConfigSchema,
  fields: [
    { name: 'access_token', label: 'Access Token', type: 'password', sensitive: true },
    { name: 'waba_id', label: 'Business Account ID', type: 'text' },
    { name: 'app_secret', label: 'App Secret', type: 'password', sensitive: true },
    {
      name: 'webhook_verify_token',
      label: 'Webhook Verify Token',
      type: 'readonly',
      description: `Assigned by the server on create. Paste it into the webhook settings of your app (subscribe to "calls"). ${WHATSAPP_MEDIA_LIMITATION}`,
    },
  ],
  // Shown in clear: the admin copies it into the provider's console.
  serverManaged: [{ name: 'webhook_verify_token', shownInResponse: true, mint: () => randomHex(16) }],
  supportsTrunks: false,
  // It carries calls of a messaging app, not PSTN calls, and their audio is WebRTC.
  supportsOutbound: false,
  supportsCallTransfer: false,
  noOutboundReason: WHATSAPP_MEDIA_LIMITATION,
  supportsPhoneNumberSync: false,
  requiresCallerId: false,
  setupSteps: whatsappSteps,
}

type CallEvent = { id: string; event: string; from?: string; to?: string; phoneNumberId: string }

/** `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body under the app secret>`. */
export function verifyHubSignature(webhook: WebhookRequest, appSecret: string): Verdict {
  const header = webhook.headers.get('x-hub-signature-256')
  if (!header) return 'unsigned'
  return sameText(header, `sha256=${hmac('sha256', appSecret, webhook.rawBody).digest('hex')}`) ? 'valid' : 'invalid'
}

/** The subscription handshake: the challenge echoed when the verify token is one we minted. */
function verifySubscription(webhook: WebhookRequest, activeCredentials: Credentials[]): WebhookAnswer {
  const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = webhook.params
  const known =
    token !== undefined &&
    activeCredentials.some((credentials) => sameText(token, String(credentials.webhook_verify_token)))
  if (mode !== 'subscribe' || !known || challenge === undefined) throw forbidden('Unknown webhook verify token')
  return { status: 200, contentType: 'text/plain', body: challenge }
}

/** The `calls` changes of a webhook body, per business account (`entry[].id` is the WABA id). */
function callChanges(body: Record<string, unknown> | null): { wabaId: string; calls: CallEvent[] }[] {
  const entries = Array.isArray(body?.entry) ? body.entry : []
  return entries.filter(isPlainObject).map((entry) => ({
    wabaId: String(entry.id ?? ''),
    calls: (Array.isArray(entry.changes) ? entry.changes : [])
      .filter(isPlainObject)
      .filter((change) => change.field === 'calls' && isPlainObject(change.value))
      .flatMap((change) => {
        const value = change.value as Record<string, unknown>
        const phoneNumberId = isPlainObject(value.metadata) ? String(value.metadata.phone_number_id ?? '') : ''
        return (Array.isArray(value.calls) ? value.calls : []).filter(isPlainObject).map((call) => ({
          id: String(call.id ?? ''),
          event: String(call.event ?? ''),
          phoneNumberId,
          from: typeof call.from === 'string' ? call.from : undefined,
          to: typeof call.to === 'string' ? call.to : undefined,
        }))
      }),
  }))
}

async function rejectCall(ctx: AppContext, credentials: Credentials, call: CallEvent): Promise<void> {
  try {
    await callCarrier(ctx, {
      provider: 'whatsapp',
      displayName: whatsapp.displayName,
      baseUrl: ctx.providerApis.whatsapp,
      action: 'reject the call',
      method: 'POST',
      path: `/${encodeURIComponent(call.phoneNumberId)}/calls`,
      headers: { authorization: bearer(credentials.access_token) },
      json: { messaging_product: 'whatsapp', call_id: call.id, action: 'reject' },
      secrets: [credentials.access_token, credentials.app_secret],
    })
  } catch (error) {
    ctx.log.warn({ provider: 'whatsapp', callId: call.id, err: error }, 'rejecting a WhatsApp call failed')
  }
}

/**
 * A POST: the business account's configuration (by WABA id) must verify the signature; offered calls (`connect`) are
 * rejected, other call events (`terminate`, statuses) only logged. Bodies without call changes are acknowledged.
 */
async function receive(
  ctx: AppContext,
  webhook: WebhookRequest,
  activeCredentials: Credentials[],
): Promise<WebhookAnswer> {
  const changes = callChanges(webhook.json)
  const accounts = new Set(changes.map((change) => change.wabaId))
  const candidates = activeCredentials.filter((credentials) => accounts.has(String(credentials.waba_id)))
  if (!webhook.headers.get('x-hub-signature-256')) throw unauthenticated('Missing webhook signature')
  const credentials = candidates.find(
    (candidate) => verifyHubSignature(webhook, String(candidate.app_secret)) === 'valid',
  )
  if (!credentials) throw forbidden('Invalid webhook signature')
  for (const call of changes.flatMap((change) => change.calls)) {
    ctx.log.info({ provider: 'whatsapp', callId: call.id, event: call.event }, 'WhatsApp call event')
    if (call.event === 'connect') await rejectCall(ctx, credentials, call)
  }
  return acknowledge()
}

export const whatsappCarrier: Carrier = {
  provider: 'whatsapp',
  mediaFraming: null,
  reportsInboundCalls: false,
  callbackPaths: ['webhook'],
  async dial() {
    throw refused(WHATSAPP_MEDIA_LIMITATION)
  },
  async hangup() {},
  async callState() {
    return 'gone'
  },
  verify: (webhook, credentials) => verifyHubSignature(webhook, String(credentials.app_secret)),
  parseStatus: () => null,
  webhook: async (ctx, webhook, activeCredentials) =>
    webhook.method === 'GET'
      ? verifySubscription(webhook, activeCredentials)
      : receive(ctx, webhook, activeCredentials),
}
