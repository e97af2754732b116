import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { archiveTool, createTool, getTool, listTools, updateTool } from '../../tools/service'
import { refreshMcpTool, withDiscoveredTools } from '../../tools/mcp'
import { getToolSettings, putToolSettings } from '../../egress/allowed-hosts'
import { toolTypesMetadata } from '../../tools/metadata'
import {
  CreateToolBody,
  McpRefreshView,
  ToolArchived,
  ToolListQuery,
  ToolSettingsBody,
  ToolSettingsView,
  ToolTypesMetadata,
  ToolUuidParam,
  ToolView,
  UpdateToolBody,
} from './model'

const tags = ['Tools']
const toolErrors = { 404: ErrorDetail, ...authErrors }

export const toolRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1' })
    .use(auth(ctx))
    .get('/tools/metadata', () => toolTypesMetadata(), {
      response: { 200: ToolTypesMetadata, ...authErrors },
      detail: { tags, summary: "List the tool types and the fields of each one's definition.config" },
    })
    .get('/tools/', ({ principal, query }) => listTools(ctx, principal.organizationId, query), {
      query: ToolListQuery,
      response: { 200: t.Array(ToolView), ...authErrors },
      detail: { tags, summary: "List the organization's tools (active ones unless `status` says otherwise)" },
    })
    .post(
      '/tools/',
      ({ principal, body }) =>
        withDiscoveredTools(ctx, principal.organizationId, createTool(ctx, principal.organizationId, body)),
      {
        body: CreateToolBody,
        response: { 200: ToolView, ...authErrors },
        detail: {
          tags,
          summary:
            'Create a tool: an HTTP request, ending or transferring the call, a calculator, or an MCP server (whose tools are listed)',
        },
      },
    )
    .get('/tools/:tool_uuid', ({ principal, params }) => getTool(ctx, principal.organizationId, params.tool_uuid), {
      params: ToolUuidParam,
      response: { 200: ToolView, ...toolErrors },
      detail: { tags, summary: 'Get a tool (archived ones too)' },
    })
    .put(
      '/tools/:tool_uuid',
      ({ principal, params, body }) =>
        withDiscoveredTools(
          ctx,
          principal.organizationId,
          updateTool(ctx, principal.organizationId, params.tool_uuid, body),
        ),
      {
        params: ToolUuidParam,
        body: UpdateToolBody,
        response: { 200: ToolView, ...toolErrors },
        detail: { tags, summary: 'Update a tool partially; `status: active` restores an archived one' },
      },
    )
    .delete(
      '/tools/:tool_uuid',
      ({ principal, params }) => archiveTool(ctx, principal.organizationId, params.tool_uuid),
      {
        params: ToolUuidParam,
        response: { 200: ToolArchived, ...toolErrors },
        detail: { tags, summary: 'Archive a tool: agents can no longer be saved or published naming it' },
      },
    )
    .post(
      '/tools/:tool_uuid/mcp/refresh',
      ({ principal, params }) => refreshMcpTool(ctx, principal.organizationId, params.tool_uuid),
      {
        params: ToolUuidParam,
        response: { 200: McpRefreshView, 400: ErrorDetail, ...toolErrors },
        detail: {
          tags,
          summary:
            "List an MCP tool's server again and keep what it offers (an unreachable server is an `error`; the last list is kept)",
        },
      },
    )
    .get('/organizations/tool-settings', ({ principal }) => getToolSettings(ctx, principal.organizationId), {
      response: { 200: ToolSettingsView, ...authErrors },
      detail: { tags, summary: "The hosts the organization's HTTP tools, webhook nodes and pre-call fetch may call" },
    })
    .put(
      '/organizations/tool-settings',
      ({ principal, body }) => putToolSettings(ctx, principal.organizationId, body),
      {
        body: ToolSettingsBody,
        response: { 200: ToolSettingsView, ...authErrors },
        detail: {
          tags,
          summary:
            "Set the hosts the organization's HTTP tools, webhook nodes and pre-call fetch may call (null: any host)",
        },
      },
    )
