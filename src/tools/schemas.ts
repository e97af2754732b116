import { Type as t, type Static, type TSchema } from '@sinclair/typebox'
import { MAX_TEXT_LENGTH } from '../lib/limits'
import {
  HTTP_METHODS,
  PARAMETER_TYPES,
  TOOL_TYPES,
  type EndCallConfig,
  type HttpApiConfig,
  type HttpMethod,
  type McpConfig,
  type McpDiscoveredTool,
  type ParameterType,
  type PresetParameter,
  type SpokenMessage,
  type ToolCategory,
  type ToolDefinition,
  type ToolParameter,
  type ToolStatus,
  type TransferCallConfig,
  type TransferDestination,
} from '../db/schema/tools'

/**
 * Tools as the API takes and shows them: `{tool_uuid, name, description, category, definition: {type, config}}`, in the
 * reference platform's shapes (its field names, camelCase ones included). Every string has a bound, so an oversized
 * value is a 422 naming its field, not a stored megabyte.
 */

export { TOOL_TYPES, type ToolCategory, type ToolStatus }

const nullable = <T extends TSchema>(schema: T) => t.Optional(t.Union([schema, t.Null()]))

const PARAMETER_NAME = {
  maxLength: 64,
  pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$',
  description: 'A JSON key: letters, digits and _, not starting with a digit',
}
const ParameterType = t.Union(PARAMETER_TYPES.map((type) => t.Literal(type)))
const MessageType = t.Union([t.Literal('none'), t.Literal('custom'), t.Literal('audio')])
const Message = t.String({ maxLength: 2000 })
const RecordingId = t.String({ maxLength: 255 })

export const ToolParameterSchema = t.Object({
  name: t.String(PARAMETER_NAME),
  type: ParameterType,
  description: t.String({ maxLength: 1000, description: 'What the model should put here, and when' }),
  required: t.Optional(t.Boolean({ default: true })),
})

export const PresetParameterSchema = t.Object({
  name: t.String(PARAMETER_NAME),
  type: ParameterType,
  value_template: t.String({
    maxLength: 2000,
    description:
      'A fixed value or a template of run variables, e.g. {{customer_id}} or {{gathered_context.order_number}}. ' +
      'A template that is exactly one placeholder passes the value with its JSON type.',
  }),
  required: t.Optional(
    t.Boolean({ default: true, description: 'An empty value makes the call fail instead of being left out' }),
  ),
})

export const HttpApiConfigSchema = t.Object({
  method: t.Union(HTTP_METHODS.map((method) => t.Literal(method))),
  url: t.String({
    minLength: 1,
    maxLength: 2048,
    description:
      'http(s) URL; {{name}} placeholders in its path and query take arguments and run variables, URL-encoded. ' +
      'The host must be written out.',
  }),
  headers: nullable(
    t.Record(t.String(), t.String({ maxLength: MAX_TEXT_LENGTH }), {
      description: 'Static headers; secrets belong in a credential',
    }),
  ),
  credential_uuid: nullable(
    t.String({ maxLength: 64, description: 'Credential whose authentication header every request carries' }),
  ),
  parameters: nullable(t.Array(ToolParameterSchema, { maxItems: 30, description: 'Arguments the model fills in' })),
  preset_parameters: nullable(
    t.Array(PresetParameterSchema, { maxItems: 30, description: 'Arguments filled from run variables' }),
  ),
  timeout_ms: nullable(t.Integer({ minimum: 100, maximum: 60_000, default: 5000 })),
  body_template: nullable(
    t.Record(t.String(), t.Unknown(), {
      description:
        'JSON body for POST/PUT/PATCH with {{placeholders}}; without it the body is the flat object of arguments',
    }),
  ),
  customMessage: nullable(Message),
  customMessageType: nullable(t.Union([t.Literal('text'), t.Literal('audio')])),
  customMessageRecordingId: nullable(RecordingId),
})

export const EndCallConfigSchema = t.Object({
  messageType: nullable(MessageType),
  customMessage: nullable(Message),
  audioRecordingId: nullable(RecordingId),
  endCallReason: nullable(
    t.Boolean({ default: false, description: 'The model must give a reason, which becomes the disposition' }),
  ),
  endCallReasonDescription: nullable(t.String({ maxLength: 1000 })),
})

export const TransferDestinationSchema = t.Object({
  name: t.String({ minLength: 1, maxLength: 64, description: 'What the model chooses, e.g. "billing"' }),
  destination: t.String({
    minLength: 1,
    maxLength: 255,
    description:
      'Number, extension or SIP URI; a raw dial string (PJSIP/…, Local/…) is dialled only where the ARI configuration sets allow_raw_dial_strings',
  }),
  description: nullable(t.String({ maxLength: 500, description: 'When to choose it' })),
})

export const TransferCallConfigSchema = t.Object({
  destination_source: nullable(t.Union([t.Literal('static'), t.Literal('llm_choice')], { default: 'static' })),
  destination: nullable(
    t.String({
      maxLength: 255,
      description: 'For static: the number, extension or SIP URI, or a template such as {{initial_context.agent_line}}',
    }),
  ),
  destinations: nullable(
    t.Array(TransferDestinationSchema, { maxItems: 20, description: 'For llm_choice: the model picks one by name' }),
  ),
  messageType: nullable(MessageType),
  customMessage: nullable(Message),
  audioRecordingId: nullable(RecordingId),
  timeout: nullable(
    t.Integer({ minimum: 5, maximum: 120, default: 30, description: 'Seconds the destination may ring' }),
  ),
})

export const McpConfigSchema = t.Object({
  transport: nullable(
    t.Union([t.Literal('streamable_http'), t.Literal('sse')], {
      default: 'streamable_http',
      description: 'streamable_http (current servers) or sse (the older HTTP+SSE transport)',
    }),
  ),
  url: t.String({
    minLength: 1,
    maxLength: 2048,
    description: "The server's MCP endpoint, e.g. https://mcp.example.com/mcp",
  }),
  credential_uuid: nullable(
    t.String({
      maxLength: 64,
      description: 'Credential whose authentication header every request to the server carries',
    }),
  ),
  tools_filter: nullable(
    t.Array(t.String({ minLength: 1, maxLength: 128 }), {
      maxItems: 128,
      description: "The server's tools to offer, by name; empty or null offers all of them",
    }),
  ),
  timeout_secs: nullable(
    t.Integer({
      minimum: 1,
      maximum: 120,
      default: 30,
      description: 'Seconds one call (connection included) may take',
    }),
  ),
})

const schemaVersion = t.Optional(t.Integer({ minimum: 1, maximum: 1, default: 1 }))

export const ToolDefinitionSchema = t.Union(
  [
    t.Object({ schema_version: schemaVersion, type: t.Literal('http_api'), config: HttpApiConfigSchema }),
    t.Object({ schema_version: schemaVersion, type: t.Literal('end_call'), config: t.Optional(EndCallConfigSchema) }),
    t.Object({ schema_version: schemaVersion, type: t.Literal('transfer_call'), config: TransferCallConfigSchema }),
    t.Object({ schema_version: schemaVersion, type: t.Literal('calculator'), config: t.Optional(t.Object({})) }),
    t.Object({ schema_version: schemaVersion, type: t.Literal('mcp'), config: McpConfigSchema }),
  ],
  { discriminator: { propertyName: 'type' } },
)

const ToolName = t.String({ minLength: 1, maxLength: 255, description: 'Also gives the function name the model sees' })
const Description = t.String({ maxLength: 4000, description: 'Tells the model when to call it and what it returns' })
const Icon = t.String({ maxLength: 50 })
const IconColor = t.String({ maxLength: 7 })
const Category = t.Union(
  [t.Literal('http_api'), t.Literal('end_call'), t.Literal('transfer_call'), t.Literal('calculator'), t.Literal('mcp')],
  { description: 'Equal to definition.type (taken from it when left out)' },
)
const StatusSchema = t.Union([t.Literal('active'), t.Literal('archived')])

export const CreateToolBody = t.Object({
  name: ToolName,
  description: nullable(Description),
  category: nullable(Category),
  icon: nullable(Icon),
  icon_color: nullable(IconColor),
  definition: ToolDefinitionSchema,
})

export const UpdateToolBody = t.Object({
  name: nullable(ToolName),
  description: nullable(Description),
  icon: nullable(Icon),
  icon_color: nullable(IconColor),
  definition: nullable(ToolDefinitionSchema),
  status: nullable(StatusSchema),
})

export const ToolView = t.Object({
  id: t.Integer(),
  tool_uuid: t.String({ format: 'uuid' }),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  category: Category,
  icon: t.Union([t.String(), t.Null()]),
  icon_color: t.Union([t.String(), t.Null()]),
  status: StatusSchema,
  definition: t.Record(t.String(), t.Unknown()),
  function_name: t.String({
    description: 'The name the model calls it by (a node with two tools of one name gets a suffix on the second)',
  }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const McpRefreshView = t.Object({
  tool_uuid: t.String({ format: 'uuid' }),
  discovered_tools: t.Array(
    t.Object({
      name: t.String(),
      description: t.Union([t.String(), t.Null()]),
      input_schema: t.Record(t.String(), t.Unknown()),
    }),
  ),
  error: t.Union([t.String(), t.Null()], {
    description: 'Why the server could not be listed (the previous list is kept), or which of its tools were left out',
  }),
})

export const ToolArchived = t.Object({ status: t.Literal('archived'), tool_uuid: t.String({ format: 'uuid' }) })

export const ToolListQuery = t.Object({
  status: t.Optional(t.String({ maxLength: 40, description: 'active (default), archived, or both comma-separated' })),
  category: t.Optional(t.String({ maxLength: 40, description: 'Only tools of this type' })),
})

const HOST_PATTERN = '^(\\*\\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\\[[0-9A-Fa-f:.]+\\](:[0-9]{1,5})?$'

export const ToolSettingsBody = t.Object({
  allowed_hosts: t.Union(
    [t.Array(t.String({ minLength: 1, maxLength: 260, pattern: HOST_PATTERN }), { maxItems: 200 }), t.Null()],
    {
      description:
        'Hosts HTTP tools may call: `api.example.com`, `api.example.com:8443`, `*.example.com` (its subdomains), ' +
        '`10.0.0.7`, `[::1]:9000`. Without a port any port matches. null allows any host (the default); [] allows none.',
    },
  ),
})

export const ToolSettingsView = t.Object({
  allowed_hosts: t.Union([t.Array(t.String()), t.Null()]),
  updated_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})

export type ToolDefinitionInput = Static<typeof ToolDefinitionSchema>
export type CreateToolInput = Static<typeof CreateToolBody>
export type UpdateToolInput = Static<typeof UpdateToolBody>
export type ToolViewShape = Static<typeof ToolView>

// Stored definitions (what the API accepted with every default filled in, see definitions.ts) are the db schema's types.
export type {
  EndCallConfig,
  HttpApiConfig,
  HttpMethod,
  McpConfig,
  McpDiscoveredTool,
  ParameterType,
  PresetParameter,
  SpokenMessage,
  ToolDefinition,
  ToolParameter,
  TransferCallConfig,
  TransferDestination,
}

/** The built-in retrieval a node's `document_uuids` give it (src/tools/knowledge.ts); never stored. */
export type KnowledgeBaseDefinition = {
  schema_version: 1
  type: 'knowledge_base'
  config: { document_uuids: string[] }
}

/** A tool as the runtime gets it. */
export type AgentTool = {
  tool_uuid: string
  name: string
  description: string | null
  definition: ToolDefinition | KnowledgeBaseDefinition
}

export const ToolTypesMetadata = t.Object({
  types: t.Array(
    t.Object({
      type: t.String({ description: 'definition.type' }),
      fields: t.Array(
        t.Object({
          name: t.String(),
          type: t.String({ description: 'string, integer, number, boolean, array, object or options' }),
          required: t.Boolean(),
          description: t.Union([t.String(), t.Null()]),
          default: t.Unknown(),
          options: t.Union([t.Array(t.Unknown()), t.Null()], { description: 'The allowed values of an options field' }),
        }),
      ),
    }),
  ),
})
