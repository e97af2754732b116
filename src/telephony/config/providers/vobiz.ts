import {
  APPLICATION_ACCOUNT_FIELDS,
  applicationAccountSchema,
  CARRIER_ACCOUNT,
  type ProviderInfo,
} from '../provider-info'

// Vobiz: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

export const VobizConfigSchema = applicationAccountSchema('vobiz')

export const vobiz: ProviderInfo = {
  name: 'vobiz',
  displayName: 'Vobiz',
  connectivity: 'api',
  schema: VobizConfigSchema,
  fields: APPLICATION_ACCOUNT_FIELDS,
  ...CARRIER_ACCOUNT,
}
