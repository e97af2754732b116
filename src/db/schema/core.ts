import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const organizations = sqliteTable('organizations', {
  id: integer('id').primaryKey(),
  name: text('name').notNull().unique(),
  concurrentCallLimit: integer('concurrent_call_limit').notNull().default(10),
  createdAt: text('created_at').notNull(),
})

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    keyPrefix: text('key_prefix').notNull(),
    scope: text('scope', { enum: ['admin', 'trigger'] })
      .notNull()
      .default('admin'),
    isActive: integer('is_active', { mode: 'boolean' }).notNull().default(true),
    createdAt: text('created_at').notNull(),
    lastUsedAt: text('last_used_at'),
    archivedAt: text('archived_at'),
  },
  (table) => [index('api_keys_org').on(table.organizationId, table.id)],
)

export const sessions = sqliteTable(
  'sessions',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id')
      .notNull()
      .references(() => organizations.id),
    apiKeyId: integer('api_key_id')
      .notNull()
      .references(() => apiKeys.id),
    tokenHash: text('token_hash').notNull().unique(),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
  },
  (table) => [index('sessions_expiry').on(table.expiresAt)],
)

/** Added by migrations/0019_instances.sql: the Ringbase processes sharing this database, live while they heartbeat. */
export const instances = sqliteTable('instances', {
  id: text('id').primaryKey(),
  startedAt: text('started_at').notNull(),
  heartbeatAt: text('heartbeat_at').notNull(),
  version: text('version').notNull(),
  hostname: text('hostname').notNull(),
})

/** Added by migrations/0021_installation.sql: facts of the installation as a whole (the master key's check value). */
export const installation = sqliteTable('installation', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
})
