import type { AppContext, ProviderApiBaseUrls } from '../../context'
import { readCappedText } from '../../lib/capped-body'
import { refused, upstreamFailed } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import type { ProviderName } from '../../db/schema/telephony'

/**
 * The HTTP plumbing every carrier call shares (dialling, hanging up, status lookups, what a configuration save
 * creates): per-attempt timeout, bounded retries with backoff, and the carrier's refusal turned into a domain error
 * whose detail carries the carrier's own message but never the URL or a credential.
 */

/** Where each carrier's REST API lives; `RINGBASE_PROVIDER_API_<PROVIDER>` replaces these (tests, proxies, regions). */
export const PROVIDER_API_BASE_URLS: ProviderApiBaseUrls = {
  cloudonix: 'https://api.cloudonix.io',
  plivo: 'https://api.plivo.com',
  telnyx: 'https://api.telnyx.com',
  twilio: 'https://api.twilio.com',
  vobiz: 'https://api.vobiz.ai/api',
  vonage: 'https://api.nexmo.com',
  whatsapp: 'https://graph.facebook.com/v23.0',
}

const ATTEMPT_TIMEOUT_MS = 10_000
const MAX_ATTEMPTS = 3
const BACKOFF_BASE_MS = 250
const MAX_PROVIDER_MESSAGE_LENGTH = 200
/** The most a carrier's answer may hold (its JSON answers are a few KB); past it the answer counts as a failure. */
export const CARRIER_ANSWER_MAX_BYTES = 4 * 1024 * 1024
/** The carrier said it did not act: asking again cannot do anything twice. */
const DECLINED_STATUSES = new Set([429, 503])

export type CarrierRequest = {
  provider: ProviderName
  /** How error details name the carrier ("Twilio refused to …"): its metadata's display name. */
  displayName: string
  baseUrl: string
  /** What we asked for, as the end of "Twilio refused to …". */
  action: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  headers: Record<string, string>
  json?: unknown
  form?: URLSearchParams
  /**
   * Safe to send again when the outcome is unknown (timeout, 5xx): reads and hang-ups. Anything else (a dial) is sent
   * again only when the carrier certainly did not act (connection refused, 429, 503).
   */
  idempotent?: boolean
  /** Statuses returned to the caller instead of thrown, e.g. 404 when asking about a call that is gone. */
  accept?: number[]
  /** Credential values that must never appear in an error detail, even when the carrier echoes them. */
  secrets?: unknown[]
}

export type CarrierAnswer = { status: number; payload: Record<string, unknown> | null }

export function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text)
    return isPlainObject(parsed) ? parsed : null
  } catch {
    return null
  }
}

/** The carrier's own explanation of a refusal, in the shapes these APIs use. */
function providerMessage(payload: Record<string, unknown> | null): string | undefined {
  if (!payload) return undefined
  const errors = payload.errors
  const firstError = Array.isArray(errors) && isPlainObject(errors[0]) ? errors[0] : null
  const nested = isPlainObject(payload.error)
    ? payload.error
    : isPlainObject(payload.RestException)
      ? payload.RestException
      : null
  const candidates = [
    payload.message,
    payload.error,
    payload.detail,
    payload.title,
    firstError?.detail,
    firstError?.title,
    nested?.message,
    nested?.Message,
  ]
  return candidates.find((value): value is string => typeof value === 'string' && value !== '')
}

function scrub(text: string, secrets: unknown[]): string {
  let scrubbed = text
  for (const secret of secrets) {
    if (typeof secret === 'string' && secret.length >= 4) scrubbed = scrubbed.split(secret).join('***')
  }
  return scrubbed
}

function requestBody(request: CarrierRequest): { body?: string; contentType?: string } {
  if (request.form) return { body: request.form.toString(), contentType: 'application/x-www-form-urlencoded' }
  if (request.json !== undefined) return { body: JSON.stringify(request.json), contentType: 'application/json' }
  return {}
}

type Attempt =
  | { answer: { status: number; text: string } }
  | { failure: 'timeout' | 'refused' | 'broken' | 'oversized' }

async function attempt(request: CarrierRequest): Promise<Attempt> {
  const { body, contentType } = requestBody(request)
  try {
    const response = await fetch(`${request.baseUrl}${request.path}`, {
      method: request.method,
      headers: {
        accept: 'application/json',
        ...(contentType ? { 'content-type': contentType } : {}),
        ...request.headers,
      },
      body,
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    })
    const { text, truncated } = await readCappedText(response.body, CARRIER_ANSWER_MAX_BYTES)
    return truncated ? { failure: 'oversized' } : { answer: { status: response.status, text } }
  } catch (error) {
    const { name, code } = error as { name?: string; code?: string }
    if (name === 'TimeoutError') return { failure: 'timeout' }
    return { failure: code === 'ConnectionRefused' || code === 'ECONNREFUSED' ? 'refused' : 'broken' }
  }
}

function retryable(request: CarrierRequest, outcome: Attempt): boolean {
  if ('failure' in outcome) return outcome.failure === 'refused' || request.idempotent === true
  const { status } = outcome.answer
  return DECLINED_STATUSES.has(status) || (request.idempotent === true && status >= 500)
}

const FAILURE_TEXT = {
  timeout: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`,
  refused: 'connection refused',
  broken: 'connection failed',
  oversized: `an answer larger than ${CARRIER_ANSWER_MAX_BYTES} bytes`,
}

/**
 * Calls a carrier. 2xx (and the `accept`ed statuses) → status and JSON object (null when the body is not one).
 * A 4xx → `refused` (400: bad credentials, unknown number; our own 401/403 mean something else to API clients);
 * unreachable, timed out or 5xx → `upstream_failed` (502).
 */
export async function callCarrier(ctx: AppContext, request: CarrierRequest): Promise<CarrierAnswer> {
  const { displayName } = request
  let outcome = await attempt(request)
  for (let attempts = 1; attempts < MAX_ATTEMPTS && retryable(request, outcome); attempts++) {
    const delayMs = BACKOFF_BASE_MS * 2 ** (attempts - 1) * (0.75 + Math.random() / 2)
    ctx.log.warn(
      { provider: request.provider, action: request.action, attempt: attempts, delayMs: Math.round(delayMs) },
      'carrier request failed; retrying',
    )
    await Bun.sleep(delayMs)
    outcome = await attempt(request)
  }
  if ('failure' in outcome) {
    const detail = `Failed to reach ${displayName} to ${request.action}: ${FAILURE_TEXT[outcome.failure]}`
    throw upstreamFailed(detail, new Error(detail))
  }
  const { status, text } = outcome.answer
  const payload = parseJsonObject(text)
  if ((status >= 200 && status < 300) || request.accept?.includes(status)) return { status, payload }
  const message = providerMessage(payload)
  const said = message ? `: ${scrub(message, request.secrets ?? []).slice(0, MAX_PROVIDER_MESSAGE_LENGTH)}` : ''
  if (status >= 400 && status < 500)
    throw refused(`${displayName} refused to ${request.action} (HTTP ${status})${said}`)
  throw unusableAnswer(request, status, said)
}

function unusableAnswer(request: CarrierRequest, status: number, said = '') {
  const detail = `${request.displayName} gave an unusable answer (HTTP ${status}) when asked to ${request.action}${said}`
  return upstreamFailed(detail, new Error(detail))
}

/** `callCarrier` for answers that must be a JSON object: anything else is a 502. */
export async function callCarrierForJson(ctx: AppContext, request: CarrierRequest): Promise<Record<string, unknown>> {
  const { status, payload } = await callCarrier(ctx, request)
  if (payload === null) throw unusableAnswer(request, status)
  return payload
}

/** An id from a carrier's answer; a missing one is a 502 naming what was asked. */
export function requireId(displayName: string, action: string, value: unknown): string {
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'number') return String(value)
  const detail = `${displayName} did not return an id when asked to ${action}`
  throw upstreamFailed(detail, new Error(detail))
}

export const basicAuth = (user: unknown, password: unknown) =>
  `Basic ${Buffer.from(`${String(user)}:${String(password)}`).toString('base64')}`
export const bearer = (token: unknown) => `Bearer ${String(token)}`
