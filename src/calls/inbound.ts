import type { AppContext } from '../context'
import { transaction } from '../db/transaction'
import { AddressError, normalizeAddress } from '../lib/phone'
import { createRun, openCallCount } from '../runs/service'
import { findRunTarget, RUN_TARGET_PROBLEMS } from '../runs/target'
import type { InboundOffer, InboundRoute } from '../telephony/provider'
import { getConfigCredentials } from '../telephony/config/configurations'
import {
  activeConfigurationOrganization,
  activeNumbersOf,
  concurrentCallLimit,
  runStateOfCall,
  type ActiveNumber,
} from './queries'
import { runModelsProblem } from '../models/readiness'
import { unavailableCallOf } from '../definition/fallback-lines'

/**
 * Where an inbound call goes, on every provider (reference §1.8): the called number must match an active phone number
 * of the configuration the call arrived on (compared normalized, with that number's country), the number must have an
 * inbound agent with a published version, and the organization must be under its concurrent call limit. Then the
 * inbound run is created (`call_type: inbound`, the caller and called numbers in its initial context) before the call
 * is answered. One transaction: two calls cannot both take the last free slot. An agent that cannot run (its models:
 * models/readiness.ts) still gets its run, which fails when the answered call opens it and the caller hears the agent's
 * `unavailable_call.message` in the built-in voice; with `unavailable_call.answer: false` the call is refused instead.
 */

export type InboundDecision = Exclude<InboundRoute, { ours: true }>

/** Routes an inbound call offered on a configuration to its run, or says why it is refused. */
export function startInboundRun(ctx: AppContext, offer: InboundOffer): InboundDecision {
  return transaction(ctx, () => {
    const organizationId = activeConfigurationOrganization(ctx, offer.configurationId, offer.provider)
    if (organizationId === null)
      return { refused: `the telephony configuration is not an active ${offer.provider} configuration` }
    const number = matchingNumber(ctx, offer.configurationId, offer.calledNumber)
    if (!number)
      return { refused: `no active phone number of this configuration is ${offer.calledNumber || '(no number)'}` }
    if (number.inbound_workflow_id === null)
      return { refused: `phone number ${number.address_normalized} has no inbound agent` }
    const found = findRunTarget(ctx, organizationId, { agentId: number.inbound_workflow_id })
    if ('problem' in found)
      return { refused: `inbound agent of ${number.address_normalized}: ${RUN_TARGET_PROBLEMS[found.problem]}` }
    if (openCallCount(ctx, organizationId) >= concurrentCallLimit(ctx, organizationId))
      return { refused: 'concurrent call limit reached' }
    const { target } = found
    // An agent that cannot run is answered only to hear its unavailable line (calls/voice.ts), unless it says not to.
    const modelsProblem = runModelsProblem(
      ctx,
      organizationId,
      { overrides: null, configurations: target.configurations },
      'voice',
    )
    if (modelsProblem && !unavailableCallOf(target.configurations).answer) {
      return { refused: `inbound agent of ${number.address_normalized} cannot take a call: ${modelsProblem}` }
    }
    const callerNumber = offer.callerNumber || 'unknown'
    const run = createRun(ctx, {
      organizationId,
      agentId: target.agentId,
      definitionId: target.definitionId,
      name: offer.runName(callerNumber),
      mode: offer.provider,
      callType: 'inbound',
      telephonyConfigurationId: offer.configurationId,
      callId: offer.callId,
      providerCallId: offer.providerCallId,
      initialContext: {
        caller_number: callerNumber,
        called_number: number.address_normalized,
        direction: 'inbound',
        provider: offer.provider,
        telephony_configuration_id: offer.configurationId,
        phone_number_id: number.id,
      },
    })
    const credentials = getConfigCredentials(ctx, offer.configurationId)?.credentials ?? {}
    return {
      run: {
        runId: run.id,
        organizationId,
        maxCallDurationSeconds: target.configurations.max_call_duration_seconds,
        credentials,
      },
    }
  })
}

/**
 * The one router of inbound calls, every provider's (boot.ts gives it to ctx.telephony): a call id that is already a
 * run's is a call we placed (an ARI channel back in our app after a restart), not an inbound one.
 */
export function routeInboundCall(ctx: AppContext, offer: InboundOffer): InboundRoute {
  return transaction(ctx, () => {
    if (runStateOfCall(ctx, offer.callId) !== null) return { ours: true }
    return startInboundRun(ctx, offer)
  })
}

/** The configuration's active number that `calledNumber` is, normalized with each number's own country. */
export function matchingNumber(
  ctx: AppContext,
  configurationId: number,
  calledNumber: string,
): ActiveNumber | undefined {
  if (calledNumber.trim() === '') return undefined
  return activeNumbersOf(ctx, configurationId).find((number) => {
    try {
      return normalizeAddress(calledNumber, number.country_code).address_normalized === number.address_normalized
    } catch (error) {
      if (error instanceof AddressError) return false
      throw error
    }
  })
}
