import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, unique, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type ModelProviderName = 'openai' | 'speaches' | 'groq' | 'openrouter'

/** A configuration section as stored; see src/models/configurations.ts. */
export type StoredModelSection = {
  provider_connection_uuid?: string
  builtin?: true
  settings: Record<string, unknown>
}

export const providerConnections = sqliteTable(
  'provider_connections',
  {
    id: integer('id').primaryKey(),
    uuid: text('uuid').notNull().unique(),
    organizationId: integer('organization_id').notNull(),
    name: text('name').notNull(),
    provider: text('provider').$type<ModelProviderName>().notNull(),
    baseUrl: text('base_url').notNull(),
    /** Sealed (src/lib/encryption.ts); null when the server takes no key. */
    sealedApiKey: text('api_key'),
    /** The latest check: null until one ran. */
    lastCheckOk: integer('last_check_ok', { mode: 'boolean' }),
    lastCheckAt: text('last_check_at'),
    lastCheckError: text('last_check_error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [unique().on(table.organizationId, table.name)],
)

export const modelConfigurations = sqliteTable(
  'model_configurations',
  {
    id: integer('id').primaryKey(),
    uuid: text('uuid').notNull().unique(),
    organizationId: integer('organization_id').notNull(),
    name: text('name').notNull(),
    isDefault: integer('is_default', { mode: 'boolean' }).notNull().default(false),
    llm: text('llm', { mode: 'json' }).$type<StoredModelSection>().notNull(),
    stt: text('stt', { mode: 'json' }).$type<StoredModelSection | null>(),
    tts: text('tts', { mode: 'json' }).$type<StoredModelSection | null>(),
    embeddings: text('embeddings', { mode: 'json' }).$type<StoredModelSection | null>(),
    realtime: text('realtime', { mode: 'json' }).$type<StoredModelSection | null>(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    unique().on(table.organizationId, table.name),
    uniqueIndex('model_configurations_one_default').on(table.organizationId).where(sql`is_default = 1`),
  ],
)

export const modelConfigurationConnections = sqliteTable(
  'model_configuration_connections',
  {
    configurationId: integer('configuration_id').notNull(),
    connectionId: integer('connection_id').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.configurationId, table.connectionId] }),
    index('model_configuration_connections_connection').on(table.connectionId),
  ],
)

export const organizationPriceCards = sqliteTable('organization_price_cards', {
  organizationId: integer('organization_id').primaryKey(),
  card: text('card', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  updatedAt: text('updated_at').notNull(),
})

export type ProviderConnectionRow = typeof providerConnections.$inferSelect
export type ModelConfigurationRow = typeof modelConfigurations.$inferSelect
