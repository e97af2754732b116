import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, nullableString, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_SECRET_LENGTH } from '../../../lib/limits'

// Telnyx: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
