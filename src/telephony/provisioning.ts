import { randomBytes } from 'node:crypto'
import type { Config } from '../config'
import type { AppContext, ProviderApiBaseUrls } from '../context'
import { refused, upstreamFailed } from '../lib/errors'
import { PROVIDERS, type Credentials, type ProviderName } from './providers'
import { isPlainObject } from '../lib/values'

/**
 * Saving a configuration asks the provider to create what the request left out (an application or connection
 * that routes the account's inbound calls to us). When the request carries those ids, nothing is called.
 */

export type ProvisionedProvider = keyof ProviderApiBaseUrls

/** Where each provider's REST API lives; tests point these at fakes on 127.0.0.1. */
export const PROVIDER_API_BASE_URLS: ProviderApiBaseUrls = {
  cloudonix: 'https://api.cloudonix.io',
  plivo: 'https://api.plivo.com',
  telnyx: 'https://api.telnyx.com',
  vobiz: 'https://api.vobiz.ai/api',
}

const REQUEST_TIMEOUT_MS = 10_000
const MAX_PROVIDER_MESSAGE_LENGTH = 200

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

function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text)
    return isPlainObject(parsed) ? parsed : null
  } catch {
    return null
  }
}

/** The provider's own explanation of a refusal, in the shapes these APIs use. */
function providerMessage(payload: Record<string, unknown> | null): string {
  const errors = payload?.errors
  const firstError = Array.isArray(errors) && isPlainObject(errors[0]) ? errors[0] : null
  const message = [payload?.error, payload?.message, firstError?.detail, firstError?.title].find((value) => typeof value === 'string')
  return typeof message === 'string' ? `: ${message.slice(0, MAX_PROVIDER_MESSAGE_LENGTH)}` : ''
}

/**
 * Calls a provider and returns its JSON object. Unreachable, 5xx or unreadable → 502; a 4xx (bad credentials,
 * unknown account) → 400, since our own 401/403 mean something else to API clients. Messages never carry the URL,
 * which can hold an account id.
 */
async function callProvider(ctx: AppContext, request: ProviderRequest): Promise<Record<string, unknown>> {
  const displayName = PROVIDERS[request.provider].displayName
  let status: number
  let text: string
  try {
    const response = await fetch(`${ctx.providerApis[request.provider]}${request.path}`, {
      method: request.method,
      headers: { accept: 'application/json', ...(request.body ? { 'content-type': 'application/json' } : {}), ...request.headers },
      body: request.body ? JSON.stringify(request.body) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    status = response.status
    text = await response.text()
  } catch (error) {
    const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : 'connection failed'
    const detail = `Failed to reach ${displayName} to ${request.action}: ${reason}`
    throw upstreamFailed(detail, new Error(`${detail} (${(error as Error).name})`))
  }
  const payload = parseJsonObject(text)
  if (status >= 400 && status < 500) {
    throw refused(`${displayName} refused to ${request.action} (HTTP ${status})${providerMessage(payload)}`)
  }
  if (status >= 300 || payload === null) {
    const detail = `${displayName} gave an unusable answer (HTTP ${status}) when asked to ${request.action}`
    throw upstreamFailed(detail, new Error(detail))
  }
  return payload
}

function requireId(provider: ProvisionedProvider, action: string, value: unknown): string {
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number') return String(value)
  const detail = `${PROVIDERS[provider].displayName} did not return an id when asked to ${action}`
  throw upstreamFailed(detail, new Error(detail))
}

const basicAuth = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** Plivo and Vobiz share the application API; only their authentication headers differ. */
async function createAnswerApplication(ctx: AppContext, provider: 'plivo' | 'vobiz', credentials: Credentials): Promise<Credentials> {
  const authId = String(credentials.auth_id)
  const authToken = String(credentials.auth_token)
  const action = 'create an application'
  const payload = await callProvider(ctx, {
    provider,
    action,
    method: 'POST',
    path: `/v1/Account/${encodeURIComponent(authId)}/Application/`,
    headers: provider === 'plivo' ? { authorization: basicAuth(authId, authToken) } : { 'x-auth-id': authId, 'x-auth-token': authToken },
    body: { app_name: mintApplicationName(), answer_url: inboundWebhookUrl(ctx.config), answer_method: 'POST' },
  })
  return { ...credentials, application_id: requireId(provider, action, payload.app_id) }
}

async function createTelnyxConnection(ctx: AppContext, credentials: Credentials): Promise<Credentials> {
  const action = 'create a Call Control application'
  const payload = await callProvider(ctx, {
    provider: 'telnyx',
    action,
    method: 'POST',
    path: '/v2/call_control_applications',
    headers: { authorization: `Bearer ${String(credentials.api_key)}` },
    body: { application_name: mintApplicationName(), webhook_event_url: inboundWebhookUrl(ctx.config) },
  })
  const data = isPlainObject(payload.data) ? payload.data : {}
  return { ...credentials, connection_id: requireId('telnyx', action, data.id) }
}

/** Looks up the domain, creates a CXML voice application and makes it the domain's default. */
async function createCloudonixApplication(ctx: AppContext, credentials: Credentials): Promise<Credentials> {
  const domainPath = `/customers/self/domains/${encodeURIComponent(String(credentials.domain_id))}`
  const headers = { authorization: `Bearer ${String(credentials.bearer_token)}` }
  const lookup = 'look up the domain'
  const domain = await callProvider(ctx, { provider: 'cloudonix', action: lookup, method: 'GET', path: domainPath, headers })
  const create = 'create a voice application'
  const application = await callProvider(ctx, {
    provider: 'cloudonix',
    action: create,
    method: 'POST',
    path: `${domainPath}/applications`,
    headers,
    body: { name: mintApplicationName(), type: 'cxml', url: inboundWebhookUrl(ctx.config), method: 'POST' },
  })
  const applicationId = requireId('cloudonix', create, application.id)
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
    domain_uuid: requireId('cloudonix', lookup, domain.uuid),
    application_name: requireId('cloudonix', create, application.name),
    application_id: applicationId,
    application_uuid: typeof application.uuid === 'string' ? application.uuid : null,
  }
}

/** Returns the credentials to store: unchanged when nothing is missing, else with the ids the provider created. */
export async function provisionMissing(ctx: AppContext, provider: ProviderName, credentials: Credentials): Promise<Credentials> {
  let provisioned = credentials
  if ((provider === 'plivo' || provider === 'vobiz') && !credentials.application_id) {
    provisioned = await createAnswerApplication(ctx, provider, credentials)
  } else if (provider === 'telnyx' && !credentials.connection_id) {
    provisioned = await createTelnyxConnection(ctx, credentials)
  } else if (provider === 'cloudonix' && !credentials.application_name) {
    provisioned = await createCloudonixApplication(ctx, credentials)
  }
  if (provisioned !== credentials) ctx.log.info({ provider }, 'provider resources created for a telephony configuration')
  return provisioned
}
