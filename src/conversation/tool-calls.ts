import type { AgentDefinition } from '../definition/definition'
import type { ToolCall } from '../models/types'
import { CalculatorError, evaluateArithmetic } from '../tools/calculator'
import { parseArguments } from '../tools/functions'
import type { HttpToolOutcome } from '../tools/http-tool'
import type { McpCallOutcome } from '../tools/mcp-client'
import type { AgentTool, HttpApiConfig, McpConfig, SpokenMessage } from '../tools/schemas'
import { nodeName, nodeToolUuids, type NodeFunction } from './graph'
import type { RetrievalLog } from '../knowledge/retrieval'
import type { ToolCallLog } from './record'

/**
 * What a node's tools do when the model calls them (reference engine §3.7), apart from the engine's own state:
 * http_api asks the `ConversationTools` the driver gave (network, credentials, the organization's rules live there);
 * calculator answers here; end_call and transfer_call say their message and tell the engine to end or hand over.
 * Each call returns the result the model reads, the effect on the conversation and the run's log entry.
 */

/** The organization's tools the definition names, and how to run an http_api one; built by src/runs/tools.ts. */
export type ConversationTools = {
  /** Active tools by tool_uuid; a node's uuid missing here is a warning and is not offered. */
  byUuid: ReadonlyMap<string, AgentTool>
  callHttp(
    tool: AgentTool,
    config: HttpApiConfig,
    args: Record<string, unknown>,
    variables: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<HttpToolOutcome>
  /** Calls `toolName` on the MCP tool's server (drivers without it offer MCP tools that answer an error). */
  callMcp?(
    tool: AgentTool,
    config: McpConfig,
    toolName: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallOutcome>
  /** A node's `retrieve_from_knowledge_base`: its documents searched with the run's embeddings model. */
  retrieve?(
    documentUuids: string[],
    query: string,
    signal: AbortSignal,
  ): Promise<{ result: Record<string, unknown>; log: RetrievalLog }>
}

export type TransferRequest = { destination: string; timeoutSeconds: number }

/** busy, no_answer (rang out, timeout included), rejected (refused by the destination or the network), failed (anything else). */
export type TransferOutcome =
  | { status: 'transferred' }
  | { status: 'failed'; reason: 'busy' | 'no_answer' | 'rejected' | 'failed'; message: string }

/** The channel's way to hand the caller over; channels without one (text chat) are never offered transfer tools. */
export type TransferCall = (request: TransferRequest, signal: AbortSignal) => Promise<TransferOutcome>

export type ToolEffect =
  | { kind: 'none' }
  /** End gracefully once what was said has been heard; `disposition` is the model's reason, if the tool asks for one. */
  | { kind: 'end_call'; disposition: string | null }
  /** The caller is with the destination: the conversation is over. */
  | { kind: 'transferred'; destination: string }

export type ToolCallHost = {
  tools?: ConversationTools
  transferCall?: TransferCall
  /** Says a tool's message: text as agent speech kind 'tool_message', or a recording. */
  say(message: { text: string } | { recordingId: string }): void
  render(text: string): string
  /** Run variables, extracted values and `gathered_context`, for http_api templates. */
  variables(): Record<string, unknown>
  now(): number
  signal: AbortSignal
}

export type ToolFunction = Extract<NodeFunction, { kind: 'tool' }>

export type ToolCallOutcome = { result: Record<string, unknown>; effect: ToolEffect; log: ToolCallLog }

/** Tools of nodes that are missing (archived, deleted, another organization's), that this channel cannot run, or MCP tools with nothing listed. */
export function toolWarnings(
  definition: AgentDefinition,
  tools: ReadonlyMap<string, AgentTool>,
  canTransfer: boolean,
): string[] {
  return definition.nodes.flatMap((node) =>
    nodeToolUuids(node).flatMap((uuid) => {
      const tool = tools.get(uuid)
      const where = `Node '${nodeName(node)}' (${node.id})`
      if (!tool) return [`${where}: tool ${uuid} is not an active tool of this organization; not offered`]
      if (tool.definition.type === 'transfer_call' && !canTransfer)
        return [`${where}: tool '${tool.name}' transfers calls, which this channel cannot do; not offered`]
      if (tool.definition.type === 'mcp' && tool.definition.config.discovered_tools.length === 0) {
        const why = tool.definition.config.discovery_error ?? 'it offers none'
        return [
          `${where}: MCP tool '${tool.name}' has no tools listed from its server (${why}); refresh it once the server answers`,
        ]
      }
      return []
    }),
  )
}

/** The tools a channel can run: transfer tools only where calls can be transferred. */
export function offeredTools(
  tools: ReadonlyMap<string, AgentTool>,
  canTransfer: boolean,
): ReadonlyMap<string, AgentTool> {
  return canTransfer ? tools : new Map([...tools].filter(([, tool]) => tool.definition.type !== 'transfer_call'))
}

function sayMessage(host: ToolCallHost, { messageType, customMessage, audioRecordingId }: SpokenMessage) {
  const text = messageType === 'custom' && customMessage ? host.render(customMessage).trim() : ''
  if (text) host.say({ text })
  else if (messageType === 'audio' && audioRecordingId) host.say({ recordingId: audioRecordingId })
}

const error = (message: string) => ({ status: 'error', error: message })

type Handled = {
  result: Record<string, unknown>
  effect?: ToolEffect
  http?: ToolCallLog['http']
  mcp?: ToolCallLog['mcp']
  knowledge?: RetrievalLog
}

async function handle(fn: ToolFunction, args: Record<string, unknown>, host: ToolCallHost): Promise<Handled> {
  const { definition } = fn.tool
  switch (definition.type) {
    case 'calculator': {
      const expression = String(args.expression)
      try {
        return { result: { status: 'success', expression, result: evaluateArithmetic(expression) } }
      } catch (failure) {
        if (failure instanceof CalculatorError) return { result: error(failure.message) }
        throw failure
      }
    }
    case 'http_api': {
      const { config } = definition
      const messageType = config.customMessageType === 'text' ? 'custom' : (config.customMessageType ?? 'none')
      sayMessage(host, {
        messageType,
        customMessage: config.customMessage,
        audioRecordingId: config.customMessageRecordingId,
      })
      if (!host.tools) return { result: error('HTTP tools are not available here') }
      const { result, request } = await host.tools.callHttp(fn.tool, config, args, host.variables(), host.signal)
      return { result, http: request }
    }
    case 'mcp': {
      if (!host.tools?.callMcp || fn.mcpTool === undefined) return { result: error('MCP tools are not available here') }
      const { result, request } = await host.tools.callMcp(fn.tool, definition.config, fn.mcpTool, args, host.signal)
      return { result, mcp: request }
    }
    case 'knowledge_base': {
      if (!host.tools?.retrieve)
        return { result: { ...error('The knowledge base is not available here'), chunks: [], total_results: 0 } }
      const { result, log } = await host.tools.retrieve(
        definition.config.document_uuids,
        String(args.query),
        host.signal,
      )
      return { result, knowledge: log }
    }
    case 'end_call': {
      sayMessage(host, definition.config)
      const reason = typeof args.reason === 'string' && args.reason.trim() !== '' ? args.reason.trim() : null
      return {
        result: { status: 'success', message: 'The call is ending' },
        effect: { kind: 'end_call', disposition: definition.config.endCallReason ? reason : null },
      }
    }
    case 'transfer_call': {
      const { config } = definition
      const destination =
        config.destination_source === 'llm_choice'
          ? (config.destinations.find(({ name }) => name === args.destination)?.destination ?? '')
          : host.render(config.destination ?? '').trim()
      if (!host.transferCall)
        return {
          result: {
            status: 'transfer_failed',
            reason: 'failed',
            message: 'Calls cannot be transferred on this channel',
          },
        }
      if (!destination)
        return {
          result: {
            status: 'transfer_failed',
            reason: 'failed',
            message: 'No destination to transfer to in this call',
          },
        }
      sayMessage(host, config)
      const outcome = await host.transferCall({ destination, timeoutSeconds: config.timeout }, host.signal)
      if (outcome.status === 'transferred')
        return { result: { status: 'transfer_success' }, effect: { kind: 'transferred', destination } }
      return { result: { status: 'transfer_failed', reason: outcome.reason, message: outcome.message } }
    }
  }
}

const FAILED_STATUSES = new Set(['error', 'transfer_failed'])

export async function runToolCall(
  fn: ToolFunction,
  call: ToolCall,
  host: ToolCallHost,
  nodeId: string,
): Promise<ToolCallOutcome> {
  const startedAt = host.now()
  const parsed = parseArguments(fn.spec, call.arguments)
  const handled: Handled = parsed.ok ? await handle(fn, parsed.args, host) : { result: error(parsed.error) }
  const log: ToolCallLog = {
    timestamp: new Date(startedAt).toISOString(),
    node_id: nodeId,
    function_name: fn.spec.name,
    tool_uuid: fn.tool.tool_uuid,
    type: fn.tool.definition.type,
    status: FAILED_STATUSES.has(String(handled.result.status)) || handled.knowledge?.error ? 'error' : 'success',
    duration_ms: host.now() - startedAt,
    ...(handled.http ? { http: handled.http } : {}),
    ...(handled.mcp ? { mcp: handled.mcp } : {}),
    ...(handled.knowledge ? { knowledge_base: handled.knowledge } : {}),
  }
  return { result: handled.result, effect: handled.effect ?? { kind: 'none' }, log }
}
