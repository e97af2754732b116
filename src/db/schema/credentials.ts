import { integer, sqliteTable, text, unique } from 'drizzle-orm/sqlite-core'
import type { CredentialType } from '../../credentials/types'

export const credentials = sqliteTable('credentials', {
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
}, (table) => [
  unique().on(table.organizationId, table.name),
])

export type CredentialRow = typeof credentials.$inferSelect
