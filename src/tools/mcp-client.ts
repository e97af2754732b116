import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { OutboundFailure, policedFetch, type OutboundPolicy } from '../egress/outbound'
import { isPlainObject } from '../lib/values'
import type { McpConfig, McpDiscoveredTool } from './schemas'

/**
 * Talks to an organization's MCP server with the official SDK: each listing and each call is one short session
 * (connect, one request, close) whose every request goes through the organization's outbound rules (`policedFetch`:
 * allow-list, never this appliance, checked addresses), carries the tool's credential, reads at most
 * MAX_ANSWER_BYTES of any answer and ends within the tool's timeout. Sessions are not kept between calls: nothing to
 * open before a call starts, nothing left open when it ends, and a server that fails costs only the call that used it.
 */

export type McpEnvironment = OutboundPolicy & {
  /** The headers a credential adds; throws when it cannot be used (gone, undecryptable). */
  credentialHeaders(credentialUuid: string): Promise<Record<string, string>>
  clientVersion: string
}

/** Any one answer of a server (a listing with all its schemas, a call's result) is read up to this size. */
export const MAX_ANSWER_BYTES = 1024 * 1024
/** What the model reads of a call's result. */
export const MAX_RESULT_CHARS = 16 * 1024
/** Tools offered from one server (OpenAI-compatible APIs take 128 functions in a request). */
export const MAX_OFFERED_TOOLS = 64
/** A listing beyond this many tools is refused rather than sifted. */
const MAX_LISTED_TOOLS = 1000
const MAX_LIST_PAGES = 10
const MAX_SCHEMA_BYTES = 16 * 1024
const MAX_DESCRIPTION_LENGTH = 4000
const MAX_TOOL_NAME_LENGTH = 128
const MAX_ERROR_LENGTH = 300

/** Why a session failed, in words for an admin or the model. */
export class McpFailure extends Error {}

export type McpListing = { tools: McpDiscoveredTool[]; problems: string[] }

export type McpCallLog = { host: string; tool: string; duration_ms: number }

export type McpCallOutcome = { result: Record<string, unknown>; request?: McpCallLog }

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error; current instanceof Error && chain.length < 5; current = current.cause) chain.push(current)
  return chain
}

/**
 * The SDK, loaded on first use: it is a good part of what the server would otherwise load at start, and most
 * installations never call an MCP server.
 */
const loadSdk = async () => {
  const [{ Client }, { SSEClientTransport }, { StreamableHTTPClientTransport }, { McpError }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  return { Client, SSEClientTransport, StreamableHTTPClientTransport, McpError }
}

function describe(
  error: unknown,
  timeoutSecs: number,
  deadline: AbortSignal,
  caller: AbortSignal,
  sdk: Awaited<ReturnType<typeof loadSdk>>,
): string {
  if (error instanceof McpFailure) return error.message
  const outbound = causeChain(error).find((link) => link instanceof OutboundFailure)
  if (outbound) return (outbound as Error).message
  if (caller.aborted) return 'The call ended before the server answered'
  if (deadline.aborted) return `The MCP server did not answer within ${timeoutSecs} s`
  const message = error instanceof Error ? error.message : String(error)
  const prefix =
    error instanceof sdk.McpError ? 'The MCP server answered with an error' : 'The MCP server could not be used'
  return `${prefix}: ${message.slice(0, MAX_ERROR_LENGTH)}`
}

async function withSession<T>(
  config: McpConfig,
  env: McpEnvironment,
  signal: AbortSignal,
  use: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<T> {
  const timeout = config.timeout_secs * 1000
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeout)])
  const sdk = await loadSdk()
  const client = new sdk.Client({ name: 'ringbase', version: env.clientVersion })
  try {
    let headers: Record<string, string> = {}
    if (config.credential_uuid) {
      try {
        headers = await env.credentialHeaders(config.credential_uuid)
      } catch {
        throw new McpFailure('The credential of this MCP tool cannot be used')
      }
    }
    const url = new URL(config.url)
    const fetch = policedFetch(env, MAX_ANSWER_BYTES)
    const transport =
      config.transport === 'sse'
        ? new sdk.SSEClientTransport(url, { fetch, requestInit: { headers } })
        : new sdk.StreamableHTTPClientTransport(url, {
            fetch,
            requestInit: { headers },
            reconnectionOptions: {
              maxRetries: 0,
              initialReconnectionDelay: 1000,
              maxReconnectionDelay: 1000,
              reconnectionDelayGrowFactor: 1,
            },
          })
    const options = { signal: deadline, timeout }
    await client.connect(transport, options)
    return await use(client, options)
  } catch (error) {
    throw new McpFailure(describe(error, config.timeout_secs, deadline, signal, sdk))
  } finally {
    await client.close().catch(() => undefined)
  }
}

const byteLength = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length

/** The listed tools to offer: those `tools_filter` names (all without one), each checked and bounded. */
function selectTools(listed: Tool[], filter: string[]): McpListing {
  const problems: string[] = []
  const wanted = filter.length > 0 ? new Set(filter) : null
  const missing = filter.filter((name) => !listed.some((tool) => tool.name === name))
  if (missing.length > 0)
    problems.push(
      `tools_filter names tools the server does not offer: ${missing.join(', ').slice(0, MAX_ERROR_LENGTH)}`,
    )
  const tools: McpDiscoveredTool[] = []
  for (const tool of listed) {
    if (wanted && !wanted.has(tool.name)) continue
    if (tool.name.length > MAX_TOOL_NAME_LENGTH) {
      problems.push(`a tool whose name is longer than ${MAX_TOOL_NAME_LENGTH} characters is left out`)
    } else if (byteLength(tool.inputSchema) > MAX_SCHEMA_BYTES) {
      problems.push(`tool '${tool.name}' is left out: its input schema is larger than ${MAX_SCHEMA_BYTES} bytes`)
    } else if (tools.length === MAX_OFFERED_TOOLS) {
      problems.push(`only the first ${MAX_OFFERED_TOOLS} tools are offered: name the ones to offer in tools_filter`)
      break
    } else {
      const description = tool.description?.slice(0, MAX_DESCRIPTION_LENGTH) ?? null
      tools.push({ name: tool.name, description, input_schema: tool.inputSchema as Record<string, unknown> })
    }
  }
  return { tools, problems }
}

/** The server's tools (`tools/list`, every page), those the config offers; throws McpFailure. */
export function listMcpTools(config: McpConfig, env: McpEnvironment, signal: AbortSignal): Promise<McpListing> {
  return withSession(config, env, signal, async (client, options) => {
    const listed: Tool[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await client.listTools(cursor === undefined ? undefined : { cursor }, options)
      listed.push(...answer.tools)
      if (listed.length > MAX_LISTED_TOOLS)
        throw new McpFailure(`The MCP server lists more than ${MAX_LISTED_TOOLS} tools`)
      cursor = answer.nextCursor
      if (cursor === undefined) break
    }
    return selectTools(listed, config.tools_filter)
  })
}

/** One content part as text: text as it is, anything else named (the model cannot see images or audio). */
function partText(part: CallToolResult['content'][number]): string {
  switch (part.type) {
    case 'text':
      return part.text
    case 'image':
    case 'audio':
      return `[${part.type} ${part.mimeType}]`
    case 'resource':
      return 'text' in part.resource && typeof part.resource.text === 'string'
        ? part.resource.text
        : `[resource ${part.resource.uri}]`
    case 'resource_link':
      return `[resource ${part.uri}${part.name ? ` (${part.name})` : ''}]`
    default:
      return ''
  }
}

/** A result as the model reads it: its text (bounded), its structured content when that fits, an error when the tool says so. */
function modelResult(answer: CallToolResult): Record<string, unknown> {
  const text = (Array.isArray(answer.content) ? answer.content : [])
    .map(partText)
    .filter((part) => part !== '')
    .join('\n')
  const truncated = text.length > MAX_RESULT_CHARS
  const bounded = truncated ? text.slice(0, MAX_RESULT_CHARS) : text
  if (answer.isError)
    return { status: 'error', error: bounded || 'The tool reported an error', ...(truncated ? { truncated } : {}) }
  const structured =
    isPlainObject(answer.structuredContent) && byteLength(answer.structuredContent) <= MAX_RESULT_CHARS
      ? answer.structuredContent
      : undefined
  return {
    status: 'success',
    content: bounded,
    ...(structured ? { data: structured } : {}),
    ...(truncated ? { truncated } : {}),
  }
}

/** Calls `toolName` (`tools/call`); every failure becomes an error result for the model. */
export async function callMcpTool(
  config: McpConfig,
  toolName: string,
  args: Record<string, unknown>,
  env: McpEnvironment,
  signal: AbortSignal,
): Promise<McpCallOutcome> {
  const started = performance.now()
  const request = (): McpCallLog => ({
    host: new URL(config.url).host,
    tool: toolName,
    duration_ms: Math.round(performance.now() - started),
  })
  try {
    const answer = await withSession(config, env, signal, (client, options) =>
      client.callTool({ name: toolName, arguments: args }, undefined, options),
    )
    return { result: modelResult(answer as CallToolResult), request: request() }
  } catch (error) {
    return {
      result: {
        status: 'error',
        error: error instanceof McpFailure ? error.message : 'The MCP server could not be used',
      },
      request: request(),
    }
  }
}
