import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, unique } from 'drizzle-orm/sqlite-core'

export type WebhookDeliveryState = 'held' | 'pending' | 'delivered' | 'dead'

export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: integer('id').primaryKey(),
    deliveryUuid: text('delivery_uuid').notNull().unique(),
    organizationId: integer('organization_id').notNull(),
    runId: integer('run_id').notNull(),
    nodeId: text('node_id').notNull(),
    state: text('state').$type<WebhookDeliveryState>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** Epoch milliseconds. */
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastError: text('last_error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    unique().on(table.runId, table.nodeId),
    index('webhook_deliveries_due').on(table.nextAttemptAt).where(sql`state = 'pending'`),
  ],
)

export const webhookSigningSecrets = sqliteTable('webhook_signing_secrets', {
  organizationId: integer('organization_id').primaryKey(),
  /** Sealed (src/lib/encryption.ts). */
  sealedSecret: text('secret').notNull(),
  hint: text('hint').notNull(),
  createdAt: text('created_at').notNull(),
})

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect
