import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, unique, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { AddressType } from '../../lib/phone'

/** The telephony providers (src/telephony/ has one file per provider). */
export const PROVIDER_NAMES = [
  'ari',
  'cloudonix',
  'exotel',
  'plivo',
  'telnyx',
  'twilio',
  'vobiz',
  'vonage',
  'whatsapp',
] as const
export type ProviderName = (typeof PROVIDER_NAMES)[number]

/** Provider-specific credentials as stored on a configuration row (decrypted form); free-form by design. */
export type Credentials = Record<string, unknown>

export const telephonyConfigurations = sqliteTable(
  'telephony_configurations',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    name: text('name').notNull(),
    provider: text('provider').$type<ProviderName>().notNull(),
    /** Sensitive values sealed (see src/telephony/config/secrets.ts); open them with `openCredentials`. */
    sealedCredentials: text('credentials', { mode: 'json' }).$type<Credentials>().notNull(),
    isDefaultOutbound: integer('is_default_outbound', { mode: 'boolean' }).notNull().default(false),
    inactive: integer('inactive', { mode: 'boolean' }).notNull().default(false),
    inactiveSince: text('inactive_since'),
    inactiveReason: text('inactive_reason'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    unique().on(table.organizationId, table.name),
    uniqueIndex('telephony_configurations_one_default').on(table.organizationId).where(sql`is_default_outbound = 1`),
    index('telephony_configurations_provider').on(table.provider, table.inactive),
  ],
)

export const trunks = sqliteTable(
  'trunks',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    telephonyConfigurationId: integer('telephony_configuration_id').notNull(),
    name: text('name').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    settings: text('settings', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    externalId: text('external_id'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [unique().on(table.telephonyConfigurationId, table.name)],
)

export const phoneNumbers = sqliteTable(
  'phone_numbers',
  {
    id: integer('id').primaryKey(),
    organizationId: integer('organization_id').notNull(),
    telephonyConfigurationId: integer('telephony_configuration_id').notNull(),
    address: text('address').notNull(),
    addressNormalized: text('address_normalized').notNull(),
    addressType: text('address_type').$type<AddressType>().notNull(),
    countryCode: text('country_code'),
    label: text('label'),
    inboundWorkflowId: integer('inbound_workflow_id'),
    telephonyTrunkId: integer('telephony_trunk_id'),
    isActive: integer('is_active', { mode: 'boolean' }).notNull().default(true),
    isDefaultCallerId: integer('is_default_caller_id', { mode: 'boolean' }).notNull().default(false),
    extraMetadata: text('extra_metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    unique().on(table.organizationId, table.addressNormalized),
    uniqueIndex('phone_numbers_one_default_caller')
      .on(table.telephonyConfigurationId)
      .where(sql`is_default_caller_id = 1`),
    index('phone_numbers_configuration').on(table.telephonyConfigurationId, table.id),
    index('phone_numbers_trunk').on(table.telephonyTrunkId),
  ],
)

/** Added by migrations/0019_instances.sql: which instance holds an ARI configuration's events connection, until when. */
export const ariLeases = sqliteTable('ari_leases', {
  telephonyConfigurationId: integer('telephony_configuration_id').primaryKey(),
  instanceId: text('instance_id').notNull(),
  expiresAt: text('expires_at').notNull(),
})

export type TelephonyConfigurationRow = typeof telephonyConfigurations.$inferSelect
export type TrunkRow = typeof trunks.$inferSelect
export type PhoneNumberRow = typeof phoneNumbers.$inferSelect
