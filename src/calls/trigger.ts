import { randomInt } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { invalid, limitReached, notFound, refused, upstreamFailed } from '../lib/errors'
import { modelOverridesProblems } from '../models/resolve'
import { runModelsProblem } from '../models/readiness'
import { validateDestination } from '../lib/phone'
import { ariDestinationRules } from '../telephony/ari/metadata'
import { openCallCount } from '../runs/service'
import { clientContext, findRunTarget, RUN_TARGET_PROBLEMS, type AgentSelector } from '../runs/target'
import { concurrentCallLimit } from './queries'
import { placedByAnotherInstance, resolveOutboundLine, startOutboundCall } from './start'
import type { Principal } from '../auth/keys'
import type { TriggerCallBody, TriggerCallResponse } from './schemas'

export type TriggerMode = 'production' | 'test'

export const CONCURRENT_CALL_LIMIT_REACHED = 'Concurrent call limit reached'
/** How a run start that its agent's models keep from running begins its 400; nothing is dialled. */
export const AGENT_CANNOT_RUN = 'The agent cannot take a call'
/** Several instances: an ARI call arrived at one that does not hold the configuration's events connection. */
export const ARI_HELD_ELSEWHERE =
  "Another Ringbase instance holds this telephony configuration's Asterisk events connection, and ARI calls are placed by that instance (after it stopped, another takes the connection over within seconds): send the request to it, or try again shortly"

const tooManyCalls = () => limitReached(CONCURRENT_CALL_LIMIT_REACHED)

/**
 * Starts an outbound run over the public API, checking in the reference platform's order (validation already
 * passed, the caller authenticated by the route): the agent (404, another organization's agents do not exist), the
 * telephony configuration and caller id (404/400), the destination for that provider (400), the agent's models (400:
 * none resolvable, a pinned configuration or connection gone, a model server seen failing; models/readiness.ts), the
 * organization's concurrent
 * call limit (429). Then the run is written with its call id and the provider dials; a refused dial fails the run
 * (through the same call report as any other outcome) and answers 400.
 */
export async function startRunByApi(
  ctx: AppContext,
  principal: Principal,
  selector: AgentSelector,
  mode: TriggerMode,
  body: Static<typeof TriggerCallBody>,
): Promise<Static<typeof TriggerCallResponse>> {
  const { organizationId } = principal
  const found = findRunTarget(ctx, organizationId, selector, { preferDraft: mode === 'test' })
  if ('problem' in found) throw notFound(RUN_TARGET_PROBLEMS[found.problem])
  const { target } = found
  const overrideProblems = modelOverridesProblems(ctx, organizationId, body.model_overrides, [
    'body',
    'model_overrides',
  ])
  if (overrideProblems.length > 0) throw invalid(overrideProblems)

  const line = resolveOutboundLine(
    ctx,
    organizationId,
    {
      telephonyConfigurationId: body.telephony_configuration_id,
      fromPhoneNumberId: body.from_phone_number_id,
    },
    'chosen_or_default_on_ari',
  )
  const { provider } = line
  if (!provider) {
    throw refused(
      `Telephony provider not configured for this ${body.telephony_configuration_id == null ? 'organization' : 'configuration'}`,
    )
  }
  const destinationProblem = validateDestination(
    body.phone_number,
    line.providerName,
    ariDestinationRules(line.credentials),
  )
  if (destinationProblem) throw refused(`phone_number ${destinationProblem}`)
  if (placedByAnotherInstance(ctx, line)) throw refused(ARI_HELD_ELSEWHERE)
  const modelsProblem = runModelsProblem(
    ctx,
    organizationId,
    { overrides: body.model_overrides ?? null, configurations: target.configurations },
    'voice',
  )
  if (modelsProblem) throw refused(`${AGENT_CANNOT_RUN}: ${modelsProblem}`)

  const started = startOutboundCall(ctx, () => {
    if (openCallCount(ctx, organizationId) >= concurrentCallLimit(ctx, organizationId)) throw tooManyCalls()
    return {
      organizationId,
      target,
      line: { ...line, provider },
      destination: body.phone_number,
      runName: `${mode === 'test' ? 'WR-TEST' : 'WR-API'}-${randomInt(1000, 10_000)}`,
      context: { ...clientContext(body.initial_context), phone_number: body.phone_number },
      extraContext: {
        ...(line.fromPhoneNumberId !== null ? { from_phone_number_id: line.fromPhoneNumberId } : {}),
        trigger_mode: mode,
        agent_identifier: 'triggerPath' in selector ? selector.triggerPath : target.agentUuid,
        agent_identifier_type: 'triggerPath' in selector ? 'trigger_path' : 'workflow_uuid',
        workflow_uuid: target.agentUuid,
        api_key_id: principal.apiKeyId,
      },
      modelOverrides: body.model_overrides,
    }
  })!
  const refusal = await started.placed
  if (refusal !== null) {
    const detail = `Failed to initiate call: ${refusal.reason}`
    throw refusal.unreachable ? upstreamFailed(detail, new Error(detail)) : refused(detail)
  }
  ctx.log.info(
    { organizationId, runId: started.runId, callId: started.callId, configurationId: line.configurationId, mode },
    'run started over the API',
  )
  return { status: 'initiated', workflow_run_id: started.runId, workflow_run_name: started.runName }
}
