import { and, asc, eq, inArray } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { phoneNumbers, trunks, workflows, type PhoneNumberRow } from '../../db/schema'
import { translateUniqueViolations } from '../../db/tables'
import { valueError, type ValidationItem } from '../../lib/validation'
import { conflict, invalid, notFound, refused } from '../../lib/errors'
import { isoNow } from '../../lib/clock'
import { AddressError, dialCodeFor, normalizeAddress, type NormalizedAddress } from '../../lib/phone'
import { requireConfigurationRow } from './configurations'
import type { CreatePhoneNumberBody, PhoneNumberView, UpdatePhoneNumberBody } from './schemas'
import { transaction } from '../../db/transaction'

/** Phone numbers of a configuration: caller ids for outbound calls and the addresses inbound calls are routed by. */

const PHONE_NUMBER_NOT_FOUND = 'Phone number not found'
const DUPLICATE_ADDRESS = 'A phone number with this address already exists in the org.'

/** Digits only, as many as an E.164 number has: without a '+' the country is ambiguous. */
const BARE_PSTN_DIGITS = /^\d{8,15}$/

function phoneNumberView(row: PhoneNumberRow, inboundAgentName: string | null): PhoneNumberView {
  return {
    id: row.id,
    telephony_configuration_id: row.telephonyConfigurationId,
    address: row.address,
    address_normalized: row.addressNormalized,
    address_type: row.addressType,
    country_code: row.countryCode,
    label: row.label,
    inbound_workflow_id: row.inboundWorkflowId,
    inbound_workflow_name: inboundAgentName,
    telephony_trunk_id: row.telephonyTrunkId,
    is_active: row.isActive,
    is_default_caller_id: row.isDefaultCallerId,
    extra_metadata: row.extraMetadata,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    // Inbound routing is not pushed to providers yet, so there is never a sync to report.
    provider_sync: null,
  }
}

/** Names of the organization's agents among `ids`. */
function agentNames(ctx: AppContext, organizationId: number, ids: number[]): Map<number, string> {
  if (ids.length === 0) return new Map()
  const rows = ctx.db
    .select({ id: workflows.id, name: workflows.name })
    .from(workflows)
    .where(and(eq(workflows.organizationId, organizationId), inArray(workflows.id, ids)))
    .all()
  return new Map(rows.map((row) => [row.id, row.name]))
}

function requireAgentName(ctx: AppContext, organizationId: number, agentId: number): string {
  const name = agentNames(ctx, organizationId, [agentId]).get(agentId)
  if (name === undefined) throw notFound('Workflow not found')
  return name
}

const agentNameOf = (ctx: AppContext, row: PhoneNumberRow): string | null =>
  row.inboundWorkflowId === null
    ? null
    : (agentNames(ctx, row.organizationId, [row.inboundWorkflowId]).get(row.inboundWorkflowId) ?? null)

function requireTrunkOnConfiguration(ctx: AppContext, configurationId: number, trunkId: number): void {
  const trunk = ctx.db
    .select({ id: trunks.id })
    .from(trunks)
    .where(and(eq(trunks.id, trunkId), eq(trunks.telephonyConfigurationId, configurationId)))
    .get()
  if (!trunk) throw notFound('Trunk not found on this telephony configuration')
}

function requirePhoneNumber(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  id: number,
): PhoneNumberRow {
  requireConfigurationRow(ctx, organizationId, configurationId)
  const row = ctx.db
    .select()
    .from(phoneNumbers)
    .where(
      and(
        eq(phoneNumbers.id, id),
        eq(phoneNumbers.telephonyConfigurationId, configurationId),
        eq(phoneNumbers.organizationId, organizationId),
      ),
    )
    .get()
  if (!row) throw notFound(PHONE_NUMBER_NOT_FOUND)
  return row
}

/** A bare national number needs a country we know the dial code of. */
function countryItems(address: string, countryCode: string | null, body: unknown): ValidationItem[] {
  if (!BARE_PSTN_DIGITS.test(address.trim().replace(/[\s\-()]/g, ''))) return []
  if (countryCode === null) {
    return [
      valueError(
        ['body'],
        "PSTN addresses without a leading '+' need a country_code (ISO-2, e.g. 'US' or 'IN'), or write them in E.164 form (+<country code><number>)",
        body,
      ),
    ]
  }
  if (dialCodeFor(countryCode) === null) {
    return [
      valueError(
        ['body', 'country_code'],
        `country_code '${countryCode}' is not supported for numbers without a leading '+'; write the number in E.164 form`,
        countryCode,
      ),
    ]
  }
  return []
}

function normalised(address: string, countryCode: string | null): NormalizedAddress {
  try {
    return normalizeAddress(address, countryCode)
  } catch (error) {
    if (error instanceof AddressError) throw refused(`Invalid address: ${error.message}`)
    throw error
  }
}

/** Addresses are unique within the organization, whichever configuration holds them. */
const writePhoneNumber = (write: () => PhoneNumberRow | undefined): PhoneNumberRow =>
  translateUniqueViolations(
    'phone_numbers',
    [[['organization_id', 'address_normalized'], () => conflict(DUPLICATE_ADDRESS)]],
    write,
  )!

function clearDefaultCaller(ctx: AppContext, configurationId: number): void {
  ctx.db
    .update(phoneNumbers)
    .set({ isDefaultCallerId: false })
    .where(and(eq(phoneNumbers.telephonyConfigurationId, configurationId), eq(phoneNumbers.isDefaultCallerId, true)))
    .run()
}

export function listPhoneNumbers(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
): { phone_numbers: PhoneNumberView[] } {
  requireConfigurationRow(ctx, organizationId, configurationId)
  const rows = ctx.db
    .select()
    .from(phoneNumbers)
    .where(
      and(eq(phoneNumbers.telephonyConfigurationId, configurationId), eq(phoneNumbers.organizationId, organizationId)),
    )
    .orderBy(asc(phoneNumbers.createdAt), asc(phoneNumbers.id))
    .all()
  const names = agentNames(ctx, organizationId, [...new Set(rows.flatMap((row) => row.inboundWorkflowId ?? []))])
  return {
    phone_numbers: rows.map((row) =>
      phoneNumberView(row, row.inboundWorkflowId === null ? null : (names.get(row.inboundWorkflowId) ?? null)),
    ),
  }
}

export const getPhoneNumber = (
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  id: number,
): PhoneNumberView => {
  const row = requirePhoneNumber(ctx, organizationId, configurationId, id)
  return phoneNumberView(row, agentNameOf(ctx, row))
}

/** The address is kept as written and normalised (pstn / sip_uri / sip_extension) for uniqueness within the org. */
export function createPhoneNumber(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  body: CreatePhoneNumberBody,
): PhoneNumberView {
  const countryCode = body.country_code?.toUpperCase() ?? null
  const items = countryItems(body.address, countryCode, body)
  if (items.length > 0) throw invalid(items)
  requireConfigurationRow(ctx, organizationId, configurationId)
  const inboundAgentName =
    body.inbound_workflow_id == null ? null : requireAgentName(ctx, organizationId, body.inbound_workflow_id)
  if (body.telephony_trunk_id != null) requireTrunkOnConfiguration(ctx, configurationId, body.telephony_trunk_id)
  const address = normalised(body.address, countryCode)
  const now = isoNow(ctx.clock)
  const row = writePhoneNumber(() =>
    transaction(ctx, () => {
      if (body.is_default_caller_id) clearDefaultCaller(ctx, configurationId)
      return ctx.db
        .insert(phoneNumbers)
        .values({
          organizationId,
          telephonyConfigurationId: configurationId,
          address: body.address,
          addressNormalized: address.address_normalized,
          addressType: address.address_type,
          countryCode,
          label: body.label ?? null,
          inboundWorkflowId: body.inbound_workflow_id ?? null,
          telephonyTrunkId: body.telephony_trunk_id ?? null,
          isActive: body.is_active ?? true,
          isDefaultCallerId: body.is_default_caller_id ?? false,
          extraMetadata: body.extra_metadata ?? {},
          createdAt: now,
          updatedAt: now,
        })
        .returning()
        .get()
    }),
  )
  return phoneNumberView(row, inboundAgentName)
}

/** Partial: null means "no change"; links are removed with the clear_* flags; a new country_code re-normalises the address. */
export function updatePhoneNumber(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  id: number,
  body: UpdatePhoneNumberBody,
): PhoneNumberView {
  const stored = requirePhoneNumber(ctx, organizationId, configurationId, id)
  const countryCode = body.country_code?.toUpperCase() ?? stored.countryCode
  let address: NormalizedAddress = { address_normalized: stored.addressNormalized, address_type: stored.addressType }
  if (countryCode !== stored.countryCode) {
    const items = countryItems(stored.address, countryCode, body)
    if (items.length > 0) throw invalid(items)
    address = normalised(stored.address, countryCode)
  }
  if (!body.clear_inbound_workflow && body.inbound_workflow_id != null)
    requireAgentName(ctx, organizationId, body.inbound_workflow_id)
  if (!body.clear_trunk && body.telephony_trunk_id != null)
    requireTrunkOnConfiguration(ctx, configurationId, body.telephony_trunk_id)
  const row = writePhoneNumber(() =>
    ctx.db
      .update(phoneNumbers)
      .set({
        addressNormalized: address.address_normalized,
        addressType: address.address_type,
        countryCode,
        label: body.label ?? stored.label,
        inboundWorkflowId: body.clear_inbound_workflow ? null : (body.inbound_workflow_id ?? stored.inboundWorkflowId),
        telephonyTrunkId: body.clear_trunk ? null : (body.telephony_trunk_id ?? stored.telephonyTrunkId),
        isActive: body.is_active ?? stored.isActive,
        extraMetadata: body.extra_metadata ?? stored.extraMetadata,
        updatedAt: isoNow(ctx.clock),
      })
      .where(eq(phoneNumbers.id, id))
      .returning()
      .get(),
  )
  return phoneNumberView(row, agentNameOf(ctx, row))
}

export function deletePhoneNumber(ctx: AppContext, organizationId: number, configurationId: number, id: number): void {
  requirePhoneNumber(ctx, organizationId, configurationId, id)
  ctx.db.delete(phoneNumbers).where(eq(phoneNumbers.id, id)).run()
}

/** The caller id of one-off calls on this configuration; unsets the previous one in the same transaction. */
export function setDefaultCaller(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  id: number,
): PhoneNumberView {
  const row = transaction(ctx, () => {
    requirePhoneNumber(ctx, organizationId, configurationId, id)
    clearDefaultCaller(ctx, configurationId)
    return ctx.db
      .update(phoneNumbers)
      .set({ isDefaultCallerId: true })
      .where(eq(phoneNumbers.id, id))
      .returning()
      .get()!
  })
  return phoneNumberView(row, agentNameOf(ctx, row))
}
