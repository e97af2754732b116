import { and, eq, inArray } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowDefinitions, workflows } from './schema'

/**
 * Every draft and published version of the organization's agents (what a call may run, or a publish make live), with
 * its agent's name: for the resources they name (recordings, credentials, a model configuration), which cannot go
 * while named.
 */
export function liveAgentVersions(ctx: AppContext, organizationId: number) {
  return ctx.db
    .select({
      name: workflows.name,
      id: workflows.id,
      status: workflowDefinitions.status,
      json: workflowDefinitions.workflowJson,
      configurations: workflowDefinitions.workflowConfigurations,
    })
    .from(workflowDefinitions)
    .innerJoin(workflows, eq(workflows.id, workflowDefinitions.workflowId))
    .where(
      and(
        eq(workflowDefinitions.organizationId, organizationId),
        inArray(workflowDefinitions.status, ['draft', 'published']),
      ),
    )
    .all()
}

/** How a refusal names an agent version that names what it refuses to remove. */
export const agentVersionLabel = (version: { name: string; id: number; status: string }) =>
  `agent '${version.name}' (id ${version.id}, ${version.status} version)`
