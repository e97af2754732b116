import { and, eq, ne } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { telephonyConfigurations, type TelephonyConfigurationRow } from '../../db/schema'
import { translateUniqueViolations } from '../../db/tables'
import { conflict, invalid, notFound, refused } from '../../lib/errors'
import { isoNow } from '../../lib/clock'
import {
  CONFIGURATION_NOT_FOUND,
  isConfigurationInUse,
  mergeUpdate,
  outboundReadiness,
  requireConfigurationRow,
} from './configurations'
import { configurationsWithSetupFacts, setupFactsByConfiguration } from './queries'
import {
  createCredentials,
  isProviderName,
  PROVIDERS,
  validateConfig,
  validatePartialUpdate,
  type Credentials,
  type ProviderName,
  type SetupFacts,
} from './providers'
import { provisionMissing } from './provisioning'
import { maskCredentials, openCredentials, sealCredentials, secretItems } from './secrets'
import type { ConfigurationDetail, ConfigurationListItem } from './schemas'
import { trunkViews } from './trunks'
import { transaction } from '../../db/transaction'

export type CreateConfigurationInput = {
  name: string
  is_default_outbound?: boolean
  config: { provider: ProviderName } & Record<string, unknown>
}
export type UpdateConfigurationInput = { name?: string | null; config?: Record<string, unknown> | null }

const PROVIDER_IMMUTABLE = 'Provider cannot be changed; create a new configuration instead.'

const duplicateName = (name: string) =>
  conflict(`A telephony configuration named '${name}' already exists in this organization. Pick a different name.`)

/** Live connection state is known for ARI only (its events socket); providers reached over HTTP answer null. */
const connectionState = (ctx: AppContext, row: TelephonyConfigurationRow): boolean | null =>
  row.provider === 'ari' ? ctx.ariConnected(row.id) : null

/** The fields list items and details share. */
function configurationSummary(ctx: AppContext, row: TelephonyConfigurationRow) {
  const info = PROVIDERS[row.provider]
  return {
    id: row.id,
    name: row.name,
    provider: row.provider,
    connectivity: info.connectivity,
    is_default_outbound: row.isDefaultOutbound,
    inactive: row.inactive,
    inactive_since: row.inactiveSince,
    inactive_reason: row.inactiveReason,
    supports_outbound: info.supportsOutbound,
    supports_phone_number_sync: info.supportsPhoneNumberSync,
    connected: connectionState(ctx, row),
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

function configurationDetail(ctx: AppContext, row: TelephonyConfigurationRow): ConfigurationDetail {
  const info = PROVIDERS[row.provider]
  const facts = setupFactsByConfiguration(ctx, [row.id]).get(row.id)!
  return {
    ...configurationSummary(ctx, row),
    credentials: maskCredentials(row.provider, openCredentials(ctx.masterKey, row.provider, row.sealedCredentials)),
    sip_connectivity: null,
    setup_checklist: outboundReadiness(row, facts).checklist,
    supports_trunks: info.supportsTrunks,
    trunks: info.supportsTrunks ? trunkViews(ctx, row.id) : [],
  }
}

function listItem(ctx: AppContext, row: TelephonyConfigurationRow, facts: SetupFacts): ConfigurationListItem {
  const readiness = outboundReadiness(row, facts)
  return {
    ...configurationSummary(ctx, row),
    phone_number_count: facts.activeNumberCount,
    is_ready_for_outbound: readiness.ready,
    outbound_blocked_reason: readiness.blockedReason,
  }
}

export function listConfigurations(
  ctx: AppContext,
  organizationId: number,
): { configurations: ConfigurationListItem[] } {
  const rows = configurationsWithSetupFacts(ctx, organizationId)
  return { configurations: rows.map(({ row, facts }) => listItem(ctx, row, facts)) }
}

export const getConfiguration = (ctx: AppContext, organizationId: number, id: number): ConfigurationDetail =>
  configurationDetail(ctx, requireConfigurationRow(ctx, organizationId, id))

function ensureNameAvailable(ctx: AppContext, organizationId: number, name: string, exceptId: number | null): void {
  const scope = and(eq(telephonyConfigurations.organizationId, organizationId), eq(telephonyConfigurations.name, name))
  const taken = ctx.db
    .select({ id: telephonyConfigurations.id })
    .from(telephonyConfigurations)
    .where(exceptId === null ? scope : and(scope, ne(telephonyConfigurations.id, exceptId)))
    .get()
  if (taken) throw duplicateName(name)
}

/** Turns the unique constraints a concurrent request can still hit into 409s. */
const writeConfiguration = <T>(name: string, write: () => T): T =>
  translateUniqueViolations(
    'telephony_configurations',
    [
      [['organization_id', 'name'], () => duplicateName(name)],
      [
        ['organization_id'],
        () => conflict('Another configuration became the default outbound configuration at the same time; try again.'),
      ],
    ],
    write,
  )

function clearDefaultOutbound(ctx: AppContext, organizationId: number): void {
  ctx.db
    .update(telephonyConfigurations)
    .set({ isDefaultOutbound: false })
    .where(
      and(
        eq(telephonyConfigurations.organizationId, organizationId),
        eq(telephonyConfigurations.isDefaultOutbound, true),
      ),
    )
    .run()
}

/**
 * Validates the variant, creates on the provider what the request left out (502 when it cannot be reached,
 * and then nothing is stored), mints server-managed values, stores the secrets sealed.
 */
export async function createConfiguration(
  ctx: AppContext,
  organizationId: number,
  body: CreateConfigurationInput,
): Promise<ConfigurationDetail> {
  const items = validateConfig(body.config)
  if (items.length === 0) items.push(...secretItems(body.config.provider, body.config, {}, ['body', 'config']))
  if (items.length > 0) throw invalid(items)
  ensureNameAvailable(ctx, organizationId, body.name, null)
  const provider = body.config.provider
  const credentials = await provisionMissing(ctx, provider, createCredentials(body.config))
  const sealedCredentials = sealCredentials(ctx.masterKey, provider, credentials)
  const now = isoNow(ctx.clock)
  const row = writeConfiguration(body.name, () =>
    transaction(ctx, () => {
      if (body.is_default_outbound) clearDefaultOutbound(ctx, organizationId)
      return ctx.db
        .insert(telephonyConfigurations)
        .values({
          organizationId,
          name: body.name,
          provider,
          sealedCredentials,
          isDefaultOutbound: body.is_default_outbound ?? false,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
        .get()
    }),
  )
  ctx.log.info({ organizationId, configurationId: row.id, provider }, 'telephony configuration created')
  return configurationDetail(ctx, row)
}

/** Partial: only the sent fields change; masked secrets sent back keep the stored ones; the provider cannot change. */
export async function updateConfiguration(
  ctx: AppContext,
  organizationId: number,
  id: number,
  body: UpdateConfigurationInput,
): Promise<ConfigurationDetail> {
  const row = requireConfigurationRow(ctx, organizationId, id)
  const name = body.name ?? row.name
  let credentials: Credentials | null = null
  if (body.config) {
    if (isProviderName(body.config.provider) && body.config.provider !== row.provider) throw refused(PROVIDER_IMMUTABLE)
    const stored = openCredentials(ctx.masterKey, row.provider, row.sealedCredentials)
    const items = validatePartialUpdate(body.config, row.provider)
    if (items.length === 0) items.push(...secretItems(row.provider, body.config, stored, ['body', 'config']))
    if (items.length > 0) throw invalid(items)
    credentials = mergeUpdate(row.provider, stored, body.config)
  }
  ensureNameAvailable(ctx, organizationId, name, id)
  const sealedCredentials = credentials
    ? sealCredentials(ctx.masterKey, row.provider, await provisionMissing(ctx, row.provider, credentials))
    : row.sealedCredentials
  const updated = writeConfiguration(name, () =>
    ctx.db
      .update(telephonyConfigurations)
      .set({ name, sealedCredentials, updatedAt: isoNow(ctx.clock) })
      .where(and(eq(telephonyConfigurations.id, id), eq(telephonyConfigurations.organizationId, organizationId)))
      .returning()
      .get(),
  )
  if (!updated) throw notFound(CONFIGURATION_NOT_FOUND)
  ctx.log.info(
    { organizationId, configurationId: id, credentialsChanged: credentials !== null },
    'telephony configuration updated',
  )
  return configurationDetail(ctx, updated)
}

/** Phone numbers and trunks go with it; a configuration a campaign refers to stays (409). */
export function deleteConfiguration(ctx: AppContext, organizationId: number, id: number): void {
  requireConfigurationRow(ctx, organizationId, id)
  if (isConfigurationInUse(ctx, id)) {
    throw conflict(`Telephony configuration ${id} is referenced by one or more campaigns and cannot be deleted.`)
  }
  ctx.db
    .delete(telephonyConfigurations)
    .where(and(eq(telephonyConfigurations.id, id), eq(telephonyConfigurations.organizationId, organizationId)))
    .run()
  ctx.log.info({ organizationId, configurationId: id }, 'telephony configuration deleted')
}

/** Unsets the current default and sets this one in one transaction; inactive configurations may be chosen too. */
export function setDefaultOutbound(ctx: AppContext, organizationId: number, id: number): ConfigurationDetail {
  const row = transaction(ctx, () => {
    requireConfigurationRow(ctx, organizationId, id)
    clearDefaultOutbound(ctx, organizationId)
    return ctx.db
      .update(telephonyConfigurations)
      .set({ isDefaultOutbound: true })
      .where(and(eq(telephonyConfigurations.id, id), eq(telephonyConfigurations.organizationId, organizationId)))
      .returning()
      .get()!
  })
  return configurationDetail(ctx, row)
}

/** The only way out of `inactive` (set by the ARI connection manager). */
export function reactivateConfiguration(ctx: AppContext, organizationId: number, id: number): ConfigurationDetail {
  const row = ctx.db
    .update(telephonyConfigurations)
    .set({ inactive: false, inactiveSince: null, inactiveReason: null })
    .where(and(eq(telephonyConfigurations.id, id), eq(telephonyConfigurations.organizationId, organizationId)))
    .returning()
    .get()
  if (!row) throw notFound(CONFIGURATION_NOT_FOUND)
  ctx.log.info({ organizationId, configurationId: id }, 'telephony configuration reactivated')
  return configurationDetail(ctx, row)
}
