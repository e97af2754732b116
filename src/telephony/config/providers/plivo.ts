import {
  APPLICATION_ACCOUNT_FIELDS,
  applicationAccountSchema,
  CARRIER_ACCOUNT,
  type ProviderInfo,
} from '../provider-info'

// Plivo: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

export const PlivoConfigSchema = applicationAccountSchema('plivo')

export const plivo: ProviderInfo = {
  name: 'plivo',
  displayName: 'Plivo',
  connectivity: 'api',
  schema: PlivoConfigSchema,
  fields: APPLICATION_ACCOUNT_FIELDS,
  ...CARRIER_ACCOUNT,
}
