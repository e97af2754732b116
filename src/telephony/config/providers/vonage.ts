import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, nullableString, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../../lib/limits'

// Vonage: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
