import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const TOOL_TYPES = ['http_api', 'end_call', 'transfer_call', 'calculator', 'mcp'] as const
export type ToolCategory = (typeof TOOL_TYPES)[number]
export type ToolStatus = 'active' | 'archived'

// Stored definitions: what the API accepted with every default filled in (src/tools/definitions.ts).

export const PARAMETER_TYPES = ['string', 'number', 'boolean', 'object', 'array'] as const
export type ParameterType = (typeof PARAMETER_TYPES)[number]
export type ToolParameter = { name: string; type: ParameterType; description: string; required: boolean }
export type PresetParameter = { name: string; type: ParameterType; value_template: string; required: boolean }
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
export type HttpMethod = (typeof HTTP_METHODS)[number]
export type SpokenMessage = {
  messageType: 'none' | 'custom' | 'audio'
  customMessage: string | null
  audioRecordingId: string | null
}

export type HttpApiConfig = {
  method: HttpMethod
  url: string
  headers: Record<string, string>
  credential_uuid: string | null
  parameters: ToolParameter[]
  preset_parameters: PresetParameter[]
  timeout_ms: number
  body_template: Record<string, unknown> | null
  customMessage: string | null
  customMessageType: 'text' | 'audio' | null
  customMessageRecordingId: string | null
}

export type EndCallConfig = SpokenMessage & { endCallReason: boolean; endCallReasonDescription: string | null }

export type TransferDestination = { name: string; destination: string; description: string | null }

export type TransferCallConfig = SpokenMessage & {
  destination_source: 'static' | 'llm_choice'
  destination: string | null
  destinations: TransferDestination[]
  timeout: number
}

export const MCP_TRANSPORTS = ['streamable_http', 'sse'] as const

/** A tool the server listed (`tools/list`), as offered to the model. */
export type McpDiscoveredTool = { name: string; description: string | null; input_schema: Record<string, unknown> }

export type McpConfig = {
  transport: (typeof MCP_TRANSPORTS)[number]
  url: string
  credential_uuid: string | null
  tools_filter: string[]
  timeout_secs: number
  /** Server-managed: what the last successful listing found (kept when a later one fails). */
  discovered_tools: McpDiscoveredTool[]
  discovered_at: string | null
  /** Why the last listing failed or left tools out; null when it went through whole. */
  discovery_error: string | null
}

export type ToolDefinition =
  | { schema_version: 1; type: 'http_api'; config: HttpApiConfig }
  | { schema_version: 1; type: 'end_call'; config: EndCallConfig }
  | { schema_version: 1; type: 'transfer_call'; config: TransferCallConfig }
  | { schema_version: 1; type: 'calculator'; config: Record<string, never> }
  | { schema_version: 1; type: 'mcp'; config: McpConfig }

export const tools = sqliteTable(
  'tools',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    toolUuid: text('tool_uuid').notNull().unique(),
    name: text('name').notNull(),
    description: text('description'),
    category: text('category').$type<ToolCategory>().notNull(),
    icon: text('icon'),
    iconColor: text('icon_color'),
    status: text('status').$type<ToolStatus>().notNull().default('active'),
    definition: text('definition', { mode: 'json' }).$type<ToolDefinition>().notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [index('tools_org').on(table.organizationId, table.status)],
)

export const toolSettings = sqliteTable('tool_settings', {
  organizationId: integer('organization_id').primaryKey(),
  allowedHosts: text('allowed_hosts', { mode: 'json' }).$type<string[]>(),
  updatedAt: text('updated_at').notNull(),
})

export type ToolRow = typeof tools.$inferSelect
