import type { Static, TObject, TSchema } from '@sinclair/typebox'
import { Kind, OptionalKind, Type as t } from '@sinclair/typebox'
import { checkValue, type Loc, type ValidationItem } from '../../lib/validation'
import { isPlainObject } from '../../lib/values'
import { ari, AriConfigSchema } from '../ari/metadata'
import { CARRIER_INFO } from '../carriers/registry'
import { CloudonixConfigSchema } from '../carriers/cloudonix'
import { ExotelConfigSchema } from '../carriers/exotel'
import { PlivoConfigSchema } from '../carriers/plivo'
import { PROVIDER_NAMES, type Credentials, type ProviderName } from '../../db/schema/telephony'
import {
  callerIdStep,
  type FieldOption,
  type FieldSpec,
  type FieldType,
  type ProviderInfo,
  type SetupFacts,
  type SetupStep,
} from '../provider-info'
import { TelnyxConfigSchema } from '../carriers/telnyx'
import { TwilioConfigSchema } from '../carriers/twilio'
import { VobizConfigSchema } from '../carriers/vobiz'
import { VonageConfigSchema } from '../carriers/vonage'
import { WhatsappConfigSchema } from '../carriers/whatsapp'

/**
 * The registry of telephony providers' metadata (schema, form fields, defaults, checklist), declared beside each
 * implementation (carriers/<name>.ts, ari/metadata.ts), and what is done with any of them (validation, stored
 * credentials, form metadata, checklists).
 */

export {
  PROVIDER_NAMES,
  type Credentials,
  type FieldOption,
  type FieldSpec,
  type FieldType,
  type ProviderInfo,
  type ProviderName,
  type SetupFacts,
  type SetupStep,
}

const VARIANT_SCHEMAS = {
  ari: AriConfigSchema,
  cloudonix: CloudonixConfigSchema,
  exotel: ExotelConfigSchema,
  plivo: PlivoConfigSchema,
  telnyx: TelnyxConfigSchema,
  twilio: TwilioConfigSchema,
  vobiz: VobizConfigSchema,
  vonage: VonageConfigSchema,
  whatsapp: WhatsappConfigSchema,
} satisfies Record<ProviderName, TObject>

export const PROVIDERS: Record<ProviderName, ProviderInfo> = { ari, ...CARRIER_INFO }

/** The `config` of a create request: one variant per provider, chosen by `provider`. */
export const TelephonyConfigSchema = t.Union(
  PROVIDER_NAMES.map((provider) => VARIANT_SCHEMAS[provider]),
  { discriminator: { propertyName: 'provider' } },
)

/** The `config` of an update request: the same variants with every field optional. */
export const TelephonyConfigPatchSchema = t.Union(
  PROVIDER_NAMES.map((provider) => t.Partial(VARIANT_SCHEMAS[provider])),
  { discriminator: { propertyName: 'provider' } },
)

/** A `config` that passed `validateConfig`; loosely typed because it still carries whatever else the client sent. */
export type ValidatedConfig = { provider: ProviderName } & Record<string, unknown>

type ServerManagedCredentials = {
  ari: { stasis_app_name?: string }
  cloudonix: { domain_uuid?: string; application_id?: string; application_uuid?: string | null }
  whatsapp: { webhook_verify_token: string }
}

/** Typed view of a provider's stored credentials, for adapters. */
export type ProviderCredentials<P extends ProviderName> = Required<
  Omit<Static<(typeof VARIANT_SCHEMAS)[P]>, 'provider' | 'from_numbers'>
> &
  (P extends keyof ServerManagedCredentials ? ServerManagedCredentials[P] : unknown)

export const isProviderName = (value: unknown): value is ProviderName =>
  typeof value === 'string' && (PROVIDER_NAMES as readonly string[]).includes(value)

/** Whether calls on the provider (a name as stored on a configuration or run) can be transferred. */
export const supportsCallTransfer = (provider: string): boolean =>
  isProviderName(provider) && PROVIDERS[provider].supportsCallTransfer

/** Dotted paths of the credentials that are encrypted at rest and masked in responses. */
export function sensitivePaths(provider: ProviderName): string[] {
  return PROVIDERS[provider].fields.filter((field) => field.sensitive).map((field) => field.name)
}

const objectBranch = (schema: TSchema): TObject | undefined => {
  if (schema[Kind] === 'Object') return schema as TObject
  if (schema[Kind] === 'Union')
    return (schema.anyOf as TSchema[]).find((branch) => branch[Kind] === 'Object') as TObject | undefined
  return undefined
}

/** Keeps only the declared properties of an already validated value and fills the absent ones that have a default. */
function withDefaults(schema: TObject, value: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {}
  for (const [key, propertySchema] of Object.entries(schema.properties)) {
    const propertyValue = value[key]
    if (propertyValue === undefined) {
      if (propertySchema.default !== undefined) result[key] = structuredClone(propertySchema.default)
      continue
    }
    const nestedObject = objectBranch(propertySchema)
    result[key] =
      nestedObject && isPlainObject(propertyValue) ? withDefaults(nestedObject, propertyValue) : propertyValue
  }
  return result
}

export function storableCredentials(provider: ProviderName, config: Record<string, unknown>): Credentials {
  const { provider: _tag, from_numbers: _ignored, ...declared } = withDefaults(VARIANT_SCHEMAS[provider], config)
  return PROVIDERS[provider].normaliseCredentials?.(declared) ?? declared
}

/**
 * Credentials to store for a validated create `config`: declared fields only, defaults filled,
 * without `provider` and `from_numbers`, normalised. Server-managed fields are not minted here.
 */
export function applyDefaults(config: ValidatedConfig): Credentials {
  return storableCredentials(config.provider, config)
}

/** `applyDefaults` plus the server-managed values a new configuration gets (ARI Stasis app, WhatsApp verify token). */
export function createCredentials(config: ValidatedConfig): Credentials {
  const minted = Object.fromEntries(
    PROVIDERS[config.provider].serverManaged.flatMap((field) => (field.mint ? [[field.name, field.mint()]] : [])),
  )
  return { ...applyDefaults(config), ...minted }
}

/** Validates a create `config` (every variant rule, Pydantic-shaped items, `loc` includes the provider tag). */
export function validateConfig(config: unknown, loc: Loc = ['body', 'config']): ValidationItem[] {
  const items = checkValue(TelephonyConfigSchema, config, loc)
  if (items.length > 0) return items
  const { provider } = config as { provider: ProviderName }
  return PROVIDERS[provider].crossFieldItems?.(config as Record<string, unknown>, loc) ?? []
}

/**
 * Validates an update `config`: the variant of `storedProvider` (or of the `provider` the patch names)
 * with nothing required. A patch naming another known provider passes here; the caller rejects the change.
 */
export function validatePartialUpdate(
  patch: unknown,
  storedProvider: ProviderName,
  loc: Loc = ['body', 'config'],
): ValidationItem[] {
  const tagged = isPlainObject(patch) && patch.provider === undefined ? { ...patch, provider: storedProvider } : patch
  const items = checkValue(TelephonyConfigPatchSchema, tagged, loc)
  if (items.length > 0) return items
  const { provider } = tagged as { provider: ProviderName }
  return PROVIDERS[provider].crossFieldItems?.(tagged as Record<string, unknown>, loc) ?? []
}

export type ProviderFieldMetadata = {
  name: string
  label: string
  type: FieldType
  required: boolean
  sensitive: boolean
  description: string | null
  placeholder: string | null
  options: FieldOption[] | null
  visible_when: { field: string; equals: unknown } | null
  section: string | null
}

export type ProviderMetadata = {
  provider: ProviderName
  display_name: string
  connectivity: 'api' | 'sip'
  fields: ProviderFieldMetadata[]
  supports_call_transfer: boolean
  docs_url: string | null
}

/** The schema at a dotted path and whether every step to it is required; undefined when not a request field. */
function lookupField(schema: TObject, dottedName: string): { schema: TSchema; required: boolean } | undefined {
  let current: TSchema = schema
  let required = true
  for (const segment of dottedName.split('.')) {
    const container = objectBranch(current)
    const property = container?.properties[segment]
    if (!property) return undefined
    required &&= current[Kind] === 'Object' && property[OptionalKind] !== 'Optional'
    current = property
  }
  return { schema: current, required }
}

function fieldMetadata(info: ProviderInfo, field: FieldSpec): ProviderFieldMetadata {
  const requestField = lookupField(info.schema, field.name)
  return {
    name: field.name,
    label: field.label,
    type: field.type,
    required: requestField?.required ?? false,
    sensitive: field.sensitive ?? false,
    description: field.description ?? requestField?.schema.description ?? null,
    placeholder: field.placeholder ?? null,
    options: field.options ?? null,
    visible_when: null,
    section: field.section ?? null,
  }
}

/** Body of the List Supported Providers endpoint: form definitions, sorted by provider name. */
export function providerMetadata(): { providers: ProviderMetadata[] } {
  return {
    providers: PROVIDER_NAMES.map((name) => {
      const info = PROVIDERS[name]
      return {
        provider: name,
        display_name: info.displayName,
        connectivity: info.connectivity,
        fields: info.fields.map((field) => fieldMetadata(info, field)),
        supports_call_transfer: info.supportsCallTransfer,
        docs_url: null,
      }
    }),
  }
}

export type SetupChecklist = {
  ready_for_outbound: boolean
  outbound_blocked_reason: string | null
  steps: SetupStep[]
  docs_url: string | null
}

/**
 * What is left to set up before a configuration can carry calls; null when the provider needs nothing (ARI).
 * Readiness is derived from the steps, so no provider can be ready while a blocking step is open.
 */
export function setupChecklist(provider: ProviderName, facts: SetupFacts): SetupChecklist | null {
  const info = PROVIDERS[provider]
  let steps: SetupStep[]
  if (info.setupSteps) steps = info.setupSteps(facts)
  else if (info.requiresCallerId) steps = [callerIdStep(info.displayName, facts.activeNumberCount)]
  else return null

  const firstBlocking = steps.find((step) => step.blocks_outbound && !step.complete)
  const blockedReason = info.supportsOutbound
    ? (firstBlocking?.description ?? null)
    : (info.noOutboundReason ?? `${info.displayName} configurations do not place outbound calls.`)
  return { ready_for_outbound: blockedReason === null, outbound_blocked_reason: blockedReason, steps, docs_url: null }
}
