import type { AgentDefinition } from '../definition/definition'
import type { AppContext } from '../context'
import type { ConversationTools } from '../conversation/tool-calls'
import { credentialHeaders } from '../credentials/headers'
import { readCredential } from '../credentials/store'
import { nodeToolUuids } from '../conversation/graph'
import { outboundPolicy } from '../egress/policy'
import { callHttpTool } from '../tools/http-tool'
import { activeToolsByUuid } from '../tools/service'

/**
 * The tools of one run, for `createConversation({ tools })`: the organization's active tools the definition's nodes
 * name, and HTTP calls made under the organization's current allow-list, with the tool's credential, never towards
 * this appliance, each logged (method, host, status, duration; never the path, query or credential).
 */
export function conversationTools(ctx: AppContext, organizationId: number, definition: AgentDefinition, runId?: number): ConversationTools {
  return {
    byUuid: activeToolsByUuid(ctx, organizationId, definition.nodes.flatMap(nodeToolUuids)),
    async callHttp(tool, config, args, variables, signal) {
      const outcome = await callHttpTool(config, args, variables, {
        ...outboundPolicy(ctx, organizationId),
        async credentialHeaders(credentialUuid) {
          const credential = readCredential(ctx, organizationId, credentialUuid)
          if (!credential) throw new Error(`credential ${credentialUuid} not found`)
          return credentialHeaders(credential)
        },
      }, signal, new Date(ctx.clock.now()))
      ctx.log.info({ runId, toolUuid: tool.tool_uuid, ...outcome.request, outcome: outcome.result.status }, 'tool HTTP request')
      return outcome
    },
  }
}
