import type { AgentDefinition, AgentEdge, AgentNode } from '../definition/definition'
import type { ToolSpec } from '../models/types'
import { mcpFunctionName, mcpFunctionSpec, toolFunctionName, toolFunctionSpec } from '../tools/functions'
import { isPlainObject } from '../lib/values'
import type { AgentTool, McpDiscoveredTool } from '../tools/schemas'
import { knowledgeBaseTool } from '../tools/knowledge'

/**
 * The parts of a published definition the runtime walks: call nodes by id, their outgoing edges, the global prompt,
 * and the functions each node offers the LLM.
 */

export type ConversationGraph = {
  start: AgentNode
  nodes: Map<string, AgentNode>
  outgoing: Map<string, AgentEdge[]>
  globalPrompt: string | null
}

const CALL_NODE_TYPES = new Set(['startCall', 'agentNode', 'endCall'])

/** Throws when the definition has no Start node (a published definition always has one). */
export function buildGraph(definition: AgentDefinition): ConversationGraph {
  const nodes = new Map(
    definition.nodes.filter((node) => CALL_NODE_TYPES.has(node.type)).map((node) => [node.id, node]),
  )
  const start = definition.nodes.find((node) => node.type === 'startCall')
  if (!start) throw new Error('The agent definition has no Start node')
  const outgoing = new Map<string, AgentEdge[]>()
  for (const edge of definition.edges) {
    if (!nodes.has(edge.source) || !nodes.has(edge.target)) continue
    outgoing.set(edge.source, [...(outgoing.get(edge.source) ?? []), edge])
  }
  const globalNode = definition.nodes.find((node) => node.type === 'globalNode')
  const globalPrompt =
    typeof globalNode?.data.prompt === 'string' && globalNode.data.prompt.trim() !== '' ? globalNode.data.prompt : null
  return { start, nodes, outgoing, globalPrompt }
}

export const nodeName = (node: AgentNode): string =>
  typeof node.data.name === 'string' && node.data.name !== '' ? node.data.name : node.id

export const nodeText = (node: AgentNode, field: string): string =>
  typeof node.data[field] === 'string' ? (node.data[field] as string) : ''

export const nodeFlag = (node: AgentNode, field: string, fallback: boolean): boolean =>
  typeof node.data[field] === 'boolean' ? (node.data[field] as boolean) : fallback

/**
 * A function offered to the LLM while in a node: a graph transition, or one of the node's tools (HTTP request, end or
 * transfer the call, calculator). All are named through `uniqueFunctionName`, transitions first, so edge and tool
 * names never collide.
 */
export type NodeFunction =
  | { kind: 'transition'; spec: ToolSpec; edge: AgentEdge }
  /** `mcpTool`: for an MCP tool, the server's name of the tool this function calls. */
  | { kind: 'tool'; spec: ToolSpec; tool: AgentTool; mcpTool?: string }

const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false }

/** OpenAI-compatible servers accept `^[a-zA-Z0-9_-]{1,64}$`; ours are lower-case snake_case within that. */
const MAX_FUNCTION_NAME_LENGTH = 64

/** A label as a function name: lower-cased, runs of anything but [a-z0-9] as one `_`, unique among `taken`. */
export function uniqueFunctionName(label: string, taken: Set<string>): string {
  return claimFunctionName(
    label
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, MAX_FUNCTION_NAME_LENGTH) || 'transition',
    taken,
  )
}

/** `base`, or with a suffix `_2`, `_3`, … when taken; added to `taken`. */
function claimFunctionName(base: string, taken: Set<string>): string {
  let name = base
  for (let copy = 2; taken.has(name); copy++) {
    const suffix = `_${copy}`
    name = base.slice(0, MAX_FUNCTION_NAME_LENGTH - suffix.length) + suffix
  }
  taken.add(name)
  return name
}

/** The node's `tool_uuids`, without repeats. */
export function nodeToolUuids(node: AgentNode): string[] {
  const value = node.data.tool_uuids
  return Array.isArray(value) ? [...new Set(value.filter((uuid): uuid is string => typeof uuid === 'string'))] : []
}

/**
 * The functions of a node: one per outgoing edge, described by the edge's condition, then one per tool of the node
 * found in `tools`, then `retrieve_from_knowledge_base` when it names documents. An End node has none.
 */
export function nodeFunctions(
  graph: ConversationGraph,
  node: AgentNode,
  tools: ReadonlyMap<string, AgentTool> = new Map(),
): NodeFunction[] {
  if (node.type === 'endCall') return []
  const taken = new Set<string>()
  const transitions = (graph.outgoing.get(node.id) ?? []).map(
    (edge): NodeFunction => ({
      kind: 'transition',
      edge,
      spec: {
        name: uniqueFunctionName(edge.data.label ?? '', taken),
        description: edge.data.condition ?? '',
        parameters: NO_PARAMETERS,
      },
    }),
  )
  const toolFunctions = nodeToolUuids(node).flatMap((uuid): NodeFunction[] => {
    const tool = tools.get(uuid)
    if (tool?.definition.type === 'mcp') return mcpFunctions(node, tool, tool.definition.config.discovered_tools, taken)
    return tool
      ? [{ kind: 'tool', tool, spec: toolFunctionSpec(tool, uniqueFunctionName(toolFunctionName(tool.name), taken)) }]
      : []
  })
  const knowledge = knowledgeBaseTool(node)
  const knowledgeFunction: NodeFunction[] = knowledge
    ? [{ kind: 'tool', tool: knowledge, spec: toolFunctionSpec(knowledge, uniqueFunctionName(knowledge.name, taken)) }]
    : []
  return [...transitions, ...toolFunctions, ...knowledgeFunction]
}

/**
 * An MCP tool's functions in a node: one per tool its server offers, or only those the node's
 * `mcp_tool_filters: {tool_uuid: [names]}` lists (the reference's field: with it, a tool it leaves out offers none).
 */
function mcpFunctions(
  node: AgentNode,
  tool: AgentTool,
  offered: McpDiscoveredTool[],
  taken: Set<string>,
): NodeFunction[] {
  const filters = node.data.mcp_tool_filters
  const chosen = isPlainObject(filters)
    ? Array.isArray(filters[tool.tool_uuid])
      ? (filters[tool.tool_uuid] as unknown[])
      : []
    : null
  return offered
    .filter(({ name }) => chosen === null || chosen.includes(name))
    .map((remote) => ({
      kind: 'tool',
      tool,
      mcpTool: remote.name,
      spec: mcpFunctionSpec(tool, remote, claimFunctionName(mcpFunctionName(tool.name, remote.name), taken)),
    }))
}
