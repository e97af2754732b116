import { and, desc, eq, inArray, ne } from 'drizzle-orm'
import type { AppContext } from '../context'
import { findTriggerNodes, type AgentDefinition } from '../definition/definition'
import { withDefaultConfigurations, type AgentConfigurations } from '../definition/configurations'
import { requiredTemplateVariables } from '../definition/template-variables'
import { invalid, notFound, refused } from '../lib/errors'
import { runModelsProblem } from '../models/readiness'
import { modelOverridesProblems } from '../models/resolve'
import {
  workflowDefinitions,
  workflows,
  workflowTriggers,
  type WorkflowDefinitionRow,
  type WorkflowRow,
} from '../db/schema'

/** What a run executes: the agent and the version bound to the run when it is created. */
export type RunTarget = {
  organizationId: number
  agentId: number
  agentUuid: string
  agentName: string
  definitionId: number
  versionNumber: number
  definition: AgentDefinition
  configurations: AgentConfigurations
  /** Variables the call context must supply (see requiredTemplateVariables). */
  requiredVariables: string[]
}

/** How an entry point names the agent: its id, its Agent UUID, or the trigger_path of one of its API Trigger nodes. */
export type AgentSelector = { agentId: number } | { agentUuid: string } | { triggerPath: string }

/**
 * Which version runs: a pinned `definitionId` (published or archived, never a draft), else with `preferDraft` (test
 * calls) the draft when there is one, else the published version.
 */
export type VersionChoice = { definitionId?: number | null; preferDraft?: boolean }

export type RunTargetProblem =
  | 'trigger_not_found'
  | 'workflow_not_found'
  | 'workflow_not_active'
  | 'no_published_definition'
  | 'definition_not_found'
  | 'trigger_not_in_definition'
  | 'trigger_not_active'

/** A 404 detail for each problem, worded as the reference platform's trigger endpoints answer. */
export const RUN_TARGET_PROBLEMS: Record<RunTargetProblem, string> = {
  trigger_not_found: 'Agent trigger not found',
  workflow_not_found: 'Workflow not found',
  workflow_not_active: 'Workflow is not active',
  no_published_definition: 'Workflow has no published definition',
  definition_not_found: 'Workflow definition not found',
  trigger_not_in_definition: 'Trigger not found in the selected Agent',
  trigger_not_active: 'Agent trigger is not active',
}

function findAgent(ctx: AppContext, organizationId: number, selector: AgentSelector): WorkflowRow | undefined {
  const scoped = (condition: ReturnType<typeof eq>) =>
    ctx.db
      .select()
      .from(workflows)
      .where(and(condition, eq(workflows.organizationId, organizationId)))
      .get()
  if ('agentId' in selector) return scoped(eq(workflows.id, selector.agentId))
  if ('agentUuid' in selector) return scoped(eq(workflows.workflowUuid, selector.agentUuid))
  const trigger = ctx.db
    .select({ workflowId: workflowTriggers.workflowId })
    .from(workflowTriggers)
    .where(
      and(eq(workflowTriggers.triggerPath, selector.triggerPath), eq(workflowTriggers.organizationId, organizationId)),
    )
    .get()
  return trigger && scoped(eq(workflows.id, trigger.workflowId))
}

function findVersion(ctx: AppContext, agentId: number, choice: VersionChoice): WorkflowDefinitionRow | undefined {
  const ofAgent = eq(workflowDefinitions.workflowId, agentId)
  if (choice.definitionId != null) {
    return ctx.db
      .select()
      .from(workflowDefinitions)
      .where(and(ofAgent, eq(workflowDefinitions.id, choice.definitionId), ne(workflowDefinitions.status, 'draft')))
      .get()
  }
  return ctx.db
    .select()
    .from(workflowDefinitions)
    .where(
      and(ofAgent, inArray(workflowDefinitions.status, choice.preferDraft ? ['draft', 'published'] : ['published'])),
    )
    .orderBy(desc(workflowDefinitions.versionNumber))
    .limit(1)
    .get()
}

/**
 * Resolves what a new run of the organization would execute, or why it cannot run. Another organization's agents and
 * trigger paths are not found. Entry points answer a problem with 404 and `RUN_TARGET_PROBLEMS[problem]`.
 */
export function findRunTarget(
  ctx: AppContext,
  organizationId: number,
  selector: AgentSelector,
  choice: VersionChoice = {},
): { target: RunTarget } | { problem: RunTargetProblem } {
  const agent = findAgent(ctx, organizationId, selector)
  if (!agent) return { problem: 'triggerPath' in selector ? 'trigger_not_found' : 'workflow_not_found' }
  if (agent.status !== 'active') return { problem: 'workflow_not_active' }
  const version = findVersion(ctx, agent.id, choice)
  if (!version) return { problem: choice.definitionId != null ? 'definition_not_found' : 'no_published_definition' }
  const definition = version.workflowJson as AgentDefinition
  if ('triggerPath' in selector) {
    const trigger = findTriggerNodes(definition).find((node) => node.data.trigger_path === selector.triggerPath)
    if (!trigger) return { problem: 'trigger_not_in_definition' }
    if (trigger.data.enabled === false) return { problem: 'trigger_not_active' }
  }
  return {
    target: {
      organizationId,
      agentId: agent.id,
      agentUuid: agent.workflowUuid,
      agentName: agent.name,
      definitionId: version.id,
      versionNumber: version.versionNumber,
      definition,
      configurations: withDefaultConfigurations(version.workflowConfigurations),
      requiredVariables: requiredTemplateVariables(definition),
    },
  }
}

/**
 * The agent a try-out run talks to (a text chat, a web call): its draft, else its published version, with the run's
 * model overrides checked and its models ready for `channel`. Throws 404 for an agent not found, 422 for bad overrides,
 * 400 (`cannotRun: <reason>`) when it cannot run.
 */
export function findTryOutTarget(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  modelOverrides: Record<string, any> | null | undefined,
  channel: 'voice' | 'chat',
  cannotRun: string,
): RunTarget {
  const found = findRunTarget(ctx, organizationId, { agentId }, { preferDraft: true })
  if ('problem' in found)
    throw found.problem === 'workflow_not_found'
      ? notFound(RUN_TARGET_PROBLEMS.workflow_not_found)
      : refused(RUN_TARGET_PROBLEMS[found.problem])
  const { target } = found
  const problems = modelOverridesProblems(ctx, organizationId, modelOverrides, ['body', 'model_overrides'])
  if (problems.length > 0) throw invalid(problems)
  const modelsProblem = runModelsProblem(
    ctx,
    organizationId,
    { overrides: modelOverrides ?? null, configurations: target.configurations },
    channel,
  )
  if (modelsProblem) throw refused(`${cannotRun}: ${modelsProblem}`)
  return target
}

/** Keys of initial_context only the server writes. */
const RESERVED_CONTEXT_KEYS = new Set(['provider', 'runtime_configuration'])

/** A client's initial_context without the keys only the server writes. */
export const clientContext = (context: Record<string, unknown> | null | undefined): Record<string, unknown> =>
  Object.fromEntries(Object.entries(context ?? {}).filter(([key]) => !RESERVED_CONTEXT_KEYS.has(key)))
