import { randomUUID } from 'node:crypto'
import { matchingNumber } from './inbound'
import { activeConfigurationIds } from './queries'
import type { AppContext } from '../context'
import { unauthenticated } from '../lib/errors'
import {
  acknowledge,
  callLinks,
  runById,
  runByProviderCallId,
  type Carrier,
  type CarrierName,
  type InboundCallStart,
  type WebhookAnswer,
  type WebhookRequest,
} from '../telephony/carriers/carrier'
import { carrierOf, displayName } from '../telephony/carriers/registry'
import { getConfigCredentials } from '../telephony/config/configurations'
import type { Credentials } from '../telephony/config/providers'
import {
  applyStatusUpdate,
  handleStatusCallback,
  requireValid,
  verifiedRun,
} from '../telephony/carriers/status-callbacks'

/**
 * The webhooks whose answer tells the carrier what to do with a call: the answer URL of an outbound call we placed,
 * and the inbound webhook of the organization's numbers (`/api/v1/telephony/inbound/run` for every carrier, or the
 * carrier's own `/api/v1/telephony/<provider>/inbound`). Both answer with the carrier's markup that opens the run's
 * media stream, or with markup that ends the call.
 */

const NO_MARKUP = (provider: CarrierName) => new Error(`${provider} has no answer markup`)

function refuseMarkup(carrier: Carrier, direction: 'inbound' | 'outbound'): WebhookAnswer {
  if (!carrier.refuse) throw NO_MARKUP(carrier.provider)
  return carrier.refuse(direction)
}

/**
 * The answer URL of an outbound call: a machine (when the carrier detected one) or a run that already ended gets the
 * hang-up markup; otherwise the call is connected to its media stream.
 */
export function handleAnswerWebhook(
  ctx: AppContext,
  carrier: Carrier,
  runId: number,
  request: WebhookRequest,
): WebhookAnswer {
  const { run, credentials } = verifiedRun(ctx, carrier, runById(ctx, runId), request)
  const update = carrier.parseStatus(request)
  if (update) applyStatusUpdate(ctx, carrier, run, update)
  if (update?.machine || run.state !== 'initialized' || !carrier.connect) return refuseMarkup(carrier, 'outbound')
  return carrier.connect(
    callLinks(ctx, { runId: run.id, agentId: run.workflowId, organizationId: run.organizationId }),
    credentials,
  )
}

/** Which carrier sent an inbound webhook to the shared URL, by the signature header each one sets. */
const SIGNATURE_HEADERS: [string, CarrierName][] = [
  ['x-twilio-signature', 'twilio'],
  ['telnyx-signature-ed25519', 'telnyx'],
  ['x-plivo-signature-v3', 'plivo'],
  ['x-plivo-signature-ma-v3', 'plivo'],
  ['x-vobiz-signature-v3', 'vobiz'],
  ['x-vobiz-signature-ma-v3', 'vobiz'],
  ['x-cx-apikey', 'cloudonix'],
  ['x-hub-signature-256', 'whatsapp'],
]

function detectCarrier(request: WebhookRequest): CarrierName | null {
  const bySignature = SIGNATURE_HEADERS.find(([header]) => request.headers.has(header))?.[1]
  if (bySignature) return bySignature
  if (/^Bearer\s+\S+\.\S+\.\S+$/.test(request.headers.get('authorization') ?? '')) return 'vonage'
  if (request.params.CallSid && request.params.CallFrom !== undefined) return 'exotel'
  return null
}

/** Active configurations of the carrier (any organization) with an active number that is the called address. */
function configurationsCalled(ctx: AppContext, provider: CarrierName, calledAddress: string) {
  return activeConfigurationIds(ctx, provider)
    .filter((id) => matchingNumber(ctx, id, calledAddress) !== undefined)
    .map((id) => ({ id, credentials: getConfigCredentials(ctx, id)!.credentials }))
}

/**
 * An inbound webhook. A call start goes to the first active configuration of this carrier that has the called number
 * and whose stored secret verifies the webhook; then the rules every provider shares (calls/inbound.ts: inbound agent,
 * call limit, inbound run) and the markup opening the run's media stream. No number, no agent or no capacity → the
 * carrier's reject markup and no run. Anything else the carrier sends to this URL (Telnyx sends every event of the
 * call) is a status callback.
 */
export async function handleInboundWebhook(
  ctx: AppContext,
  provider: CarrierName | null,
  request: WebhookRequest,
): Promise<WebhookAnswer> {
  const detected = provider ?? detectCarrier(request)
  const carrier = detected ? carrierOf(detected) : null
  if (!carrier) throw unauthenticated('Missing webhook signature')
  const start = carrier.parseInbound?.(request) ?? null
  if (!start) return handleStatusCallback(ctx, carrier, null, request)

  const candidates = configurationsCalled(ctx, carrier.provider, start.to)
  const nowMs = ctx.clock.now()
  const verified = candidates.find(
    ({ credentials }) => carrier.verify(request, credentials, { runId: null, nowMs }) === 'valid',
  )
  if (!verified) {
    // Nothing of ours is called: nothing to verify against, and nothing changes.
    if (candidates.length === 0) return reject(ctx, carrier, null, start, 'no active number with this address')
    requireValid(carrier.verify(request, candidates[0].credentials, { runId: null, nowMs }))
  }
  const { id: configurationId, credentials } = verified!

  const existing = runByProviderCallId(ctx, carrier.provider, start.providerCallId)
  // Call ids are the carrier's, unique across its accounts: one already held by another configuration's run is named by
  // a webhook that this configuration's secret signs but that is not about its call. Never that run, never a second run,
  // and no command to the carrier about a call that is not this configuration's (Telnyx rejects by command).
  if (existing && existing.telephonyConfigurationId !== configurationId) {
    ctx.log.warn(
      { provider: carrier.provider, configurationId, runId: existing.id },
      'inbound webhook names the call of another telephony configuration: refused',
    )
    return carrier.refuse ? carrier.refuse('inbound') : acknowledge()
  }
  if (existing) {
    // The carrier asked again for the same call (a retried webhook): same answer, no second run.
    if (existing.state !== 'initialized') return reject(ctx, carrier, credentials, start, 'run already started')
    return answer(ctx, carrier, credentials, start, existing)
  }
  const decision = ctx.telephony.routeInbound({
    provider: carrier.provider,
    configurationId,
    callerNumber: start.from,
    calledNumber: start.to,
    callId: randomUUID(),
    providerCallId: start.providerCallId,
    runName: (caller) => `${displayName(carrier.provider)} Inbound ${caller}`,
  })
  if (!('run' in decision))
    return reject(
      ctx,
      carrier,
      credentials,
      start,
      'refused' in decision ? decision.refused : 'the call is already known',
    )
  const run = runById(ctx, decision.run.runId)!
  ctx.log.info(
    { provider: carrier.provider, runId: run.id, organizationId: run.organizationId },
    'inbound call accepted',
  )
  try {
    return await answer(ctx, carrier, credentials, start, run)
  } catch (error) {
    // The carrier could not be told to answer (Telnyx's answer command): the call never connects.
    ctx.telephony.report({
      kind: 'ended',
      callId: run.callId!,
      outcome: 'failed',
      at: ctx.clock.now(),
      answeredAt: null,
      providerStatus: 'answer_failed',
    })
    throw error
  }
}

async function answer(
  ctx: AppContext,
  carrier: Carrier,
  credentials: Credentials,
  start: InboundCallStart,
  run: { id: number; workflowId: number; organizationId: number },
): Promise<WebhookAnswer> {
  const links = callLinks(ctx, { runId: run.id, agentId: run.workflowId, organizationId: run.organizationId })
  if (carrier.answerInbound) return carrier.answerInbound(ctx, credentials, start, links)
  if (!carrier.connect) throw NO_MARKUP(carrier.provider)
  return carrier.connect(links, credentials)
}

async function reject(
  ctx: AppContext,
  carrier: Carrier,
  credentials: Credentials | null,
  start: InboundCallStart,
  reason: string,
): Promise<WebhookAnswer> {
  ctx.log.info({ provider: carrier.provider, providerCallId: start.providerCallId, reason }, 'inbound call rejected')
  if (carrier.rejectInbound) return carrier.rejectInbound(ctx, credentials, start)
  return carrier.refuse ? carrier.refuse('inbound') : acknowledge()
}
