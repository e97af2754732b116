import { and, asc, eq } from 'drizzle-orm'
import { startInboundCall } from '../calls/start'
import type { AppContext } from '../context'
import { phoneNumbers, telephonyConfigurations } from '../db/schema'
import { unauthenticated } from '../lib/errors'
import { AddressError, normalizeAddress } from '../lib/phone'
import { findRunTarget } from '../runs/target'
import {
  acknowledge, callLinks, displayName, runById, runByProviderCallId, type CarrierDriver, type CarrierName, type InboundCallStart,
  type WebhookAnswer, type WebhookRequest,
} from './carrier'
import { carrierDriver } from './carriers'
import { getConfigCredentials } from './configurations'
import type { Credentials } from './providers'
import { applyStatusUpdate, handleStatusCallback, requireValid, verifiedRun } from './status-callbacks'

/**
 * The webhooks whose answer tells the carrier what to do with a call: the answer URL of an outbound call we placed,
 * and the inbound webhook of the organization's numbers (`/api/v1/telephony/inbound/run` for every carrier, or the
 * carrier's own `/api/v1/telephony/<provider>/inbound`). Both answer with the carrier's markup that opens the run's
 * media stream, or with markup that ends the call.
 */

const NO_MARKUP = (provider: CarrierName) => new Error(`${provider} has no answer markup`)

function refuseMarkup(driver: CarrierDriver, direction: 'inbound' | 'outbound'): WebhookAnswer {
  if (!driver.refuse) throw NO_MARKUP(driver.provider)
  return driver.refuse(direction)
}

/**
 * The answer URL of an outbound call: a machine (when the carrier detected one) or a run that already ended gets the
 * hang-up markup; otherwise the call is connected to its media stream.
 */
export function handleAnswerWebhook(ctx: AppContext, driver: CarrierDriver, runId: number, request: WebhookRequest): WebhookAnswer {
  const { run, credentials } = verifiedRun(ctx, driver, runById(ctx, runId), request)
  const update = driver.parseStatus(request)
  if (update) applyStatusUpdate(ctx, driver, run, update)
  if (update?.machine || run.state !== 'initialized' || !driver.connect) return refuseMarkup(driver, 'outbound')
  return driver.connect(callLinks(ctx, { runId: run.id, workflowId: run.workflowId, organizationId: run.organizationId }), credentials)
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

type Candidate = {
  phoneNumberId: number
  organizationId: number
  configurationId: number
  inboundWorkflowId: number | null
  address: string
}

/** Active numbers with the called address on active configurations of the carrier (any organization). */
function numbersCalled(ctx: AppContext, provider: CarrierName, calledAddress: string): Candidate[] {
  let normalized: string
  try {
    normalized = normalizeAddress(calledAddress).address_normalized
  } catch (error) {
    if (error instanceof AddressError) return []
    throw error
  }
  return ctx.db
    .select({
      phoneNumberId: phoneNumbers.id,
      organizationId: phoneNumbers.organizationId,
      configurationId: phoneNumbers.telephonyConfigurationId,
      inboundWorkflowId: phoneNumbers.inboundWorkflowId,
      address: phoneNumbers.addressNormalized,
    })
    .from(phoneNumbers)
    .innerJoin(telephonyConfigurations, eq(telephonyConfigurations.id, phoneNumbers.telephonyConfigurationId))
    .where(and(
      eq(phoneNumbers.addressNormalized, normalized),
      eq(phoneNumbers.isActive, true),
      eq(telephonyConfigurations.provider, provider),
      eq(telephonyConfigurations.inactive, false),
    ))
    .orderBy(asc(phoneNumbers.id))
    .all()
}

/**
 * An inbound webhook. A call start is routed by the called number: the first active number on an active configuration
 * of this carrier whose stored secret verifies the webhook. Its inbound agent, the organization's call limit, then an
 * inbound run and the markup opening its media stream. No number, no agent or no capacity → the carrier's reject markup
 * and no run. Anything else the carrier sends to this URL (Telnyx sends every event of the call) is a status callback.
 */
export async function handleInboundWebhook(ctx: AppContext, provider: CarrierName | null, request: WebhookRequest): Promise<WebhookAnswer> {
  const carrier = provider ?? detectCarrier(request)
  const driver = carrier ? carrierDriver(carrier) : null
  if (!driver) throw unauthenticated('Missing webhook signature')
  const start = driver.parseInbound?.(request) ?? null
  if (!start) return handleStatusCallback(ctx, driver, null, request)

  const candidates = numbersCalled(ctx, driver.provider, start.to)
  const verified = candidates
    .map((candidate) => ({ candidate, credentials: getConfigCredentials(ctx, candidate.configurationId)!.credentials }))
    .find(({ credentials }) => driver.verify(request, credentials, { runId: null, nowMs: ctx.clock.now() }) === 'valid')
  if (!verified) {
    // Nothing of ours is called: nothing to verify against, and nothing changes.
    if (candidates.length === 0) return reject(ctx, driver, null, start, 'no active number with this address')
    requireValid(driver.verify(request, getConfigCredentials(ctx, candidates[0].configurationId)!.credentials, { runId: null, nowMs: ctx.clock.now() }))
  }
  const { candidate, credentials } = verified!

  const existing = runByProviderCallId(ctx, driver.provider, start.providerCallId)
  if (existing) {
    // The carrier asked again for the same call (a retried webhook): same answer, no second run.
    if (existing.state !== 'initialized') return reject(ctx, driver, credentials, start, 'run already started')
    return answer(ctx, driver, credentials, start, existing)
  }
  const found = candidate.inboundWorkflowId === null ? null : findRunTarget(ctx, candidate.organizationId, { workflowId: candidate.inboundWorkflowId })
  if (!found || 'problem' in found) return reject(ctx, driver, credentials, start, found ? found.problem : 'no inbound agent on this number')
  const started = startInboundCall(ctx, {
    organizationId: candidate.organizationId,
    target: found.target,
    providerName: driver.provider,
    configurationId: candidate.configurationId,
    runName: `${displayName(driver.provider)} Inbound ${start.from || 'unknown'}`,
    providerCallId: start.providerCallId,
    caller: start.from,
    called: candidate.address,
    phoneNumberId: candidate.phoneNumberId,
  })
  if (!started) return reject(ctx, driver, credentials, start, 'concurrent call limit reached')
  ctx.log.info({ provider: driver.provider, runId: started.runId, organizationId: candidate.organizationId }, 'inbound call accepted')
  return answer(ctx, driver, credentials, start, runById(ctx, started.runId)!)
}

async function answer(
  ctx: AppContext, driver: CarrierDriver, credentials: Credentials, start: InboundCallStart,
  run: { id: number; workflowId: number; organizationId: number },
): Promise<WebhookAnswer> {
  const links = callLinks(ctx, { runId: run.id, workflowId: run.workflowId, organizationId: run.organizationId })
  if (driver.answerInbound) return driver.answerInbound(ctx, credentials, start, links)
  if (!driver.connect) throw NO_MARKUP(driver.provider)
  return driver.connect(links, credentials)
}

async function reject(ctx: AppContext, driver: CarrierDriver, credentials: Credentials | null, start: InboundCallStart, reason: string): Promise<WebhookAnswer> {
  ctx.log.info({ provider: driver.provider, providerCallId: start.providerCallId, reason }, 'inbound call rejected')
  if (driver.rejectInbound) return driver.rejectInbound(ctx, credentials, start)
  return driver.refuse ? driver.refuse('inbound') : acknowledge()
}
