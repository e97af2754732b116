import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { ToolCategory, ToolDefinition, ToolStatus } from '../../tools/schemas'

export const tools = sqliteTable('tools', {
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
}, (table) => [
  index('tools_org').on(table.organizationId, table.status),
])

export const toolSettings = sqliteTable('tool_settings', {
  organizationId: integer('organization_id').primaryKey(),
  allowedHosts: text('allowed_hosts', { mode: 'json' }).$type<string[]>(),
  updatedAt: text('updated_at').notNull(),
})

export type ToolRow = typeof tools.$inferSelect
