import { randomBytes } from 'node:crypto'
import type { Config } from '../../config'
import type { AppContext } from '../../context'
import { basicAuth, bearer, callCarrierForJson, requireId } from '../carriers/http'
import { PROVIDERS, type Credentials, type ProviderName } from './providers'
import { isPlainObject } from '../../lib/values'

/**
 * Saving a configuration asks the provider to create what the request left out (an application or connection
 * that routes the account's inbound calls to us). When the request carries those ids, nothing is called.
 */

export type ProvisionedProvider = 'cloudonix' | 'plivo' | 'telnyx' | 'vobiz'

/** The URL a provider calls when one of the account's numbers rings. */
export const inboundWebhookUrl = (config: Config) => `${config.publicUrl}/api/v1/telephony/inbound/run`

const mintApplicationName = () => `ringbase-${randomBytes(6).toString('hex')}`

type ProviderRequest = {
  provider: ProvisionedProvider
  /** What we asked for, as the end of "Failed to reach Plivo to …". */
  action: string
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers: Record<string, string>
  body?: Record<string, unknown>
}

const callProvider = (ctx: AppContext, request: ProviderRequest) =>
  callCarrierForJson(ctx, {
    ...request,
    displayName: PROVIDERS[request.provider].displayName,
    baseUrl: ctx.providerApis[request.provider],
    json: request.body,
  })

/** Plivo and Vobiz share the application API; only their authentication headers differ. */
async function createAnswerApplication(
  ctx: AppContext,
  provider: 'plivo' | 'vobiz',
  credentials: Credentials,
): Promise<Credentials> {
  const authId = String(credentials.auth_id)
  const authToken = String(credentials.auth_token)
  const action = 'create an application'
  const payload = await callProvider(ctx, {
    provider,
    action,
    method: 'POST',
    path: `/v1/Account/${encodeURIComponent(authId)}/Application/`,
    headers:
      provider === 'plivo'
        ? { authorization: basicAuth(authId, authToken) }
        : { 'x-auth-id': authId, 'x-auth-token': authToken },
    body: { app_name: mintApplicationName(), answer_url: inboundWebhookUrl(ctx.config), answer_method: 'POST' },
  })
  return { ...credentials, application_id: requireId(PROVIDERS[provider].displayName, action, payload.app_id) }
}

async function createTelnyxConnection(ctx: AppContext, credentials: Credentials): Promise<Credentials> {
  const action = 'create a Call Control application'
  const payload = await callProvider(ctx, {
    provider: 'telnyx',
    action,
    method: 'POST',
    path: '/v2/call_control_applications',
    headers: { authorization: bearer(credentials.api_key) },
    body: { application_name: mintApplicationName(), webhook_event_url: inboundWebhookUrl(ctx.config) },
  })
  const data = isPlainObject(payload.data) ? payload.data : {}
  return { ...credentials, connection_id: requireId(PROVIDERS.telnyx.displayName, action, data.id) }
}

/** Looks up the domain, creates a CXML voice application and makes it the domain's default. */
async function createCloudonixApplication(ctx: AppContext, credentials: Credentials): Promise<Credentials> {
  const domainPath = `/customers/self/domains/${encodeURIComponent(String(credentials.domain_id))}`
  const headers = { authorization: bearer(credentials.bearer_token) }
  const lookup = 'look up the domain'
  const domain = await callProvider(ctx, {
    provider: 'cloudonix',
    action: lookup,
    method: 'GET',
    path: domainPath,
    headers,
  })
  const create = 'create a voice application'
  const application = await callProvider(ctx, {
    provider: 'cloudonix',
    action: create,
    method: 'POST',
    path: `${domainPath}/applications`,
    headers,
    body: { name: mintApplicationName(), type: 'cxml', url: inboundWebhookUrl(ctx.config), method: 'POST' },
  })
  const applicationId = requireId(PROVIDERS.cloudonix.displayName, create, application.id)
  await callProvider(ctx, {
    provider: 'cloudonix',
    action: 'make the voice application the domain default',
    method: 'PATCH',
    path: domainPath,
    headers,
    body: { defaultApplication: Number(applicationId) || applicationId },
  })
  return {
    ...credentials,
    domain_uuid: requireId(PROVIDERS.cloudonix.displayName, lookup, domain.uuid),
    application_name: requireId(PROVIDERS.cloudonix.displayName, create, application.name),
    application_id: applicationId,
    application_uuid: typeof application.uuid === 'string' ? application.uuid : null,
  }
}

/** Returns the credentials to store: unchanged when nothing is missing, else with the ids the provider created. */
export async function provisionMissing(
  ctx: AppContext,
  provider: ProviderName,
  credentials: Credentials,
): Promise<Credentials> {
  let provisioned = credentials
  if ((provider === 'plivo' || provider === 'vobiz') && !credentials.application_id) {
    provisioned = await createAnswerApplication(ctx, provider, credentials)
  } else if (provider === 'telnyx' && !credentials.connection_id) {
    provisioned = await createTelnyxConnection(ctx, credentials)
  } else if (provider === 'cloudonix' && !credentials.application_name) {
    provisioned = await createCloudonixApplication(ctx, credentials)
  }
  if (provisioned !== credentials)
    ctx.log.info({ provider }, 'provider resources created for a telephony configuration')
  return provisioned
}
