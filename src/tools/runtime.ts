import type { WorkflowDefinition } from '../agents/definition'
import type { AppContext } from '../context'
import type { ConversationTools } from '../conversation/tool-calls'
import { nodeToolUuids } from '../conversation/graph'
import { callHttpTool } from './http-tool'
import { toolEnvironment } from './mcp'
import { callMcpTool } from './mcp-client'
import { activeToolsByUuid } from './service'

/**
 * The tools of one run, for `createConversation({ tools })`: the organization's active tools the definition's nodes
 * name, and HTTP calls made under the organization's current allow-list, with the tool's credential, never towards
 * this appliance, each logged (method, host, status, duration; never the path, query or credential); MCP calls the
 * same way (tools/mcp-client.ts), logged with host and the server's tool name.
 */
export function conversationTools(ctx: AppContext, organizationId: number, definition: WorkflowDefinition, runId?: number): ConversationTools {
  return {
    byUuid: activeToolsByUuid(ctx, organizationId, definition.nodes.flatMap(nodeToolUuids)),
    async callHttp(tool, config, args, variables, signal) {
      const outcome = await callHttpTool(config, args, variables, toolEnvironment(ctx, organizationId), signal, new Date(ctx.clock.now()))
      ctx.log.info({ runId, toolUuid: tool.tool_uuid, ...outcome.request, outcome: outcome.result.status }, 'tool HTTP request')
      return outcome
    },
    async callMcp(tool, config, toolName, args, signal) {
      const outcome = await callMcpTool(config, toolName, args, toolEnvironment(ctx, organizationId), signal)
      ctx.log.info({ runId, toolUuid: tool.tool_uuid, ...outcome.request, outcome: outcome.result.status }, 'tool MCP call')
      return outcome
    },
  }
}
