import { createHmac } from 'node:crypto'
import type { AgentNode } from '../definition/definition'
import { isPlainObject } from '../lib/values'
import { renderTemplate } from '../definition/template-variables'
import { credentialHeaders } from '../credentials/headers'
import type { Credential } from '../credentials/types'

/**
 * The pure half of webhook nodes: what a delivery sends (payload, headers, signature) and what a response means for
 * the next attempt. The durable outbox that sends, stores attempts and survives restarts lives elsewhere.
 */

export const WEBHOOK_MAX_ATTEMPTS = 5
const FIRST_RETRY_SECONDS = 30
const MAX_RETRY_SECONDS = 600
/** Statuses worth another attempt; any other non-2xx answer will not change by retrying. */
const RETRYABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504])

/** `refused`: not sent, by the organization's network rules (or a redirect they do not allow): permanent. */
export type DeliveryOutcome = { status: number } | { networkError: string } | { refused: string }

export type DeliveryVerdict =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number; reason: string }
  | { kind: 'dead'; reason: string }

/** Seconds to wait after failed attempt `attempt` (1-based): 30, 60, 120, 240, … capped at 600. */
export const retryDelaySeconds = (attempt: number): number =>
  Math.min(FIRST_RETRY_SECONDS * 2 ** (attempt - 1), MAX_RETRY_SECONDS)

/** What to do after attempt `attempt` (1-based) ended with `outcome`. */
export function classifyDelivery(outcome: DeliveryOutcome, attempt: number): DeliveryVerdict {
  if ('status' in outcome && outcome.status >= 200 && outcome.status < 300) return { kind: 'delivered' }
  if ('refused' in outcome) return { kind: 'dead', reason: `Not sent: ${outcome.refused}` }
  const reason = 'status' in outcome ? `HTTP ${outcome.status}` : `Network error: ${outcome.networkError}`
  if ('status' in outcome && !RETRYABLE_STATUSES.has(outcome.status)) return { kind: 'dead', reason }
  if (attempt >= WEBHOOK_MAX_ATTEMPTS) return { kind: 'dead', reason: `${reason} after ${attempt} attempts` }
  return { kind: 'retry', delayMs: retryDelaySeconds(attempt) * 1000, reason }
}

const hmacHex = (secret: string, message: string) => createHmac('sha256', secret).update(message).digest('hex')

/** `X-Ringbase-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export const signWebhook = (secret: string, body: string, unixSeconds: number): string =>
  `t=${unixSeconds},v1=${hmacHex(secret, `${unixSeconds}.${body}`)}`

/** The facts about a finished run that payload templates may use. */
export type WebhookRunFacts = {
  runId: number
  runName: string
  agentId: number
  agentName: string
  campaignId: number | null
  /** ISO creation time of the run. */
  callTime: string
  initialContext: Record<string, unknown>
  gatheredContext: Record<string, unknown>
  annotations: Record<string, unknown>
  usageInfo: Record<string, unknown>
  costInfo: Record<string, unknown>
  recordingUrl: string | null
  transcriptUrl: string | null
}

/** Template variables of a payload. Unlike the reference, `cost_info` is the cost and `usage_info` the usage. */
export function webhookTemplateContext(facts: WebhookRunFacts): Record<string, unknown> {
  return {
    workflow_run_id: facts.runId,
    workflow_run_name: facts.runName,
    workflow_id: facts.agentId,
    workflow_name: facts.agentName,
    campaign_id: facts.campaignId,
    call_time: facts.callTime,
    initial_context: facts.initialContext,
    gathered_context: facts.gatheredContext,
    annotations: facts.annotations,
    usage_info: facts.usageInfo,
    cost_info: facts.costInfo,
    recording_url: facts.recordingUrl,
    transcript_url: facts.transcriptUrl,
  }
}

/** Every string in the template rendered (objects and arrays walked); other values kept as they are. */
export function renderPayload(template: unknown, context: Record<string, unknown>, now: Date): unknown {
  if (typeof template === 'string') return renderTemplate(template, context, now)
  if (Array.isArray(template)) return template.map((item) => renderPayload(item, context, now))
  if (isPlainObject(template))
    return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, renderPayload(value, context, now)]))
  return template
}

/** Header names that would carry secrets belong in a credential (stored encrypted), not in plain node data. */
const SECRET_HEADER = /auth|token|secret|api[-_]?key|cookie|password|session/i

export type WebhookRequest = { method: string; url: string; headers: Record<string, string>; body: string | null }

export type WebhookDelivery = {
  node: AgentNode
  context: Record<string, unknown>
  deliveryId: string
  runId: number
  /** 1-based. */
  attempt: number
  /** The organization's signing secret; without one the request goes unsigned (no X-Ringbase-Signature). */
  signingSecret: string | null
  /** The node's credential, decrypted (`readCredential`). */
  credential: Credential | null
  now: Date
}

const BODYLESS_METHODS = new Set(['GET', 'DELETE'])

/**
 * The request of one attempt. An object payload gets `call_disposition` when it has none. GET and DELETE send no
 * body (the signature then covers the empty string). Custom headers that look secret are dropped.
 */
export function buildWebhookRequest(delivery: WebhookDelivery): WebhookRequest {
  const { data } = delivery.node
  const method = typeof data.http_method === 'string' ? data.http_method.toUpperCase() : 'POST'
  let payload = renderPayload(data.payload_template ?? {}, delivery.context, delivery.now)
  const gathered = delivery.context.gathered_context
  if (isPlainObject(payload) && !('call_disposition' in payload) && isPlainObject(gathered)) {
    payload = { ...payload, call_disposition: gathered.call_disposition ?? null }
  }
  const body = BODYLESS_METHODS.has(method) ? null : JSON.stringify(payload)
  const headers: Record<string, string> = {}
  if (body !== null) headers['Content-Type'] = 'application/json'
  for (const row of Array.isArray(data.custom_headers) ? data.custom_headers : []) {
    if (
      isPlainObject(row) &&
      typeof row.key === 'string' &&
      row.key !== '' &&
      typeof row.value === 'string' &&
      !SECRET_HEADER.test(row.key)
    ) {
      headers[row.key] = row.value
    }
  }
  if (delivery.credential) Object.assign(headers, credentialHeaders(delivery.credential))
  Object.assign(headers, {
    'X-Ringbase-Delivery-Id': delivery.deliveryId,
    'X-Ringbase-Run-Id': String(delivery.runId),
    'X-Ringbase-Delivery-Attempt': String(delivery.attempt),
  })
  if (delivery.signingSecret !== null) {
    headers['X-Ringbase-Signature'] = signWebhook(
      delivery.signingSecret,
      body ?? '',
      Math.floor(delivery.now.getTime() / 1000),
    )
  }
  return { method, url: typeof data.endpoint_url === 'string' ? data.endpoint_url : '', headers, body }
}
