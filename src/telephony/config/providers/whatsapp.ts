import { Type as t } from '@sinclair/typebox'
import { providerTag, randomHex, type ProviderInfo, type SetupFacts, type SetupStep } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../../lib/limits'

// WhatsApp Business: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
