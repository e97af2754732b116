import type { AppContext } from '../context'
import { findConnectionRow } from './connections'
import { SERVICE_NAMES } from './failures'
import { missingModels, ModelResolutionError, resolveRunModels, type ResolvedModels } from './resolve'
import type { ModelOverridesInput } from './schemas'

/**
 * Whether an agent can run before anything is dialled or answered: the same resolution the run session does
 * (`model_overrides` → the agent's pinned configuration → the organization default, then what a run needs), so the
 * check cannot disagree with the call, plus the model servers' last known health (health.ts: a server a check or a
 * call could not reach within the last minute). No request is sent to a model server here: a run start stays as fast
 * as without the check.
 */

export type RunModelsSource = {
  /** The run's `model_overrides`. */
  overrides: ModelOverridesInput | null
  /** The agent version's `workflow_configurations` (its `model_configuration_uuid`). */
  configurations: Record<string, unknown>
}

/** A run's models as its session uses them, or why it cannot run now (safe to show). */
export type RunModelsCheck = { resolved: ResolvedModels; problem: null } | { resolved: null; problem: string }

/** Resolves a run's models and checks them: the run session opens with this, run starts refuse on its problem. */
export function checkRunModels(
  ctx: AppContext,
  organizationId: number,
  { overrides, configurations }: RunModelsSource,
  channel: 'voice' | 'chat',
): RunModelsCheck {
  const pinned = configurations.model_configuration_uuid
  let resolved: ResolvedModels
  try {
    resolved = resolveRunModels(ctx, organizationId, {
      overrides,
      agentConfigurationUuid: typeof pinned === 'string' ? pinned : null,
    })
  } catch (error) {
    if (error instanceof ModelResolutionError) return { resolved: null, problem: error.message }
    throw error
  }
  const problem =
    missingModels(resolved, channel === 'voice') ?? serverSeenFailing(ctx, organizationId, resolved, channel)
  return problem ? { resolved: null, problem } : { resolved, problem: null }
}

/** Why a run of the agent could not run now (safe to show), or null when it can. */
export const runModelsProblem = (
  ctx: AppContext,
  organizationId: number,
  source: RunModelsSource,
  channel: 'voice' | 'chat',
): string | null => checkRunModels(ctx, organizationId, source, channel).problem

function serverSeenFailing(
  ctx: AppContext,
  organizationId: number,
  resolved: ResolvedModels,
  channel: 'voice' | 'chat',
): string | null {
  const now = ctx.clock.now()
  for (const service of channel === 'voice' ? (['llm', 'stt', 'tts'] as const) : (['llm'] as const)) {
    const uuid = resolved[service]?.connectionUuid
    const down = uuid ? ctx.modelHealth.downAt(uuid, now) : null
    if (!uuid || !down) continue
    const name = findConnectionRow(ctx, organizationId, uuid)?.name ?? uuid
    const ago = Math.round((now - down.seenAt) / 1000)
    return `the ${SERVICE_NAMES[service]} model server (provider connection '${name}') failed ${ago} s ago: check it with POST /api/v1/organizations/provider-connections/${uuid}/check`
  }
  return null
}
