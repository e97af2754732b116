import type { AppContext } from '../context'
import { transaction } from '../db/transaction'
import { AddressError, ARI_PROVIDER, normalizeAddress } from '../lib/phone'
import { createRun, openCallCount } from '../runs/service'
import { findRunTarget, RUN_TARGET_PROBLEMS } from '../runs/target'
import type { InboundCall, InboundRoute } from '../telephony/ari/adapter'
import { concurrentCallLimit } from './start'

/**
 * Where an inbound ARI call goes (reference §1.8, deciding inbound by channel id): a channel id that is already a
 * run's call id is a call we placed, not an inbound one. Otherwise the called number must match an active phone
 * number of the configuration the call arrived on (compared normalized, with that number's country), the number
 * must have an inbound agent with a published version, and the organization must be under its concurrent call
 * limit. Then the inbound run is created (`call_type: inbound`, the caller and called numbers in its initial
 * context) with the channel id as its call id, before the call is answered. One transaction: two calls cannot both
 * take the last free slot.
 */
export function routeInboundCall(ctx: AppContext, call: InboundCall): InboundRoute {
  return transaction(ctx, () => {
    const known = ctx.sqlite.query<{ id: number }, [string]>('SELECT id FROM workflow_runs WHERE call_id = ?').get(call.callId)
    if (known) return { ours: true }
    const configuration = ctx.sqlite.query<{ organization_id: number }, [number, string]>(
      'SELECT organization_id FROM telephony_configurations WHERE id = ? AND provider = ? AND inactive = 0',
    ).get(call.configurationId, ARI_PROVIDER)
    if (!configuration) return { refused: 'the telephony configuration is not an active ARI configuration' }
    const organizationId = configuration.organization_id
    const number = matchingNumber(ctx, call.configurationId, call.calledNumber)
    if (!number) return { refused: `no active phone number of this configuration is ${call.calledNumber || '(no number)'}` }
    if (number.inbound_workflow_id === null) return { refused: `phone number ${number.address_normalized} has no inbound agent` }
    const found = findRunTarget(ctx, organizationId, { workflowId: number.inbound_workflow_id })
    if ('problem' in found) return { refused: `inbound agent of ${number.address_normalized}: ${RUN_TARGET_PROBLEMS[found.problem]}` }
    if (openCallCount(ctx, organizationId) >= concurrentCallLimit(ctx, organizationId)) return { refused: 'concurrent call limit reached' }
    const { target } = found
    const callerNumber = call.callerNumber || 'unknown'
    const run = createRun(ctx, {
      organizationId,
      workflowId: target.workflowId,
      definitionId: target.definitionId,
      name: `ARI Inbound ${callerNumber}`,
      mode: ARI_PROVIDER,
      callType: 'inbound',
      telephonyConfigurationId: call.configurationId,
      callId: call.callId,
      initialContext: {
        caller_number: callerNumber,
        called_number: number.address_normalized,
        direction: 'inbound',
        provider: ARI_PROVIDER,
        telephony_configuration_id: call.configurationId,
        phone_number_id: number.id,
      },
    })
    return { run: { runId: run.id, organizationId, maxCallDurationSeconds: target.configurations.max_call_duration_seconds } }
  })
}

type NumberRow = { id: number; address_normalized: string; country_code: string | null; inbound_workflow_id: number | null }

function matchingNumber(ctx: AppContext, configurationId: number, calledNumber: string): NumberRow | undefined {
  if (calledNumber.trim() === '') return undefined
  const numbers = ctx.sqlite.query<NumberRow, [number]>(
    'SELECT id, address_normalized, country_code, inbound_workflow_id FROM phone_numbers WHERE telephony_configuration_id = ? AND is_active = 1 ORDER BY id',
  ).all(configurationId)
  return numbers.find((number) => {
    try {
      return normalizeAddress(calledNumber, number.country_code).address_normalized === number.address_normalized
    } catch (error) {
      if (error instanceof AddressError) return false
      throw error
    }
  })
}
