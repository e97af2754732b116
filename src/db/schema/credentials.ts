import { integer, sqliteTable, text, unique } from 'drizzle-orm/sqlite-core'

/** How a credential authenticates a request (src/credentials/ builds the headers). */
export const CREDENTIAL_TYPES = ['bearer_token', 'api_key', 'basic_auth', 'custom_header'] as const
export type CredentialType = (typeof CREDENTIAL_TYPES)[number]

export const credentials = sqliteTable(
  'credentials',
  {
    id: integer('id').primaryKey(),
    uuid: text('uuid').notNull().unique(),
    organizationId: integer('organization_id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    credentialType: text('credential_type').$type<CredentialType>().notNull(),
    /** The JSON of credential_data sealed with the master key (src/lib/encryption.ts); src/credentials/ opens it. */
    sealedData: text('sealed_data').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [unique().on(table.organizationId, table.name)],
)

export type CredentialRow = typeof credentials.$inferSelect
