import type { AppContext } from '../context'
import { notFound } from '../lib/errors'
import type { WebhookAnswer, WebhookRequest } from '../telephony/carriers/carrier'
import { carrierOf } from '../telephony/carriers/registry'
import { listActiveConfigurations } from '../telephony/config/configurations'
import { handleAnswerWebhook, handleInboundWebhook } from './answer-webhooks'
import { handleStatusCallback } from '../telephony/carriers/status-callbacks'
import { handleTransferCallback, TRANSFER_CALLBACK } from '../telephony/carriers/transfer'

/**
 * Every carrier webhook under `/api/v1/telephony/<provider>/…`, dispatched to its Carrier. Each one is
 * authenticated before anything changes (see status-callbacks.ts); unknown carriers and paths are not found.
 */

const UNKNOWN_WEBHOOK = 'Unknown telephony webhook'

function carrierNamed(provider: string) {
  const carrier = carrierOf(provider)
  if (!carrier) throw notFound(UNKNOWN_WEBHOOK)
  return carrier
}

const runIdOf = (text: string) => {
  if (!/^[1-9]\d{0,15}$/.test(text)) throw notFound(UNKNOWN_WEBHOOK)
  return Number(text)
}

/** `/<provider>/<callback>[/<run_id>]`: a status callback (or the carrier's other event webhook) it was given. */
export async function handleCarrierCallback(
  ctx: AppContext,
  provider: string,
  callback: string,
  runId: string | null,
  request: WebhookRequest,
): Promise<WebhookAnswer> {
  const carrier = carrierNamed(provider)
  if (callback === TRANSFER_CALLBACK && carrier.transfer && runId !== null)
    return handleTransferCallback(ctx, carrier, runIdOf(runId), request)
  if (!carrier.callbackPaths.includes(callback)) throw notFound(UNKNOWN_WEBHOOK)
  if (carrier.webhook)
    return carrier.webhook(
      ctx,
      request,
      listActiveConfigurations(ctx, carrier.provider).map((configuration) => configuration.credentials),
    )
  return handleStatusCallback(ctx, carrier, runId === null ? null : runIdOf(runId), request)
}

/** `/<provider>/answer/<run_id>`: the answer URL of an outbound call. */
export function handleCarrierAnswer(
  ctx: AppContext,
  provider: string,
  runId: string,
  request: WebhookRequest,
): WebhookAnswer {
  const carrier = carrierNamed(provider)
  if (!carrier.connect) throw notFound(UNKNOWN_WEBHOOK)
  return handleAnswerWebhook(ctx, carrier, runIdOf(runId), request)
}

/** `/<provider>/inbound`, or `/inbound/run` for every carrier (the carrier told apart by its signature header). */
export function handleCarrierInbound(
  ctx: AppContext,
  provider: string | null,
  request: WebhookRequest,
): Promise<WebhookAnswer> {
  return handleInboundWebhook(ctx, provider === null ? null : carrierNamed(provider).provider, request)
}
