import { Type as t } from '@sinclair/typebox'
import { CARRIER_ACCOUNT, providerTag, type ProviderInfo } from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../../lib/limits'

// Twilio: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
