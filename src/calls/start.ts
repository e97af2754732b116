import { randomUUID } from 'node:crypto'
import type { AppContext } from '../context'
import { transaction } from '../db/transaction'
import { ARI_PROVIDER } from '../lib/phone'
import { isPlainObject } from '../lib/values'
import { createRun } from '../runs/service'
import type { RunTarget } from '../runs/target'
import {
  resolveOutbound,
  type OutboundChoice,
  type OutboundResolutionOptions,
} from '../telephony/config/configurations'
import type { TelephonyProvider } from '../telephony/provider'
import { supportsCallTransfer } from '../telephony/config/providers'
import { offersCallTransfer } from '../tools/service'
import { placeCall, type DialRefusal } from './place'

/**
 * The one way an outbound call starts (API trigger, campaign dialer; inbound calls start in inbound.ts): the line it
 * goes out on, the agent version it runs, the run written with its call id BEFORE anything is dialled, then the dial.
 */

/** Which telephony configuration, provider and caller id a call goes out with. */
export type OutboundLine = {
  /** Null when this appliance has no implementation for the configuration's provider. */
  provider: TelephonyProvider | null
  providerName: string
  configurationId: number
  credentials: Record<string, unknown>
  callerId: string | null
  /** The phone number presented, when one is. */
  fromPhoneNumberId: number | null
}

export type CallerIdRule =
  /** Any number the configuration resolves to (explicit, default, else any active one). */
  | 'resolved'
  /** ARI leaves the caller id to the trunk unless one was chosen or is the default: it never presents one picked at random. */
  | 'chosen_or_default_on_ari'

/** Resolves the configuration and caller id (throws the DomainError of `resolveOutbound`) and the provider behind them. */
export function resolveOutboundLine(
  ctx: AppContext,
  organizationId: number,
  choice: OutboundChoice,
  callerIdRule: CallerIdRule,
  options: OutboundResolutionOptions = {},
): OutboundLine {
  const { config, fromNumber } = resolveOutbound(ctx, organizationId, choice, options)
  const presents =
    fromNumber !== null &&
    (callerIdRule === 'resolved' ||
      config.provider !== ARI_PROVIDER ||
      choice.fromPhoneNumberId != null ||
      fromNumber.isDefaultCallerId)
  return {
    provider: ctx.telephony.providerFor(config.provider),
    providerName: config.provider,
    configurationId: config.id,
    credentials: config.credentials,
    callerId: presents ? fromNumber.addressNormalized : null,
    fromPhoneNumberId: presents ? fromNumber.id : null,
  }
}

/**
 * ARI calls of a configuration are placed by the instance that holds its events connection (telephony/ari/leases.ts):
 * Asterisk sends the call's events, its answer included, to that socket only. True when another instance holds it, so
 * this one must not place the call.
 */
export function placedByAnotherInstance(ctx: AppContext, line: OutboundLine): boolean {
  return line.providerName === ARI_PROVIDER && (ctx.ari?.heldElsewhere(line.configurationId) ?? false)
}

export type OutboundCall = {
  organizationId: number
  target: RunTarget
  line: OutboundLine & { provider: TelephonyProvider }
  destination: string
  runName: string
  /** initial_context entries before the ones every outbound call gets (provider, direction, numbers, configuration). */
  context: Record<string, unknown>
  /** initial_context entries after them. */
  extraContext?: Record<string, unknown>
  campaign?: { campaignId: number; contactId: number; trafficVariantId: string | null }
  /** The spec's model_overrides, validated by the caller. */
  modelOverrides?: Record<string, unknown> | null
}

export type StartedCall = {
  runId: number
  runName: string
  callId: string
  call: OutboundCall
  /** Settles once the provider accepted the call (null) or refused it (the run is failed). */
  placed: Promise<DialRefusal | null>
}

/**
 * Starts an outbound call. `prepare` runs inside the run's transaction and says what to call: it may check a limit
 * (throwing) or claim a campaign contact, and returns null when there is nothing to call. `written` runs in the same
 * transaction once the run exists. Then the provider is asked to dial. Returns null when `prepare` did.
 */
export function startOutboundCall(
  ctx: AppContext,
  prepare: () => OutboundCall | null,
  written?: (call: OutboundCall, runId: number) => void,
): StartedCall | null {
  const callId = randomUUID()
  const started = transaction(ctx, () => {
    const call = prepare()
    if (!call) return null
    const { line } = call
    const run = createRun(ctx, {
      organizationId: call.organizationId,
      agentId: call.target.agentId,
      definitionId: call.target.definitionId,
      name: call.runName,
      mode: line.providerName,
      callType: 'outbound',
      telephonyConfigurationId: line.configurationId,
      callId,
      modelOverrides: call.modelOverrides,
      ...(call.campaign
        ? {
            campaignId: call.campaign.campaignId,
            campaignContactId: call.campaign.contactId,
            trafficVariantId: call.campaign.trafficVariantId,
          }
        : {}),
      initialContext: {
        ...call.context,
        provider: line.providerName,
        direction: 'outbound',
        called_number: call.destination,
        ...(line.callerId ? { caller_number: line.callerId } : {}),
        telephony_configuration_id: line.configurationId,
        ...call.extraContext,
      },
    })
    written?.(call, run.id)
    return { call, run }
  })
  if (!started) return null
  const { call, run } = started
  const placed = placeCall(ctx, call.line.provider, {
    callId,
    runId: run.id,
    organizationId: call.organizationId,
    agentId: call.target.agentId,
    configurationId: call.line.configurationId,
    credentials: call.line.credentials,
    destination: call.destination,
    callerId: call.line.callerId,
    ringTimeoutSeconds: ctx.config.ringTimeoutSeconds,
    maxCallDurationSeconds: call.target.configurations.max_call_duration_seconds,
    mayBeTransferred:
      supportsCallTransfer(call.line.providerName) &&
      offersCallTransfer(ctx, call.organizationId, call.target.definition),
    detectAnsweringMachine: voicemailDetectionEnabled(call.target.configurations),
  })
  return { runId: run.id, runName: run.name, callId, call, placed }
}

/** The agent's `voicemail_detection.enabled`: carriers that detect answering machines are asked to. */
function voicemailDetectionEnabled(configurations: Record<string, unknown>): boolean {
  const detection = configurations.voicemail_detection
  return isPlainObject(detection) && detection.enabled === true
}
