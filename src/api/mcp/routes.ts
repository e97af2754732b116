import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { DomainError } from '../../lib/errors'
import { isPlainObject } from '../../lib/values'
import { auth } from '../auth'
import { httpStatus } from '../errors'
import { authErrors, ErrorDetail } from '../schemas'
import { runServerTool, serverTools, type McpCaller } from './tools'

/**
 * Ringbase as an MCP server (Streamable HTTP, stateless, JSON answers) at /api/v1/mcp, for MCP clients (Claude
 * Desktop, an agent framework) to build agents and try them. Every request, `initialize` and `tools/list` included,
 * needs an API key (`X-API-Key` or `Authorization: Bearer`), and the body is read under the API's own size limit. Each
 * request gets its own SDK server, bound to the caller's organization and key scope. Stateless: no session to end, no
 * stream to open, so only POST is served (a GET or DELETE is a 405, errors.ts: clients read it as "not offered").
 */

const PATH = '/api/v1/mcp'
const tags = ['MCP']

const INSTRUCTIONS =
  'Ringbase runs voice agents ("workflows"). Build one with create_workflow from a workflow_definition of ' +
  'nodes (see list_node_types: a startCall node, agentNode steps, an endCall node) and edges whose label and condition tell ' +
  'the model when to move on; update_workflow saves a draft and publish_workflow makes it live. Try it with ' +
  'start_text_chat and send_text_chat_message, read what happened with list_runs and get_run, and call a phone with ' +
  "start_test_call. A refused input answers with the API's own error: {status, detail}."

function toolResult(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }] }
}

/** The SDK, loaded on the first MCP request rather than at every start. */
const loadSdk = async () => {
  const [{ Server }, { WebStandardStreamableHTTPServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema }] =
    await Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ])
  return { Server, WebStandardStreamableHTTPServerTransport, CallToolRequestSchema, ListToolsRequestSchema }
}

type Sdk = Awaited<ReturnType<typeof loadSdk>>

function mcpServer(
  ctx: AppContext,
  caller: McpCaller,
  { Server, CallToolRequestSchema, ListToolsRequestSchema }: Sdk,
): Server {
  const server = new Server(
    { name: 'ringbase', version: ctx.version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  )
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: serverTools(caller.principal.scope) }))
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    const logged = { orgId: caller.principal.organizationId, tool: params.name.slice(0, 100) }
    try {
      const result = toolResult(await runServerTool(ctx, caller, params.name, params.arguments ?? {}))
      ctx.log.info({ ...logged, status: 200 }, 'mcp tool call')
      return result
    } catch (error) {
      if (!(error instanceof DomainError)) throw error
      const status = httpStatus(error)
      if (status >= 500) ctx.log.error({ err: error.cause ?? error, ...logged }, error.message)
      else ctx.log.info({ ...logged, status }, 'mcp tool call')
      return { ...toolResult({ status, detail: error.detail }), isError: true }
    }
  })
  return server
}

/** The transport's refusals (wrong Accept, not JSON-RPC, …) carry `detail` too, as every API error does. */
async function withDetail(response: Response): Promise<Response> {
  if (response.status < 400) return response
  const text = await response.text()
  let body: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (isPlainObject(parsed)) body = parsed
  } catch {
    /* not JSON: described by its status alone */
  }
  const message =
    isPlainObject(body.error) && typeof body.error.message === 'string'
      ? body.error.message
      : response.statusText || 'MCP request refused'
  const headers = new Headers(response.headers)
  headers.set('content-type', 'application/json')
  return new Response(JSON.stringify({ detail: message, ...body }), { status: response.status, headers })
}

export const mcpRoutes = (ctx: AppContext) =>
  new Elysia().use(auth(ctx, ['admin', 'trigger'], { bearer: true })).post(
    PATH,
    async ({ principal, request, body }) => {
      const caller: McpCaller = { principal }
      const sdk = await loadSdk()
      const server = mcpServer(ctx, caller, sdk)
      const transport = new sdk.WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      })
      await server.connect(transport)
      try {
        return await withDetail(await transport.handleRequest(request, { parsedBody: body }))
      } finally {
        await server.close()
      }
    },
    {
      body: t.Unknown({
        description: 'A JSON-RPC message of the Model Context Protocol (initialize, tools/list, tools/call, …)',
      }),
      response: {
        200: t.Unknown({ description: 'The JSON-RPC answer' }),
        202: t.Unknown({ description: 'A notification was taken' }),
        400: ErrorDetail,
        406: ErrorDetail,
        415: ErrorDetail,
        ...authErrors,
      },
      detail: {
        tags,
        summary:
          'Ringbase as an MCP server (Streamable HTTP, stateless): tools to build agents, chat with them and read their runs',
      },
    },
  )
