import { and, eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { agentVersionLabel, liveAgentVersions } from '../db/agent-versions'
import { tools } from '../db/schema'
import { transaction } from '../db/transaction'
import { deleteCredential, getCredential } from '../credentials/store'
import { conflict } from '../lib/errors'
import type { AgentDefinition } from '../definition/definition'
import { getNodeType } from '../definition/node-catalog'

/** The fields of a node type that name a credential: its catalog's `credential_ref` properties. */
const credentialFieldsOf = (nodeType: string): string[] =>
  getNodeType(nodeType)
    ?.properties.filter((property) => property.type === 'credential_ref')
    .map((property) => property.name) ?? []

const namesCredential = (definition: AgentDefinition, credentialUuid: string) =>
  (definition.nodes ?? []).some((node) =>
    credentialFieldsOf(node.type).some((field) => node.data?.[field] === credentialUuid),
  )

/**
 * Where the organization's agents (draft and published versions: webhook nodes, the pre-call fetch) and active tools
 * (HTTP requests, MCP servers) name the credential: what would fail to authenticate without it.
 */
function credentialUsers(ctx: AppContext, organizationId: number, credentialUuid: string): string[] {
  const agentUsers = liveAgentVersions(ctx, organizationId)
    .filter((version) => namesCredential(version.json as AgentDefinition, credentialUuid))
    .map(agentVersionLabel)
  const toolUsers = ctx.db
    .select({ name: tools.name, toolUuid: tools.toolUuid, definition: tools.definition })
    .from(tools)
    .where(and(eq(tools.organizationId, organizationId), eq(tools.status, 'active')))
    .all()
    .filter(
      (tool) =>
        (tool.definition as { config?: { credential_uuid?: unknown } }).config?.credential_uuid === credentialUuid,
    )
    .map((tool) => `tool '${tool.name}' (${tool.toolUuid})`)
  return [...agentUsers, ...toolUsers]
}

/** Deletes the credential; 409 while an agent or an active tool names it (their requests would go out without it). */
export function deleteUnusedCredential(ctx: AppContext, organizationId: number, credentialUuid: string): void {
  transaction(ctx, () => {
    const { name } = getCredential(ctx, organizationId, credentialUuid)
    const users = credentialUsers(ctx, organizationId, credentialUuid)
    if (users.length > 0)
      throw conflict(
        `Credential '${name}' cannot be deleted while it is named by ${users.join('; ')}: change those first`,
      )
    deleteCredential(ctx, organizationId, credentialUuid)
  })
}
