import { Type as t } from '@sinclair/typebox'
import { HTTP_URL_PATTERN, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH, MAX_URL_LENGTH } from '../../../lib/limits'

// Exotel: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
