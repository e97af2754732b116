import { and, eq, type SQL } from 'drizzle-orm'
import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowDefinitions, workflowRuns, workflows, type WorkflowRunRow } from '../db/schema'
import { artifactLinks, ArtifactLinksSchema, ensurePublicAccess } from './artifacts'

const JsonObject = t.Record(t.String(), t.Unknown())

/** The API's run detail object. */
export const RunDetailSchema = t.Object({
  id: t.Integer(),
  workflow_id: t.Integer(),
  workflow_name: t.String(),
  name: t.String(),
  mode: t.String(),
  call_type: t.Union([t.Literal('inbound'), t.Literal('outbound')]),
  created_at: t.String({ format: 'date-time' }),
  is_completed: t.Boolean(),
  definition_id: t.Integer(),
  version_number: t.Integer(),
  initial_context: JsonObject,
  gathered_context: JsonObject,
  usage_info: JsonObject,
  cost_info: JsonObject,
  logs: JsonObject,
  annotations: JsonObject,
  ...ArtifactLinksSchema.properties,
})

export type RunDetail = Static<typeof RunDetailSchema>

export type RunWithAgent = { run: WorkflowRunRow; agentName: string; versionNumber: number }

/** Selects runs with their agent's name and version number; add the conditions. */
export function selectRunsWithAgent(ctx: AppContext, where: SQL | undefined) {
  return ctx.db
    .select({ run: workflowRuns, agentName: workflows.name, versionNumber: workflowDefinitions.versionNumber })
    .from(workflowRuns)
    .innerJoin(workflows, eq(workflows.id, workflowRuns.workflowId))
    .innerJoin(workflowDefinitions, eq(workflowDefinitions.id, workflowRuns.definitionId))
    .where(where)
}

/** `token`: what ensurePublicAccess returned; omitted, the stored token is shown while valid. */
export function runView(
  ctx: AppContext,
  { run, agentName, versionNumber }: RunWithAgent,
  token?: string | null,
): RunDetail {
  return {
    id: run.id,
    workflow_id: run.workflowId,
    workflow_name: agentName,
    name: run.name,
    mode: run.mode,
    call_type: run.callType,
    created_at: run.createdAt,
    is_completed: run.state === 'completed',
    definition_id: run.definitionId,
    version_number: versionNumber,
    initial_context: run.initialContext,
    gathered_context: run.gatheredContext,
    usage_info: run.usageInfo ?? {},
    cost_info: run.costInfo ?? {},
    logs: run.logs,
    annotations: run.annotations,
    ...artifactLinks(ctx, run, token),
  }
}

/**
 * The organization's run (of the agent `agentId` when given) as the API shows it, minting a public download token when it has
 * artifacts and no valid token; null when there is no such run.
 */
/** The run of the organization (and of the agent, when given): how every read of one run is scoped. */
export const runOfOrganization = (organizationId: number, runId: number, agentId?: number) =>
  and(
    eq(workflowRuns.id, runId),
    eq(workflowRuns.organizationId, organizationId),
    agentId === undefined ? undefined : eq(workflowRuns.workflowId, agentId),
  )

export function runDetail(ctx: AppContext, organizationId: number, runId: number, agentId?: number): RunDetail | null {
  const found = selectRunsWithAgent(ctx, runOfOrganization(organizationId, runId, agentId)).get()
  if (!found) return null
  return runView(ctx, found, ensurePublicAccess(ctx, found.run))
}
