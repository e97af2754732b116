import { eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { credentialHeaders } from '../credentials/headers'
import { readCredential } from '../credentials/store'
import { tools } from '../db/schema'
import { outboundPolicy } from '../egress/policy'
import { isoNow } from '../lib/clock'
import { refused } from '../lib/errors'
import { listMcpTools, McpFailure, type McpEnvironment } from './mcp-client'
import { sameMcpServer } from './definitions'
import type { McpConfig, McpDiscoveredTool, ToolViewShape } from './schemas'
import { findTool, toolView } from './service'

/**
 * What an MCP tool's server offers, listed when the tool is saved and on demand, and kept in its definition
 * (`discovered_tools` with their input schemas): runs offer these without asking the server first. A listing that
 * fails keeps the previous list and says why in `discovery_error`; saving never fails because the server is down.
 */

/** The organization's outbound rules and credentials, as HTTP and MCP tools need them (listing here, calls in src/runs/tools.ts). */
export function toolEnvironment(ctx: AppContext, organizationId: number): McpEnvironment {
  return {
    ...outboundPolicy(ctx, organizationId),
    clientVersion: ctx.version,
    async credentialHeaders(credentialUuid) {
      const credential = readCredential(ctx, organizationId, credentialUuid)
      if (!credential) throw new Error(`credential ${credentialUuid} not found`)
      return credentialHeaders(credential)
    },
  }
}

export type McpRefresh = { tool_uuid: string; discovered_tools: McpDiscoveredTool[]; error: string | null }

type Discovery = Pick<McpConfig, 'discovered_tools' | 'discovered_at' | 'discovery_error'>

/** Listing happens inside the API request that saves or refreshes the tool: it never holds it longer than this. */
export const MCP_DISCOVERY_MAX_SECONDS = 10

async function discover(ctx: AppContext, organizationId: number, config: McpConfig): Promise<Discovery> {
  try {
    const { tools: found, problems } = await listMcpTools(
      { ...config, timeout_secs: Math.min(config.timeout_secs, MCP_DISCOVERY_MAX_SECONDS) },
      toolEnvironment(ctx, organizationId),
      new AbortController().signal,
    )
    return {
      discovered_tools: found,
      discovered_at: isoNow(ctx.clock),
      discovery_error: problems.length > 0 ? problems.join('; ') : null,
    }
  } catch (error) {
    const reason = error instanceof McpFailure ? error.message : 'The MCP server could not be listed'
    return { discovered_tools: config.discovered_tools, discovered_at: config.discovered_at, discovery_error: reason }
  }
}

/**
 * Lists the tool's server and stores what it offers, unless the tool changed server meanwhile (the listing is then
 * of a server it no longer names).
 */
async function storeDiscovery(
  ctx: AppContext,
  organizationId: number,
  toolUuid: string,
  config: McpConfig,
): Promise<Discovery> {
  const discovery = await discover(ctx, organizationId, config)
  const row = findTool(ctx, organizationId, toolUuid)
  if (row.definition.type === 'mcp' && sameMcpServer(row.definition.config, config)) {
    ctx.db
      .update(tools)
      .set({ definition: { ...row.definition, config: { ...row.definition.config, ...discovery } } })
      .where(eq(tools.id, row.id))
      .run()
  }
  return discovery
}

/** After a create or update: an MCP tool's server listed, and the tool shown with what it offers. */
export async function withDiscoveredTools(
  ctx: AppContext,
  organizationId: number,
  view: ToolViewShape,
): Promise<ToolViewShape> {
  if (view.definition.type !== 'mcp') return view
  await storeDiscovery(ctx, organizationId, view.tool_uuid, view.definition.config as McpConfig)
  return toolView(findTool(ctx, organizationId, view.tool_uuid))
}

/** `POST /tools/{uuid}/mcp/refresh`: the server listed again; an unreachable server is an `error`, the last list kept. */
export async function refreshMcpTool(ctx: AppContext, organizationId: number, toolUuid: string): Promise<McpRefresh> {
  const { definition } = findTool(ctx, organizationId, toolUuid)
  if (definition.type !== 'mcp') throw refused("This tool is not an MCP tool: only MCP tools list a server's tools")
  const discovery = await storeDiscovery(ctx, organizationId, toolUuid, definition.config)
  return { tool_uuid: toolUuid, discovered_tools: discovery.discovered_tools, error: discovery.discovery_error }
}
