import type { TObject } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { tooLarge } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import type { WebhookAnswer, WebhookRequest } from '../../telephony/carriers/carrier'
import { handleCarrierAnswer, handleCarrierCallback, handleCarrierInbound } from '../../calls/carrier-webhooks'
import { ErrorDetail } from '../schemas'

/**
 * The URLs carriers call: inbound calls, answer URLs of outbound calls, status callbacks and other events. No API key:
 * each webhook is authenticated by its carrier's signature, against the stored secret, before anything changes.
 */

/** Carrier webhooks are small forms or JSON documents; anything larger is refused before it is read whole. */
export const MAX_WEBHOOK_BODY_BYTES = 64 * 1024

const tags = ['Telephony webhooks']
const errors = { 401: ErrorDetail, 403: ErrorDetail, 404: ErrorDetail, 413: ErrorDetail }
const markup = t.String({ description: "The carrier's markup (TwiML, Plivo XML, NCCO …) or an empty acknowledgement" })
const provider = t.String({ maxLength: 32 })
const callbackName = t.String({ maxLength: 64 })
const runId = t.String({ maxLength: 64 })
const ProviderParams = t.Object({ provider })
const RunParams = t.Object({ provider, run_id: runId })
const CallbackParams = t.Object({ provider, callback: callbackName })
const RunCallbackParams = t.Object({ provider, callback: callbackName, run_id: runId })

const payloadTooLarge = () => tooLarge(`Webhook bodies are limited to ${MAX_WEBHOOK_BODY_BYTES} bytes`)

async function readCapped(request: Request): Promise<string> {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_WEBHOOK_BODY_BYTES) throw payloadTooLarge()
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > MAX_WEBHOOK_BODY_BYTES) throw payloadTooLarge()
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The webhook as the carrier sent it, addressed by our public URL (what the carrier signed). */
async function readWebhook(ctx: AppContext, request: Request): Promise<WebhookRequest> {
  const url = new URL(request.url)
  const rawBody = request.method === 'GET' ? '' : await readCapped(request)
  const contentType = request.headers.get('content-type') ?? ''
  let json: Record<string, unknown> | null = null
  if (contentType.includes('json')) {
    try {
      const parsed: unknown = JSON.parse(rawBody)
      json = isPlainObject(parsed) ? parsed : null
    } catch {
      json = null
    }
  }
  const params = contentType.includes('application/x-www-form-urlencoded')
    ? Object.fromEntries(new URLSearchParams(rawBody))
    : Object.fromEntries(url.searchParams)
  return {
    method: request.method,
    url: `${ctx.config.publicUrl}${url.pathname}${url.search}`,
    headers: request.headers,
    rawBody,
    params,
    json,
  }
}

const respond = (answer: WebhookAnswer) =>
  new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.contentType } })

export const telephonyWebhookRoutes = (ctx: AppContext) => {
  const inbound = (provider: string | null) => async (request: Request) =>
    respond(await handleCarrierInbound(ctx, provider, await readWebhook(ctx, request)))
  const answer = async (request: Request, params: { provider: string; run_id: string }) =>
    respond(handleCarrierAnswer(ctx, params.provider, params.run_id, await readWebhook(ctx, request)))
  const callback = async (request: Request, params: { provider: string; callback: string; run_id?: string }) =>
    respond(
      await handleCarrierCallback(
        ctx,
        params.provider,
        params.callback,
        params.run_id ?? null,
        await readWebhook(ctx, request),
      ),
    )
  const plain = (summary: string) => ({
    parse: 'none' as const,
    response: { 200: markup, ...errors },
    detail: { tags, summary, security: [] },
  })
  const route = <P extends TObject>(summary: string, params: P) => ({ ...plain(summary), params })
  const inboundSummary =
    'Inbound call webhook of every carrier: opens the media stream of a new inbound run, or rejects the call'
  const providerInboundSummary = "Inbound call webhook of one carrier (its console's voice URL)"
  const answerSummary = 'Answer URL of an outbound call: connects it to its media stream (or hangs up on a machine)'
  return new Elysia({ prefix: '/api/v1/telephony' })
    .post('/inbound/run', ({ request }) => inbound(null)(request), plain(inboundSummary))
    .get('/inbound/run', ({ request }) => inbound(null)(request), plain(inboundSummary))
    .post(
      '/:provider/inbound',
      ({ request, params }) => inbound(params.provider)(request),
      route(providerInboundSummary, ProviderParams),
    )
    .get(
      '/:provider/inbound',
      ({ request, params }) => inbound(params.provider)(request),
      route(providerInboundSummary, ProviderParams),
    )
    .post(
      '/:provider/answer/:run_id',
      ({ request, params }) => answer(request, params),
      route(answerSummary, RunParams),
    )
    .get('/:provider/answer/:run_id', ({ request, params }) => answer(request, params), route(answerSummary, RunParams))
    .post(
      '/:provider/:callback/:run_id',
      ({ request, params }) => callback(request, params),
      route('Status callback of a call we placed', RunCallbackParams),
    )
    .post(
      '/:provider/:callback',
      ({ request, params }) => callback(request, params),
      route('Carrier event webhook without a run in its URL (number status URLs, CDRs, WhatsApp)', CallbackParams),
    )
    .get(
      '/:provider/:callback',
      ({ request, params }) => callback(request, params),
      route('Carrier webhook verification handshake (WhatsApp)', CallbackParams),
    )
}
