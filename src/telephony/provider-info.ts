import { randomBytes } from 'node:crypto'
import type { TObject } from '@sinclair/typebox'
import { Type as t } from '@sinclair/typebox'
import type { Loc, ValidationItem } from '../lib/validation'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../lib/limits'
import type { Credentials, ProviderName } from '../db/schema/telephony'

// What every provider file declares, and the pieces several of them share.

/** The nine provider constants, sorted: the order of the union and of every listing. */
export const HTTP_URL_PATTERN = '^https?://\\S+$'

// The tag stays required: without it no variant can be chosen. Other fields with a default are optional in the
// schema too, so the generated OpenAPI does not list them as required.
export const providerTag = <P extends ProviderName>(provider: P) => t.Literal(provider, { default: provider })
export const nullableString = (description: string, maxLength = MAX_NAME_LENGTH) =>
  t.Optional(t.Union([t.String({ maxLength }), t.Null()], { default: null, description }))

export type FieldType = 'text' | 'password' | 'textarea' | 'string-array' | 'number' | 'boolean' | 'select' | 'readonly'
export type FieldOption = { value: string; label: string }

/** One form field of a provider as declared here; `required` and a missing description come from the schema. */
export type FieldSpec = {
  name: string
  label: string
  type: FieldType
  sensitive?: boolean
  /**
   * Where the configuration connects (a URL): the sensitive fields beside it (same parent object) are sent there, so
   * changing it needs them sent again in clear, never kept from storage or given as masks.
   */
  destination?: true
  description?: string
  placeholder?: string
  options?: FieldOption[]
  section?: string
}

/** A credential the server sets itself; never read from a request. */
export type ServerManagedField = {
  name: string
  shownInResponse: boolean
  mint?: () => string
}

export type SetupStep = { key: string; title: string; description: string; complete: boolean; blocks_outbound: boolean }

/** Counts the checklist is derived from; the trunk and inbound counts matter only to providers with trunks. */
export type SetupFacts = {
  activeNumberCount: number
  enabledTrunkCount?: number
  activeNumbersWithoutTrunkCount?: number
  activeNumbersWithInboundAgentCount?: number
}

export type ProviderInfo = {
  name: ProviderName
  displayName: string
  connectivity: 'api' | 'sip'
  schema: TObject
  /** Form fields in display order; nested fields use dotted names. Also the source of sensitive paths. */
  fields: FieldSpec[]
  serverManaged: ServerManagedField[]
  supportsTrunks: boolean
  supportsOutbound: boolean
  /** Whether its calls can be handed to another destination (transfer_call tools; carriers: their Carrier's `transfer`). */
  supportsCallTransfer: boolean
  /** Why a provider without outbound calls has none (its checklist's blocked reason). */
  noOutboundReason?: string
  supportsPhoneNumberSync: boolean
  requiresCallerId: boolean
  /** The checklist's steps; without them a provider that requires a caller id has that one step, others none. */
  setupSteps?: (facts: SetupFacts) => SetupStep[]
  /** Rewrites stored credentials into their canonical form. */
  normaliseCredentials?: (credentials: Credentials) => Credentials
  /** Rules across fields that a schema cannot state, on a `config` that passed its schema. */
  crossFieldItems?: (config: Record<string, unknown>, loc: Loc) => ValidationItem[]
}

export const randomHex = (bytes: number) => randomBytes(bytes).toString('hex')

const APPLICATION_ACCOUNT_FIELDS: FieldSpec[] = [
  { name: 'auth_id', label: 'Auth ID', type: 'text', sensitive: true },
  { name: 'auth_token', label: 'Auth Token', type: 'password', sensitive: true },
  { name: 'application_id', label: 'Application ID', type: 'text', placeholder: 'Created on save when empty' },
]

export const applicationAccountSchema = <P extends 'plivo' | 'vobiz'>(provider: P) =>
  t.Object({
    provider: providerTag(provider),
    auth_id: t.String({ maxLength: MAX_NAME_LENGTH, description: 'Auth ID of the account.' }),
    auth_token: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'Auth token of the account.' }),
    application_id: nullableString(
      'Application whose answer URL receives inbound calls. When omitted, one is created on save and its id is stored.',
    ),
  })

/** What most carrier accounts have in common: outbound calls from caller ids synced with the provider, no trunks. */
export const CARRIER_ACCOUNT = {
  serverManaged: [],
  supportsTrunks: false,
  supportsOutbound: true,
  supportsCallTransfer: true,
  supportsPhoneNumberSync: true,
  requiresCallerId: true,
} as const satisfies Partial<ProviderInfo>

export function callerIdStep(displayName: string, activeNumberCount: number): SetupStep {
  return {
    key: 'caller_id',
    title: 'Add a caller ID number',
    description: `Outbound calls need a number to call from: add at least one active ${displayName} number under Phone numbers.`,
    complete: activeNumberCount > 0,
    blocks_outbound: true,
  }
}

/** The metadata of a Plivo-compatible account (Plivo, Vobiz): the same fields and capabilities under its own name. */
export const applicationAccount = (name: 'plivo' | 'vobiz', displayName: string, schema: TObject): ProviderInfo => ({
  name,
  displayName,
  connectivity: 'api',
  schema,
  fields: APPLICATION_ACCOUNT_FIELDS,
  ...CARRIER_ACCOUNT,
})
