import type { AgentDefinition } from '../definition/definition'
import type { AppContext } from '../context'
import type { ConversationTools } from '../conversation/tool-calls'
import { nodeToolUuids } from '../conversation/graph'
import { callHttpTool } from '../tools/http-tool'
import { toolEnvironment } from '../tools/mcp'
import { callMcpTool } from '../tools/mcp-client'
import { activeToolsByUuid } from '../tools/service'
import { embedderOf } from '../knowledge/embedder'
import { retrieveFromKnowledgeBase } from '../knowledge/retrieval'
import type { ResolvedService } from '../models/resolve'
import type { ModelRef } from '../models/types'

/**
 * The tools of one run, for `createConversation({ tools })`: the organization's active tools the definition's nodes
 * name, and HTTP calls made under the organization's current allow-list, with the tool's credential, never towards
 * this appliance, each logged (method, host, status, duration; never the path, query or credential); and the nodes'
 * knowledge-base retrieval, over the organization's documents only, with the run's embeddings model; MCP calls as HTTP
 * ones are (tools/mcp-client.ts), logged with host and the server's tool name.
 */
export function conversationTools(
  ctx: AppContext,
  organizationId: number,
  definition: AgentDefinition,
  run: {
    id?: number
    embeddings?: ResolvedService | null
    /** Tokens the embeddings server counted for a query, for the run's usage. */
    onEmbeddingTokens?: (ref: ModelRef, tokens: number) => void
    /** How long a retrieval took (embedding the query, searching, reading the chunks), for the voice turn metrics. */
    onRetrievalMs?: (ms: number) => void
  } = {},
): ConversationTools {
  const runId = run.id
  const embedder = embedderOf(run.embeddings ?? null)
  return {
    async retrieve(documentUuids, query, signal) {
      const started = performance.now()
      const retrieved = await retrieveFromKnowledgeBase(ctx, organizationId, embedder, documentUuids, query, signal)
      run.onRetrievalMs?.(performance.now() - started)
      if (embedder && retrieved.log.embedding_tokens > 0)
        run.onEmbeddingTokens?.(embedder.client.ref, retrieved.log.embedding_tokens)
      ctx.log.info(
        {
          runId,
          results: retrieved.log.results.length,
          unavailable: retrieved.log.unavailable_documents.length,
          embeddingMs: retrieved.log.embedding_ms,
          searchMs: retrieved.log.search_ms,
        },
        'knowledge-base retrieval',
      )
      return retrieved
    },
    byUuid: activeToolsByUuid(ctx, organizationId, definition.nodes.flatMap(nodeToolUuids)),
    async callHttp(tool, config, args, variables, signal) {
      const outcome = await callHttpTool(
        config,
        args,
        variables,
        toolEnvironment(ctx, organizationId),
        signal,
        new Date(ctx.clock.now()),
      )
      ctx.log.info(
        { runId, toolUuid: tool.tool_uuid, ...outcome.request, outcome: outcome.result.status },
        'tool HTTP request',
      )
      return outcome
    },
    async callMcp(tool, config, toolName, args, signal) {
      const outcome = await callMcpTool(config, toolName, args, toolEnvironment(ctx, organizationId), signal)
      ctx.log.info(
        { runId, toolUuid: tool.tool_uuid, ...outcome.request, outcome: outcome.result.status },
        'tool MCP call',
      )
      return outcome
    },
  }
}
