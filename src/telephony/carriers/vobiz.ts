import { applicationCarrier, withoutQuery, type PlivoVariant } from './plivo'
import { applicationAccount, applicationAccountSchema } from '../provider-info'

// Vobiz: Plivo's Call API and XML under its own base URL, authenticated by X-Auth-ID / X-Auth-Token headers, its
// webhooks signed like Plivo's under X-Vobiz-Signature-… headers, the V3 signature covering the URL without its query.

export const VobizConfigSchema = applicationAccountSchema('vobiz')

export const vobiz = applicationAccount('vobiz', 'Vobiz', VobizConfigSchema)

const VOBIZ: PlivoVariant = {
  provider: 'vobiz',
  displayName: vobiz.displayName,
  signaturePrefix: 'x-vobiz-signature',
  authHeaders: (credentials) => ({
    'x-auth-id': String(credentials.auth_id),
    'x-auth-token': String(credentials.auth_token),
  }),
  v3SignedUrl: (_method, url) => withoutQuery(url),
}

export const vobizCarrier = applicationCarrier(VOBIZ)
