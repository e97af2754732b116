import { t } from 'elysia'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  CreateToolBody,
  UpdateToolBody,
  ToolView,
  ToolArchived,
  McpRefreshView,
  ToolListQuery,
  ToolSettingsBody,
  ToolSettingsView,
  ToolTypesMetadata,
} from '../../tools/schemas'

export const ToolUuidParam = t.Object({ tool_uuid: t.String({ maxLength: 64 }) })
