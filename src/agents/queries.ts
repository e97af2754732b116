import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowDefinitions, workflows, type WorkflowDefinitionRow, type WorkflowRow } from '../db/schema'
import { preparedQuery } from '../db/prepared'
import { jsonRows, sqlPart } from '../db/sql-parts'

/**
 * The agents' statements prepared once or written as SQL: the hot paths of reading, creating, renaming and listing
 * agents (the contract's `workflows` and `workflow_definitions` tables).
 */

const currentVersionsQuery = preparedQuery((db) =>
  db
    .select({ workflow: workflows, version: workflowDefinitions })
    .from(workflows)
    .innerJoin(workflowDefinitions, eq(workflowDefinitions.workflowId, workflows.id))
    .where(
      and(
        eq(workflows.id, sql.placeholder('agentId')),
        eq(workflows.organizationId, sql.placeholder('organizationId')),
        inArray(workflowDefinitions.status, ['draft', 'published']),
      ),
    )
    // A draft is always newer than the published version.
    .orderBy(desc(workflowDefinitions.versionNumber))
    .prepare(),
)

/** The organization's agent with its draft and published versions (at most one of each), newest first. */
export function currentAndDraftVersions(ctx: AppContext, organizationId: number, agentId: number) {
  return currentVersionsQuery(ctx.db).all({ agentId, organizationId })
}

const insertAgentQuery = preparedQuery((db) =>
  db
    .insert(workflows)
    .values({
      organizationId: sql.placeholder('organizationId'),
      workflowUuid: sql.placeholder('agentUuid'),
      name: sql.placeholder('name'),
      callDispositionCodes: sql.placeholder('callDispositionCodes'),
      createdAt: sql.placeholder('now'),
      updatedAt: sql.placeholder('now'),
    })
    .returning()
    .prepare(),
)

/** A new agent without disposition codes, as stored. */
export function insertAgent(
  ctx: AppContext,
  agent: { organizationId: number; agentUuid: string; name: string; now: string },
): WorkflowRow {
  return insertAgentQuery(ctx.db).get({ ...agent, callDispositionCodes: [] })!
}

export type NewAgentVersion = Omit<WorkflowDefinitionRow, 'id'>

const insertVersionQuery = preparedQuery((db) =>
  db
    .insert(workflowDefinitions)
    .values({
      workflowId: sql.placeholder('workflowId'),
      organizationId: sql.placeholder('organizationId'),
      versionNumber: sql.placeholder('versionNumber'),
      status: sql.placeholder('status'),
      workflowJson: sql.placeholder('workflowJson'),
      workflowConfigurations: sql.placeholder('workflowConfigurations'),
      templateContextVariables: sql.placeholder('templateContextVariables'),
      createdAt: sql.placeholder('createdAt'),
      publishedAt: sql.placeholder('publishedAt'),
    })
    .returning({ id: workflowDefinitions.id })
    .prepare(),
)

/** Stores a version; returns its id. */
export function insertAgentVersion(ctx: AppContext, version: NewAgentVersion): number {
  return insertVersionQuery(ctx.db).get(version)!.id
}

const renameQuery = preparedQuery((db) =>
  db
    .update(workflows)
    .set({ name: sql`${sql.placeholder('name')}`, updatedAt: sql`${sql.placeholder('updatedAt')}` })
    .where(eq(workflows.id, sql.placeholder('agentId')))
    .prepare(),
)

export function renameAgent(ctx: AppContext, agentId: number, name: string, updatedAt: string): void {
  renameQuery(ctx.db).run({ name, updatedAt, agentId })
}

const AGENT_LIST_COLUMNS = ['id', 'name', 'status', 'created_at', 'total_runs', 'folder_id', 'workflow_uuid'] as const
const AGENT_LIST =
  'SELECT id, name, status, created_at, total_runs, NULL AS folder_id, workflow_uuid FROM workflows WHERE organization_id = ?'

/** The organization's agents (of one status, or all for null), newest first, as the JSON text of list items. */
export function agentListJson(ctx: AppContext, organizationId: number, status: string | null): string {
  const query =
    status === null
      ? sqlPart(`${AGENT_LIST} ORDER BY id DESC`, organizationId)
      : sqlPart(`${AGENT_LIST} AND status = ? ORDER BY id DESC`, organizationId, status)
  return jsonRows(ctx.sqlite, AGENT_LIST_COLUMNS, query)
}
