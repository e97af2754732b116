import { Type as t, type Static, type TObject, type TProperties } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { AppContext } from '../../context'
import type { ApiKeyScope, Principal } from '../../auth/keys'
import { createAgent, getAgent, listAgentsJson, publishAgent, updateAgent } from '../../agents/service'
import { CreateWorkflowBody, UpdateWorkflowBody } from '../../agents/schemas'
import { getNodeType, listNodeTypes, SPEC_VERSION } from '../../definition/node-catalog'
import { startRunByApi } from '../../calls/trigger'
import { TriggerCallBody } from '../../calls/schemas'
import { createTextChat, sendTextChatMessage } from '../../runs/text-chat'
import { CreateTextChatBody, TextChatMessageBody } from '../../runs/schemas'
import { invalid, notFound } from '../../lib/errors'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'
import { checkValue, type Loc } from '../../lib/validation'
import { listAgentRuns } from '../../runs/agent-runs'
import { runDetail } from '../../runs/detail'
import { WorkflowListQuery } from '../agents/model'
import { RunListQuery } from '../runs/model'
import { scopeNotAllowed } from '../auth'

/**
 * The tools Ringbase's own MCP server offers: each the same operation as an API route, on the same service function,
 * its arguments checked against the route's own schemas (path ids, query and body, flattened into one object) so a
 * refusal carries the API's 422 items word for word. A key sees the tools its scope may use, as with the routes.
 */

export type McpCaller = { principal: Principal }

type Parts = { path: Record<string, unknown>; query: Record<string, unknown>; body: Record<string, unknown> }

type ServerTool = {
  name: string
  description: string
  scopes: ApiKeyScope[]
  path?: TObject
  query?: TObject
  body?: TObject
  run(ctx: AppContext, caller: McpCaller, parts: Parts): unknown
}

const ADMIN: ApiKeyScope[] = ['admin']
const ANY_KEY: ApiKeyScope[] = ['admin', 'trigger']
/** The routes' path ids without Elysia's text form (`t.Integer` there also takes "7"): MCP arguments are JSON. */
const Id = (description: string) => t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description })
const WorkflowId = t.Object({ workflow_id: Id("The agent's id") })
const RunIds = t.Object({ workflow_id: Id("The agent's id"), run_id: Id("The run's id") })

/** What the route answers 404 to when it finds nothing. */
function found<T>(value: T | null | undefined, notFoundMessage: string): T {
  if (value == null) throw notFound(notFoundMessage)
  return value
}

const TOOLS: ServerTool[] = [
  {
    name: 'list_workflows',
    description: "List the organization's agents (workflows), newest first: id, name, status, created_at.",
    scopes: ADMIN,
    query: WorkflowListQuery,
    run: (ctx, { principal }, { query }) =>
      JSON.parse(listAgentsJson(ctx, principal.organizationId, query.status as string | undefined)),
  },
  {
    name: 'get_workflow',
    description: 'Get an agent with its definition (its draft, else its published version).',
    scopes: ADMIN,
    path: WorkflowId,
    run: (ctx, { principal }, { path }) => getAgent(ctx, principal.organizationId, path.workflow_id as number),
  },
  {
    name: 'create_workflow',
    description:
      'Create an agent from a workflow_definition (nodes and edges; see list_node_types). Its first version is published.',
    scopes: ADMIN,
    body: CreateWorkflowBody,
    run: (ctx, { principal }, { body }) =>
      createAgent(ctx, principal.organizationId, body as Static<typeof CreateWorkflowBody>),
  },
  {
    name: 'update_workflow',
    description:
      'Rename an agent and/or save a new definition or configuration as its draft (publish_workflow makes it live).',
    scopes: ADMIN,
    path: WorkflowId,
    body: UpdateWorkflowBody,
    run: (ctx, { principal }, { path, body }) =>
      updateAgent(ctx, principal.organizationId, path.workflow_id as number, body as Static<typeof UpdateWorkflowBody>),
  },
  {
    name: 'publish_workflow',
    description: "Publish an agent's draft; calls then use it.",
    scopes: ADMIN,
    path: WorkflowId,
    run: (ctx, { principal }, { path }) => publishAgent(ctx, principal.organizationId, path.workflow_id as number),
  },
  {
    name: 'list_node_types',
    description: 'The node types agent definitions are built from, with their properties.',
    scopes: ADMIN,
    run: () => ({ spec_version: SPEC_VERSION, node_types: listNodeTypes() }),
  },
  {
    name: 'get_node_type',
    description: 'One node type by name, with its properties.',
    scopes: ADMIN,
    path: t.Object({ name: t.String({ maxLength: MAX_TOKEN_LENGTH }) }),
    run: (_ctx, _caller, { path }) => found(getNodeType(path.name as string), `Node type '${path.name}' not found`),
  },
  {
    name: 'start_text_chat',
    description:
      'Start a text chat with an agent (its draft, else its published version); the answer has the opening turn and the run id.',
    scopes: ADMIN,
    path: WorkflowId,
    body: CreateTextChatBody,
    run: (ctx, { principal }, { path, body }) =>
      createTextChat(
        ctx,
        principal.organizationId,
        path.workflow_id as number,
        body as Static<typeof CreateTextChatBody>,
      ),
  },
  {
    name: 'send_text_chat_message',
    description: "Send a message in a text chat (run_id from start_text_chat) and get the agent's answer.",
    scopes: ADMIN,
    path: RunIds,
    body: TextChatMessageBody,
    run: (ctx, { principal }, { path, body }) =>
      sendTextChatMessage(
        ctx,
        principal.organizationId,
        path.workflow_id as number,
        path.run_id as number,
        body as Static<typeof TextChatMessageBody>,
      ),
  },
  {
    name: 'list_runs',
    description: "List an agent's runs (calls and chats), filtered and paged.",
    scopes: ANY_KEY,
    path: WorkflowId,
    query: RunListQuery,
    run: (ctx, { principal }, { path, query }) =>
      listAgentRuns(ctx, principal.organizationId, path.workflow_id as number, query),
  },
  {
    name: 'get_run',
    description: 'Get a run with its transcript (logs.transcript), tool calls, context, usage and artifact links.',
    scopes: ANY_KEY,
    path: RunIds,
    run: (ctx, { principal }, { path }) =>
      found(
        runDetail(ctx, principal.organizationId, path.run_id as number, path.workflow_id as number),
        'Workflow run not found',
      ),
  },
  {
    name: 'start_test_call',
    description: "Call a phone number with an agent's draft (else its published version), by its Agent UUID.",
    scopes: ANY_KEY,
    path: t.Object({ workflow_uuid: t.String({ maxLength: MAX_TOKEN_LENGTH }) }),
    body: TriggerCallBody,
    run: (ctx, { principal }, { path, body }) =>
      startRunByApi(
        ctx,
        principal,
        { agentUuid: path.workflow_uuid as string },
        'test',
        body as Static<typeof TriggerCallBody>,
      ),
  },
]

const sections = (tool: ServerTool) =>
  [
    ['path', tool.path],
    ['query', tool.query],
    ['body', tool.body],
  ] as const

const TOOLS_BY_NAME = new Map(TOOLS.map((tool) => [tool.name, tool]))

/** One JSON Schema object of every part's fields (TypeBox schemas are JSON Schema; its own markers are dropped). */
function inputSchema(tool: ServerTool): Record<string, unknown> {
  const properties: TProperties = {}
  const required: string[] = []
  for (const [, schema] of sections(tool)) {
    if (!schema) continue
    Object.assign(properties, schema.properties)
    required.push(...(schema.required ?? []))
  }
  return JSON.parse(JSON.stringify({ type: 'object', properties, required }))
}

export function serverTools(scope: ApiKeyScope) {
  return TOOLS.filter((tool) => tool.scopes.includes(scope)).map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: inputSchema(tool),
  }))
}

/** The arguments split into the route's parts, each checked as the route checks it, defaults filled, unknown fields dropped. */
function routeParts(tool: ServerTool, args: Record<string, unknown>): Parts {
  const parts: Parts = { path: {}, query: {}, body: {} }
  const items = sections(tool).flatMap(([section, schema]) => {
    if (!schema) return []
    const value = Object.fromEntries(Object.entries(args).filter(([name]) => name in schema.properties))
    const loc: Loc = [section]
    const problems = checkValue(schema, value, loc)
    if (problems.length === 0)
      parts[section] = Value.Clean(schema, Value.Default(schema, value)) as Record<string, unknown>
    return problems
  })
  if (items.length > 0) throw invalid(items)
  return parts
}

/** Runs a tool for `caller`; throws the DomainError the route would answer with. */
export async function runServerTool(
  ctx: AppContext,
  caller: McpCaller,
  name: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  const tool = TOOLS_BY_NAME.get(name)
  if (!tool) throw notFound(`Tool '${name}' not found`)
  if (!tool.scopes.includes(caller.principal.scope)) throw scopeNotAllowed(caller.principal.scope)
  return tool.run(ctx, caller, routeParts(tool, args))
}
