import type { ToolSpec } from '../models/types'
import { isPlainObject } from '../lib/values'
import type { AgentTool, McpDiscoveredTool, ToolParameter } from './schemas'

/** How a tool looks to the LLM: its function name, description and JSON-schema parameters, and the check of what comes back. */

/** OpenAI-compatible servers accept `^[a-zA-Z0-9_-]{1,64}$`. */
const MAX_NAME_LENGTH = 64

/** The reference's rule: lower-cased, every run of characters outside [a-z0-9] one `_`, no `_` at either end. */
export function toolFunctionName(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, MAX_NAME_LENGTH)
      .replace(/_+$/, '') || 'tool'
  )
}

/** The reference's name for an MCP server's tool: `mcp__{tool slug}__{server's name}`, within the characters allowed. */
export function mcpFunctionName(toolName: string, remoteName: string): string {
  return `mcp__${toolFunctionName(toolName)}__${remoteName.replace(/[^A-Za-z0-9_-]+/g, '_')}`.slice(0, MAX_NAME_LENGTH)
}

type JsonSchema = Record<string, unknown>

function parameterSchema({ type, description }: Pick<ToolParameter, 'type' | 'description'>): JsonSchema {
  if (type === 'object') return { type, description, additionalProperties: true }
  if (type === 'array') return { type, description, items: {} }
  return { type, description }
}

function objectSchema(properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return { type: 'object', properties, required }
}

const DEFAULT_REASON_DESCRIPTION =
  "Why the call ends, in a few words or a code such as 'issue_resolved' or 'customer_requested'"

function parametersOf(tool: AgentTool): JsonSchema {
  const { definition } = tool
  switch (definition.type) {
    case 'http_api': {
      const { parameters } = definition.config
      return objectSchema(
        Object.fromEntries(parameters.map((parameter) => [parameter.name, parameterSchema(parameter)])),
        parameters.filter(({ required }) => required).map(({ name }) => name),
      )
    }
    case 'end_call':
      return definition.config.endCallReason
        ? objectSchema(
            {
              reason: {
                type: 'string',
                description: definition.config.endCallReasonDescription ?? DEFAULT_REASON_DESCRIPTION,
              },
            },
            ['reason'],
          )
        : objectSchema({}, [])
    case 'transfer_call': {
      const { destinations, destination_source: source } = definition.config
      if (source !== 'llm_choice') return objectSchema({}, [])
      const choices = destinations
        .map(({ name, description }) => (description ? `${name}: ${description}` : name))
        .join('; ')
      return objectSchema(
        {
          destination: {
            type: 'string',
            enum: destinations.map(({ name }) => name),
            description: `Where to transfer the call. ${choices}`,
          },
        },
        ['destination'],
      )
    }
    case 'mcp':
      throw new Error('an MCP tool offers one function per server tool: use mcpFunctionSpec')
    case 'calculator':
      return objectSchema(
        {
          expression: {
            type: 'string',
            description:
              'Arithmetic to evaluate: numbers, + - * / % ** and parentheses, and abs, round, min, max, sum, pow, sqrt, floor, ceil. Example: (1200 + 80) * 0.15',
          },
        },
        ['expression'],
      )
    case 'knowledge_base':
      return objectSchema(
        { query: { type: 'string', description: 'What to look up: the question, or its key words' } },
        ['query'],
      )
  }
}

const DEFAULT_DESCRIPTIONS: Record<AgentTool['definition']['type'], string> = {
  http_api: 'Call an external service',
  end_call: 'End the call',
  transfer_call: 'Transfer the caller to a person',
  calculator: 'Evaluate an arithmetic expression exactly',
  mcp: 'A tool of an MCP server',
  knowledge_base: 'Look up facts in the knowledge base',
}

export function toolFunctionSpec(tool: AgentTool, name: string): ToolSpec {
  return {
    name,
    description: tool.description?.trim() || DEFAULT_DESCRIPTIONS[tool.definition.type],
    parameters: parametersOf(tool),
  }
}

/** One function of an MCP tool: the server's description and input schema (an object schema, whatever the server said). */
export function mcpFunctionSpec(tool: AgentTool, remote: McpDiscoveredTool, name: string): ToolSpec {
  const { $schema: _dialect, ...schema } = remote.input_schema
  return {
    name,
    description: remote.description?.trim() || tool.description?.trim() || `${remote.name} (${tool.name})`,
    parameters: { ...schema, type: 'object', properties: isPlainObject(schema.properties) ? schema.properties : {} },
  }
}

const JSON_TYPE_CHECKS: Record<string, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string',
  number: (value) => typeof value === 'number' && Number.isFinite(value),
  integer: Number.isInteger,
  boolean: (value) => typeof value === 'boolean',
  object: isPlainObject,
  array: Array.isArray,
}

/**
 * The arguments of a call as the model sent them (a JSON object text), checked against the function's schema: every
 * required one present, each declared one of its JSON type, an enum value among its choices. The error is for the model.
 */
export function parseArguments(
  spec: ToolSpec,
  raw: string,
): { ok: true; args: Record<string, unknown> } | { ok: false; error: string } {
  let args: unknown
  try {
    args = raw.trim() === '' ? {} : JSON.parse(raw)
  } catch {
    return { ok: false, error: 'The arguments are not valid JSON' }
  }
  if (!isPlainObject(args)) return { ok: false, error: 'The arguments must be a JSON object' }
  // Schemas come from MCP servers too: anything not understood here is left for the tool to judge.
  const properties = (isPlainObject(spec.parameters.properties) ? spec.parameters.properties : {}) as Record<
    string,
    { type?: unknown; enum?: unknown }
  >
  const required = Array.isArray(spec.parameters.required)
    ? (spec.parameters.required.filter((name) => typeof name === 'string') as string[])
    : []
  const missing = required.filter((name) => args[name] === undefined || args[name] === null || args[name] === '')
  if (missing.length > 0)
    return { ok: false, error: `Missing required argument${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}` }
  for (const [name, value] of Object.entries(args)) {
    const property = properties[name]
    if (!isPlainObject(property) || value === null) continue
    const check = typeof property.type === 'string' ? JSON_TYPE_CHECKS[property.type] : undefined
    if (check && !check(value)) return { ok: false, error: `Argument ${name} must be a ${property.type}` }
    if (Array.isArray(property.enum) && !property.enum.includes(value))
      return { ok: false, error: `Argument ${name} must be one of ${property.enum.join(', ')}` }
  }
  return { ok: true, args }
}
