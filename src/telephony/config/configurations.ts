import { randomInt } from 'node:crypto'
import { and, asc, desc, eq } from 'drizzle-orm'
import type { AppContext } from '../../context'
import {
  campaigns,
  phoneNumbers,
  telephonyConfigurations,
  type PhoneNumberRow,
  type TelephonyConfigurationRow,
} from '../../db/schema'
import { DomainError, notFound, refused } from '../../lib/errors'
import { isoNow } from '../../lib/clock'
import {
  PROVIDERS,
  setupChecklist,
  storableCredentials,
  type Credentials,
  type ProviderName,
  type SetupChecklist,
  type SetupFacts,
} from './providers'
import { openCredentials, preserveMasked } from './secrets'
import { setupFactsByConfiguration } from './queries'
import type { AriConfiguration, StoredConfigurations } from '../provider'

/**
 * Telephony configurations as the rest of the server sees them: outbound resolution for the API trigger and
 * campaigns, and what the ARI connection manager needs. The HTTP endpoints live in src/modules/telephony.
 */

export const CONFIGURATION_NOT_FOUND = 'Telephony configuration not found'
export const NO_CONFIGURATION = 'Telephony provider not configured for this organization'
export const FROM_PHONE_NUMBER_NOT_FOUND = 'from_phone_number_not_found'
const MAX_INACTIVE_REASON_LENGTH = 255

/** A configuration with its credentials decrypted. Never send `credentials` to a client or a log. */
export type TelephonyConfiguration = {
  id: number
  organizationId: number
  name: string
  provider: ProviderName
  credentials: Credentials
  isDefaultOutbound: boolean
  createdAt: string
}

const openConfiguration = (ctx: AppContext, row: TelephonyConfigurationRow): TelephonyConfiguration => ({
  id: row.id,
  organizationId: row.organizationId,
  name: row.name,
  provider: row.provider,
  credentials: openCredentials(ctx.masterKey, row.provider, row.sealedCredentials),
  isDefaultOutbound: row.isDefaultOutbound,
  createdAt: row.createdAt,
})

/** A configuration of the organization, inactive ones included; another organization's id is not found (404). */
export function requireConfigurationRow(
  ctx: AppContext,
  organizationId: number,
  id: number,
): TelephonyConfigurationRow {
  const row = ctx.db
    .select()
    .from(telephonyConfigurations)
    .where(and(eq(telephonyConfigurations.id, id), eq(telephonyConfigurations.organizationId, organizationId)))
    .get()
  if (!row) throw notFound(CONFIGURATION_NOT_FOUND)
  return row
}

export type OutboundReadiness = { checklist: SetupChecklist | null; ready: boolean; blockedReason: string | null }

/** The checklist decides, except that an inactive configuration is never ready (ARI has no checklist at all). */
export function outboundReadiness(row: TelephonyConfigurationRow, facts: SetupFacts): OutboundReadiness {
  const checklist = setupChecklist(row.provider, facts)
  if (row.inactive) {
    return {
      checklist,
      ready: false,
      blockedReason: `This configuration is inactive (${row.inactiveReason ?? 'no reason recorded'}). Reactivate it to use it again.`,
    }
  }
  return {
    checklist,
    ready: checklist?.ready_for_outbound ?? true,
    blockedReason: checklist?.outbound_blocked_reason ?? null,
  }
}

const notReady = (row: TelephonyConfigurationRow, readiness: OutboundReadiness) =>
  refused(`'${row.name}' is not ready for outbound calls. ${readiness.blockedReason}`)

export type OutboundChoice = { telephonyConfigurationId?: number | null; fromPhoneNumberId?: number | null }

export type OutboundResolution = {
  config: TelephonyConfiguration
  /** The explicit caller id, else the default caller id, else any active number; null when the configuration has none. */
  fromNumber: PhoneNumberRow | null
}

export type OutboundResolutionOptions = {
  /** Replaces both "not found" answers (unknown or inactive explicit id, no usable configuration), e.g. for campaigns. */
  missingConfiguration?: () => DomainError
}

/**
 * The configuration (credentials decrypted) and caller id for an outbound call.
 * - An explicit id must name an active configuration of the organization (else 404 `Telephony configuration not
 *   found`) that is ready (else 400 `'<name>' is not ready for outbound calls. <reason>`); there is no fallback.
 * - Otherwise the active configurations are tried default first, then by creation; the first ready one wins. None
 *   active → 400 `Telephony provider not configured for this organization`; none ready → the first one's 400.
 * - `fromPhoneNumberId` must be an active number of the resolved configuration (else 400 `from_phone_number_not_found`).
 */
export function resolveOutbound(
  ctx: AppContext,
  organizationId: number,
  choice: OutboundChoice,
  options: OutboundResolutionOptions = {},
): OutboundResolution {
  const active = and(
    eq(telephonyConfigurations.organizationId, organizationId),
    eq(telephonyConfigurations.inactive, false),
  )
  const candidates = ctx.db
    .select()
    .from(telephonyConfigurations)
    .where(
      choice.telephonyConfigurationId == null
        ? active
        : and(active, eq(telephonyConfigurations.id, choice.telephonyConfigurationId)),
    )
    .orderBy(
      desc(telephonyConfigurations.isDefaultOutbound),
      asc(telephonyConfigurations.createdAt),
      asc(telephonyConfigurations.id),
    )
    .all()
  if (candidates.length === 0) {
    throw (
      options.missingConfiguration?.() ??
      (choice.telephonyConfigurationId == null ? refused(NO_CONFIGURATION) : notFound(CONFIGURATION_NOT_FOUND))
    )
  }
  const facts = setupFactsByConfiguration(
    ctx,
    candidates.map((row) => row.id),
  )
  const chosen = candidates.find((row) => outboundReadiness(row, facts.get(row.id)!).ready)
  if (!chosen) throw notReady(candidates[0], outboundReadiness(candidates[0], facts.get(candidates[0].id)!))
  return {
    config: openConfiguration(ctx, chosen),
    fromNumber: callerNumber(ctx, chosen.id, choice.fromPhoneNumberId ?? null),
  }
}

function callerNumber(
  ctx: AppContext,
  configurationId: number,
  fromPhoneNumberId: number | null,
): PhoneNumberRow | null {
  const activeNumbers = ctx.db
    .select()
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.telephonyConfigurationId, configurationId), eq(phoneNumbers.isActive, true)))
    .orderBy(asc(phoneNumbers.id))
    .all()
  if (fromPhoneNumberId !== null) {
    const explicit = activeNumbers.find((number) => number.id === fromPhoneNumberId)
    if (!explicit) throw refused(FROM_PHONE_NUMBER_NOT_FOUND)
    return explicit
  }
  if (activeNumbers.length === 0) return null
  // Spreading one-off calls over the pool keeps any one caller id from being flagged as spam.
  return activeNumbers.find((number) => number.isDefaultCallerId) ?? activeNumbers[randomInt(activeNumbers.length)]
}

/** The provider of the organization's default configuration for outbound calls; null when it has none. */
export function defaultOutboundProvider(ctx: AppContext, organizationId: number): ProviderName | null {
  const row = ctx.db
    .select({ provider: telephonyConfigurations.provider })
    .from(telephonyConfigurations)
    .where(
      and(
        eq(telephonyConfigurations.organizationId, organizationId),
        eq(telephonyConfigurations.isDefaultOutbound, true),
      ),
    )
    .get()
  return row ? (row.provider as ProviderName) : null
}

/**
 * Takes a configuration out of service (ARI connection manager: repeated connection failures, unusable stored
 * config). Only `POST …/reactivate` brings it back. Returns false when it was already inactive or does not exist.
 */
export function markInactive(ctx: AppContext, configurationId: number, reason: string): boolean {
  const updated = ctx.db
    .update(telephonyConfigurations)
    .set({
      inactive: true,
      inactiveSince: isoNow(ctx.clock),
      inactiveReason: reason.slice(0, MAX_INACTIVE_REASON_LENGTH),
    })
    .where(and(eq(telephonyConfigurations.id, configurationId), eq(telephonyConfigurations.inactive, false)))
    .returning({ id: telephonyConfigurations.id })
    .get()
  if (updated) ctx.log.warn({ configurationId, reason }, 'telephony configuration marked inactive')
  return updated !== undefined
}

/**
 * Every active ARI configuration of every organization, by id. One whose credentials cannot be decrypted
 * (master key changed) is marked inactive and left out, as any stored configuration that cannot be used.
 */
export function listActiveAriConfigs(ctx: AppContext): AriConfiguration[] {
  const rows = ctx.db
    .select()
    .from(telephonyConfigurations)
    .where(and(eq(telephonyConfigurations.provider, 'ari'), eq(telephonyConfigurations.inactive, false)))
    .orderBy(asc(telephonyConfigurations.id))
    .all()
  return rows.flatMap((row) => {
    try {
      const { id, organizationId, name, credentials } = openConfiguration(ctx, row)
      return [{ id, organizationId, name, credentials, updatedAt: row.updatedAt }]
    } catch (error) {
      markInactive(ctx, row.id, `invalid_config: ${(error as Error).message}`)
      return []
    }
  })
}

/** Every active configuration of a provider, all organizations, credentials decrypted (webhooks that name no run). */
export function listActiveConfigurations(ctx: AppContext, provider: ProviderName): TelephonyConfiguration[] {
  return ctx.db
    .select()
    .from(telephonyConfigurations)
    .where(and(eq(telephonyConfigurations.provider, provider), eq(telephonyConfigurations.inactive, false)))
    .orderBy(asc(telephonyConfigurations.id))
    .all()
    .map((row) => openConfiguration(ctx, row))
}

/** Decrypted credentials of any configuration by id (webhooks, adapters); check `organizationId` against the caller. */
export function getConfigCredentials(
  ctx: AppContext,
  configurationId: number,
): { organizationId: number; provider: ProviderName; credentials: Credentials } | null {
  const row = ctx.db.select().from(telephonyConfigurations).where(eq(telephonyConfigurations.id, configurationId)).get()
  if (!row) return null
  const { organizationId, provider, credentials } = openConfiguration(ctx, row)
  return { organizationId, provider, credentials }
}

/** Whether a campaign (in any state) refers to the configuration, which then cannot be deleted. */
export function isConfigurationInUse(ctx: AppContext, configurationId: number): boolean {
  const campaign = ctx.db
    .select({ id: campaigns.id })
    .from(campaigns)
    .where(eq(campaigns.telephonyConfigurationId, configurationId))
    .limit(1)
    .get()
  return campaign !== undefined
}

/** Cloudonix ids that belong to one domain and are looked up again when the domain changes. */
const CLOUDONIX_DOMAIN_BOUND_FIELDS = ['domain_uuid', 'application_id', 'application_uuid']

/**
 * Applies a validated partial `config` to decrypted stored credentials. Only the top-level fields present
 * in the patch change; a nested object (ARI `external_pbx`) is replaced as a whole. A sensitive value equal
 * to the mask of the stored one keeps the stored secret. Server-managed fields come from `stored` only;
 * Cloudonix domain-bound ids are dropped when the domain changes.
 */
export function mergeUpdate(provider: ProviderName, stored: Credentials, patch: Record<string, unknown>): Credentials {
  const resolvedPatch = preserveMasked(provider, patch, stored)
  const next = storableCredentials(provider, { ...stored, ...resolvedPatch })
  const domainChanged = provider === 'cloudonix' && next.domain_id !== stored.domain_id
  for (const { name } of PROVIDERS[provider].serverManaged) {
    if (stored[name] === undefined) continue
    if (domainChanged && CLOUDONIX_DOMAIN_BOUND_FIELDS.includes(name)) continue
    next[name] = stored[name]
  }
  return next
}

/** The reader of stored configurations that boot hands to the transports (ctx.telephony.configurations). */
export const storedConfigurations = (ctx: AppContext): StoredConfigurations => ({
  opened: (configurationId) => getConfigCredentials(ctx, configurationId),
  activeAri: () => listActiveAriConfigs(ctx),
  markInactive: (configurationId, reason) => markInactive(ctx, configurationId, reason),
})
