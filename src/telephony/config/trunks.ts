import { and, asc, eq, sql } from 'drizzle-orm'
import { Type as t } from '@sinclair/typebox'
import type { AppContext } from '../../context'
import { phoneNumbers, trunks, type TelephonyConfigurationRow, type TrunkRow } from '../../db/schema'
import { translateUniqueViolations } from '../../db/tables'
import { checkValue, valueError, type ValidationItem } from '../../lib/validation'
import { conflict, invalid, notFound, refused } from '../../lib/errors'
import { isoNow } from '../../lib/clock'
import { requireConfigurationRow } from './configurations'
import { PROVIDERS } from './providers'
import type { CreateTrunkBody, TrunkView, UpdateTrunkBody } from './schemas'

/** Trunks (carrier paths of a configuration); only providers that route calls over several trunks have them. */

const TRUNK_NOT_FOUND = 'Trunk not found'

const CLOUDONIX_REGIONS = ['India', 'UAE', 'Global']
const CloudonixTrunkSettings = t.Object({ region: t.String(), sip_domain: t.String({ minLength: 1 }) })
const TrunkName = t.String({ minLength: 1, maxLength: 64 })
const CLOUDONIX_TRUNK_NAME = /^[A-Za-z0-9-]+$/

const duplicateTrunk = (name: string) => conflict(`A trunk named '${name}' already exists on this configuration.`)

/** The configuration, when its provider has trunks; 400 otherwise. */
function requireTrunkConfiguration(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
): TelephonyConfigurationRow {
  const row = requireConfigurationRow(ctx, organizationId, configurationId)
  const info = PROVIDERS[row.provider]
  if (!info.supportsTrunks) {
    throw refused(
      `Trunks are not modelled on ${info.displayName} configurations: calls route through the provider account itself. ` +
        'Numbers on this configuration need no trunk.',
    )
  }
  return row
}

function requireTrunk(ctx: AppContext, configurationId: number, trunkId: number): TrunkRow {
  const row = ctx.db
    .select()
    .from(trunks)
    .where(and(eq(trunks.id, trunkId), eq(trunks.telephonyConfigurationId, configurationId)))
    .get()
  if (!row) throw notFound(TRUNK_NOT_FOUND)
  return row
}

const trunkView = (row: TrunkRow, phoneNumberCount: number): TrunkView => ({
  id: row.id,
  name: row.name,
  enabled: row.enabled,
  settings: row.settings,
  phone_number_count: phoneNumberCount,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
})

const attachedNumberCount = (ctx: AppContext, trunkId: number): number =>
  ctx.db
    .select({ count: sql<number>`count(*)` })
    .from(phoneNumbers)
    .where(eq(phoneNumbers.telephonyTrunkId, trunkId))
    .get()!.count

/** The trunks of a configuration with the number of phone numbers on each, by creation. */
export function trunkViews(ctx: AppContext, configurationId: number): TrunkView[] {
  const rows = ctx.db
    .select({
      trunk: trunks,
      phoneNumberCount: sql<number>`(SELECT count(*) FROM ${phoneNumbers} WHERE ${phoneNumbers.telephonyTrunkId} = ${trunks.id})`,
    })
    .from(trunks)
    .where(eq(trunks.telephonyConfigurationId, configurationId))
    .orderBy(asc(trunks.createdAt), asc(trunks.id))
    .all()
  return rows.map(({ trunk, phoneNumberCount }) => trunkView(trunk, phoneNumberCount))
}

/** Checks a whole trunk (names are stripped); returns the name and the settings to store (region canonical). */
function validatedTrunk(
  name: string,
  settings: Record<string, unknown>,
): { name: string; settings: Record<string, unknown> } {
  const strippedName = name.trim()
  const items: ValidationItem[] = checkValue(TrunkName, strippedName, ['body', 'name'])
  if (items.length === 0 && !CLOUDONIX_TRUNK_NAME.test(strippedName)) {
    items.push(valueError(['body', 'name'], 'Cloudonix trunk names may only contain letters, digits and hyphens', name))
  }
  items.push(...checkValue(CloudonixTrunkSettings, settings, ['body', 'settings']))
  const region = CLOUDONIX_REGIONS.find(
    (candidate) => candidate.toLowerCase() === String(settings.region).toLowerCase(),
  )
  if (typeof settings.region === 'string' && !region) {
    items.push(
      valueError(
        ['body', 'settings', 'region'],
        `region must be one of ${CLOUDONIX_REGIONS.join(', ')}`,
        settings.region,
      ),
    )
  }
  if (items.length > 0) throw invalid(items)
  return { name: strippedName, settings: { region, sip_domain: settings.sip_domain } }
}

const writeTrunk = <T>(name: string, write: () => T): T =>
  translateUniqueViolations('trunks', [[['telephony_configuration_id', 'name'], () => duplicateTrunk(name)]], write)

export function listTrunks(ctx: AppContext, organizationId: number, configurationId: number): { trunks: TrunkView[] } {
  requireTrunkConfiguration(ctx, organizationId, configurationId)
  return { trunks: trunkViews(ctx, configurationId) }
}

export function createTrunk(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  body: CreateTrunkBody,
): TrunkView {
  requireTrunkConfiguration(ctx, organizationId, configurationId)
  const trunk = validatedTrunk(body.name, body.settings ?? {})
  const now = isoNow(ctx.clock)
  const row = writeTrunk(trunk.name, () =>
    ctx.db
      .insert(trunks)
      .values({
        organizationId,
        telephonyConfigurationId: configurationId,
        name: trunk.name,
        enabled: body.enabled ?? true,
        settings: trunk.settings,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get(),
  )
  return trunkView(row, 0)
}

export function updateTrunk(
  ctx: AppContext,
  organizationId: number,
  configurationId: number,
  trunkId: number,
  body: UpdateTrunkBody,
): TrunkView {
  requireTrunkConfiguration(ctx, organizationId, configurationId)
  const stored = requireTrunk(ctx, configurationId, trunkId)
  const trunk = validatedTrunk(body.name ?? stored.name, body.settings ?? stored.settings)
  const row = writeTrunk(
    trunk.name,
    () =>
      ctx.db
        .update(trunks)
        .set({
          name: trunk.name,
          enabled: body.enabled ?? stored.enabled,
          settings: trunk.settings,
          updatedAt: isoNow(ctx.clock),
        })
        .where(eq(trunks.id, trunkId))
        .returning()
        .get()!,
  )
  return trunkView(row, attachedNumberCount(ctx, trunkId))
}

/** A trunk that numbers still dial out over stays (409). */
export function deleteTrunk(ctx: AppContext, organizationId: number, configurationId: number, trunkId: number): void {
  requireTrunkConfiguration(ctx, organizationId, configurationId)
  const stored = requireTrunk(ctx, configurationId, trunkId)
  const attached = attachedNumberCount(ctx, trunkId)
  if (attached > 0) {
    throw conflict(
      `${attached} phone number(s) dial out over '${stored.name}'. Move them to another trunk before deleting it.`,
    )
  }
  ctx.db.delete(trunks).where(eq(trunks.id, trunkId)).run()
}
