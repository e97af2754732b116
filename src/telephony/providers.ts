import { randomBytes } from 'node:crypto'
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import { Kind, OptionalKind } from '@sinclair/typebox'
import { Type as t } from '@sinclair/typebox'
import { checkValue, valueError, type Loc, type ValidationItem } from '../lib/validation'
import { isPlainObject } from '../lib/values'

/** The nine provider constants, sorted: the order of the union and of every listing. */
export const PROVIDER_NAMES = ['ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp'] as const
export type ProviderName = (typeof PROVIDER_NAMES)[number]

/** Provider-specific credentials as stored on a configuration row (decrypted form); free-form by design. */
export type Credentials = Record<string, unknown>

const HTTP_URL_PATTERN = '^https?://\\S+$'
const DEFAULT_PBX_API_SOURCE = 'ringbase'

// The tag stays required: without it no variant can be chosen. Other fields with a default are optional in the
// schema too, so the generated OpenAPI does not list them as required.
const providerTag = <P extends ProviderName>(provider: P) => t.Literal(provider, { default: provider })
const nullableString = (description: string) => t.Optional(t.Union([t.String(), t.Null()], { default: null, description }))

const VicidialAgentApiSchema = t.Object({
  url: t.String({ minLength: 1, pattern: HTTP_URL_PATTERN, description: 'Full http(s) URL of the VICIdial agent API (agc/api.php).' }),
  username: t.String({ minLength: 1, description: 'VICIdial agent API user.' }),
  password: t.String({ minLength: 1, description: 'Password of the VICIdial agent API user.' }),
  source: t.Optional(t.String({ default: DEFAULT_PBX_API_SOURCE, description: 'Source tag sent with every agent API request.' })),
})

const VicidialNonAgentApiSchema = t.Object({
  url: t.Optional(t.Union([t.String({ pattern: '^(https?://\\S+)?$' }), t.Null()], {
    default: null,
    description: 'Full http(s) URL of the VICIdial non-agent API (non_agent_api.php). Empty disables it.',
  })),
  username: nullableString('VICIdial non-agent API user.'),
  password: nullableString('Password of the VICIdial non-agent API user.'),
  source: t.Optional(t.String({ default: DEFAULT_PBX_API_SOURCE, description: 'Source tag sent with every non-agent API request.' })),
})

const ExternalPbxSchema = t.Object({
  type: t.Optional(t.Literal('vicidial', { default: 'vicidial', description: 'Kind of external PBX adapter.' })),
  agent_api: VicidialAgentApiSchema,
  non_agent_api: t.Optional(t.Union([VicidialNonAgentApiSchema, t.Null()], { default: null, description: 'Optional API used for lead updates.' })),
  timeout_seconds: t.Optional(t.Integer({ minimum: 1, maximum: 30, default: 8, description: 'Timeout of each request to the PBX, in seconds.' })),
})

const AriConfigSchema = t.Object({
  provider: providerTag('ari'),
  ari_endpoint: t.String({ pattern: HTTP_URL_PATTERN, description: 'ARI base URL without /ari, e.g. http://pbx.example.com:8088.' }),
  app_name: t.String({ description: 'ARI username (the section name in ari.conf).' }),
  app_password: t.String({ description: 'ARI password.' }),
  ws_client_name: t.Optional(t.String({ default: '', description: 'Connection name in websocket_client.conf used for external media.' })),
  dial_string_template: t.Optional(t.String({
    default: 'PJSIP/{number}',
    pattern: '\\{number\\}',
    description: 'How a destination is dialled; {number} is replaced by it. A destination that already names a channel technology (PJSIP/, SIP/, IAX2/, Local/, DAHDI/) is dialled as written.',
  })),
  external_pbx: t.Optional(t.Union([ExternalPbxSchema, t.Null()], { default: null, description: 'External PBX reached through this Asterisk.' })),
})

const CloudonixConfigSchema = t.Object({
  provider: providerTag('cloudonix'),
  bearer_token: t.String({ description: 'API bearer token.' }),
  domain_id: t.String({ description: 'Domain name; a bare name gets .cloudonix.net appended.' }),
  application_name: nullableString('Voice application name. When omitted, one is created on save and its name is stored.'),
})

const ExotelConfigSchema = t.Object({
  provider: providerTag('exotel'),
  account_sid: t.String({ description: 'Account SID.' }),
  api_key: t.String({ description: 'API key.' }),
  api_token: t.String({ description: 'API token.' }),
  api_base_url: t.Optional(t.String({
    default: 'https://api.in.exotel.com',
    pattern: HTTP_URL_PATTERN,
    description: 'Regional API base URL; the default is the India region.',
  })),
  from_numbers: t.Optional(t.Array(t.String(), { description: 'Ignored: phone numbers are managed through the phone-number endpoints.' })),
})

const applicationAccountSchema = <P extends 'plivo' | 'vobiz'>(provider: P) =>
  t.Object({
    provider: providerTag(provider),
    auth_id: t.String({ description: 'Auth ID of the account.' }),
    auth_token: t.String({ description: 'Auth token of the account.' }),
    application_id: nullableString('Application whose answer URL receives inbound calls. When omitted, one is created on save and its id is stored.'),
  })

const PlivoConfigSchema = applicationAccountSchema('plivo')
const VobizConfigSchema = applicationAccountSchema('vobiz')

const TelnyxConfigSchema = t.Object({
  provider: providerTag('telnyx'),
  api_key: t.String({ description: 'API key.' }),
  connection_id: nullableString('Call Control application id. When omitted, one is created on save and its id is stored.'),
  webhook_public_key: nullableString('Public key used to verify webhook signatures.'),
})

const TwilioConfigSchema = t.Object({
  provider: providerTag('twilio'),
  account_sid: t.String({ description: 'Account SID.' }),
  auth_token: t.String({ description: 'Auth token.' }),
})

const VonageConfigSchema = t.Object({
  provider: providerTag('vonage'),
  api_key: t.String({ description: 'API key.' }),
  api_secret: t.String({ description: 'API secret.' }),
  application_id: t.String({ description: 'Voice application id.' }),
  private_key: t.String({ description: 'Private key of the application, used to sign JWTs.' }),
  signature_secret: nullableString('Secret used to verify signed webhooks.'),
})

const WhatsappConfigSchema = t.Object({
  provider: providerTag('whatsapp'),
  access_token: t.String({ minLength: 1, description: 'Access token of the business account.' }),
  waba_id: t.String({ minLength: 1, description: 'Business account id.' }),
  app_secret: t.String({ minLength: 1, description: 'App secret used to verify webhook signatures.' }),
})

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

export type TelephonyConfig = Static<typeof TelephonyConfigSchema>

/** A `config` that passed `validateConfig`; loosely typed because it still carries whatever else the client sent. */
export type ValidatedConfig = { provider: ProviderName } & Record<string, unknown>

type ServerManagedCredentials = {
  ari: { stasis_app_name?: string }
  cloudonix: { domain_uuid?: string; application_id?: string; application_uuid?: string | null }
  whatsapp: { webhook_verify_token: string }
}

/** Typed view of a provider's stored credentials, for adapters. */
export type ProviderCredentials<P extends ProviderName> = Required<Omit<Static<(typeof VARIANT_SCHEMAS)[P]>, 'provider' | 'from_numbers'>> &
  (P extends keyof ServerManagedCredentials ? ServerManagedCredentials[P] : unknown)

export type FieldType = 'text' | 'password' | 'textarea' | 'string-array' | 'number' | 'boolean' | 'select' | 'readonly'
export type FieldOption = { value: string; label: string }

/** One form field of a provider as declared here; `required` and a missing description come from the schema. */
export type FieldSpec = {
  name: string
  label: string
  type: FieldType
  sensitive?: boolean
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
  supportsPhoneNumberSync: boolean
  requiresCallerId: boolean
}

const randomHex = (bytes: number) => randomBytes(bytes).toString('hex')

const EXTERNAL_PBX_SECTION = 'External PBX'

const APPLICATION_ACCOUNT_FIELDS: FieldSpec[] = [
  { name: 'auth_id', label: 'Auth ID', type: 'text', sensitive: true },
  { name: 'auth_token', label: 'Auth Token', type: 'password', sensitive: true },
  { name: 'application_id', label: 'Application ID', type: 'text', placeholder: 'Created on save when empty' },
]

/** What most carrier accounts have in common: outbound calls from caller ids synced with the provider, no trunks. */
const CARRIER_ACCOUNT = {
  serverManaged: [],
  supportsTrunks: false,
  supportsOutbound: true,
  supportsPhoneNumberSync: true,
  requiresCallerId: true,
} as const satisfies Partial<ProviderInfo>

export const PROVIDERS: Record<ProviderName, ProviderInfo> = {
  ari: {
    name: 'ari',
    displayName: 'Asterisk ARI',
    connectivity: 'sip',
    schema: AriConfigSchema,
    fields: [
      { name: 'ari_endpoint', label: 'ARI URL', type: 'text', placeholder: 'http://pbx.example.com:8088' },
      { name: 'app_name', label: 'ARI Username', type: 'text' },
      { name: 'app_password', label: 'ARI Password', type: 'password', sensitive: true },
      { name: 'ws_client_name', label: 'WebSocket Client Name', type: 'text', placeholder: 'ringbase_media' },
      { name: 'dial_string_template', label: 'Dial String Template', type: 'text', placeholder: 'PJSIP/{number}' },
      {
        name: 'stasis_app_name', label: 'Stasis Application', type: 'readonly',
        description: 'Assigned by the server on create. Route calls to it in the dialplan with Stasis(<name>).',
      },
      {
        name: 'external_pbx.type', label: 'PBX Type', type: 'select', section: EXTERNAL_PBX_SECTION,
        options: [{ value: 'vicidial', label: 'VICIdial' }],
      },
      { name: 'external_pbx.agent_api.url', label: 'Agent API URL', type: 'text', section: EXTERNAL_PBX_SECTION, placeholder: 'https://dialer.example.com/agc/api.php' },
      { name: 'external_pbx.agent_api.username', label: 'Agent API Username', type: 'text', sensitive: true, section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.agent_api.password', label: 'Agent API Password', type: 'password', sensitive: true, section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.agent_api.source', label: 'Agent API Source', type: 'text', section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.non_agent_api.url', label: 'Non-Agent API URL', type: 'text', section: EXTERNAL_PBX_SECTION, placeholder: 'https://dialer.example.com/vicidial/non_agent_api.php' },
      { name: 'external_pbx.non_agent_api.username', label: 'Non-Agent API Username', type: 'text', sensitive: true, section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.non_agent_api.password', label: 'Non-Agent API Password', type: 'password', sensitive: true, section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.non_agent_api.source', label: 'Non-Agent API Source', type: 'text', section: EXTERNAL_PBX_SECTION },
      { name: 'external_pbx.timeout_seconds', label: 'Request Timeout (seconds)', type: 'number', section: EXTERNAL_PBX_SECTION },
    ],
    // A Stasis app is delivered only to the websocket that registered it last, so each configuration gets its own name.
    serverManaged: [{ name: 'stasis_app_name', shownInResponse: true, mint: () => `ringbase_${randomHex(6)}` }],
    supportsTrunks: false,
    supportsOutbound: true,
    supportsPhoneNumberSync: false,
    requiresCallerId: false,
  },
  cloudonix: {
    name: 'cloudonix',
    displayName: 'Cloudonix',
    connectivity: 'sip',
    schema: CloudonixConfigSchema,
    fields: [
      { name: 'bearer_token', label: 'Bearer Token', type: 'password', sensitive: true },
      { name: 'domain_id', label: 'Domain', type: 'text', placeholder: 'example.cloudonix.net' },
      { name: 'application_name', label: 'Voice Application Name', type: 'text', placeholder: 'Created on save when empty' },
    ],
    serverManaged: [
      { name: 'domain_uuid', shownInResponse: false },
      { name: 'application_id', shownInResponse: false },
      { name: 'application_uuid', shownInResponse: false },
    ],
    supportsTrunks: true,
    supportsOutbound: true,
    supportsPhoneNumberSync: true,
    requiresCallerId: true,
  },
  exotel: {
    name: 'exotel',
    displayName: 'Exotel',
    connectivity: 'api',
    schema: ExotelConfigSchema,
    fields: [
      { name: 'account_sid', label: 'Account SID', type: 'text', sensitive: true },
      { name: 'api_key', label: 'API Key', type: 'password', sensitive: true },
      { name: 'api_token', label: 'API Token', type: 'password', sensitive: true },
      { name: 'api_base_url', label: 'API Base URL', type: 'text', placeholder: 'https://api.in.exotel.com' },
    ],
    serverManaged: [],
    supportsTrunks: false,
    supportsOutbound: true,
    // Inbound routing on this provider is configured in its own console, not over its API.
    supportsPhoneNumberSync: false,
    requiresCallerId: true,
  },
  plivo: {
    name: 'plivo',
    displayName: 'Plivo',
    connectivity: 'api',
    schema: PlivoConfigSchema,
    fields: APPLICATION_ACCOUNT_FIELDS,
    ...CARRIER_ACCOUNT,
  },
  telnyx: {
    name: 'telnyx',
    displayName: 'Telnyx',
    connectivity: 'api',
    schema: TelnyxConfigSchema,
    fields: [
      { name: 'api_key', label: 'API Key', type: 'password', sensitive: true },
      { name: 'connection_id', label: 'Connection ID', type: 'text', placeholder: 'Created on save when empty' },
      { name: 'webhook_public_key', label: 'Webhook Public Key', type: 'text' },
    ],
    ...CARRIER_ACCOUNT,
  },
  twilio: {
    name: 'twilio',
    displayName: 'Twilio',
    connectivity: 'api',
    schema: TwilioConfigSchema,
    fields: [
      { name: 'account_sid', label: 'Account SID', type: 'text', sensitive: true, placeholder: 'AC...' },
      { name: 'auth_token', label: 'Auth Token', type: 'password', sensitive: true },
    ],
    ...CARRIER_ACCOUNT,
  },
  vobiz: {
    name: 'vobiz',
    displayName: 'Vobiz',
    connectivity: 'api',
    schema: VobizConfigSchema,
    fields: APPLICATION_ACCOUNT_FIELDS,
    ...CARRIER_ACCOUNT,
  },
  vonage: {
    name: 'vonage',
    displayName: 'Vonage',
    connectivity: 'api',
    schema: VonageConfigSchema,
    fields: [
      { name: 'api_key', label: 'API Key', type: 'text', sensitive: true },
      { name: 'api_secret', label: 'API Secret', type: 'password', sensitive: true },
      { name: 'application_id', label: 'Application ID', type: 'text' },
      { name: 'private_key', label: 'Private Key', type: 'textarea', sensitive: true, placeholder: '-----BEGIN PRIVATE KEY-----' },
      { name: 'signature_secret', label: 'Signature Secret', type: 'password', sensitive: true },
    ],
    ...CARRIER_ACCOUNT,
  },
  whatsapp: {
    name: 'whatsapp',
    displayName: 'WhatsApp Business',
    connectivity: 'api',
    schema: WhatsappConfigSchema,
    fields: [
      { name: 'access_token', label: 'Access Token', type: 'password', sensitive: true },
      { name: 'waba_id', label: 'Business Account ID', type: 'text' },
      { name: 'app_secret', label: 'App Secret', type: 'password', sensitive: true },
      {
        name: 'webhook_verify_token', label: 'Webhook Verify Token', type: 'readonly',
        description: 'Assigned by the server on create. Paste it into the webhook settings of your app.',
      },
    ],
    // Shown in clear: the admin copies it into the provider's console.
    serverManaged: [{ name: 'webhook_verify_token', shownInResponse: true, mint: () => randomHex(16) }],
    supportsTrunks: false,
    // It carries calls of a messaging app, not PSTN calls.
    supportsOutbound: false,
    supportsPhoneNumberSync: false,
    requiresCallerId: false,
  },
}

export const isProviderName = (value: unknown): value is ProviderName =>
  typeof value === 'string' && (PROVIDER_NAMES as readonly string[]).includes(value)

/** Dotted paths of the credentials that are encrypted at rest and masked in responses. */
export function sensitivePaths(provider: ProviderName): string[] {
  return PROVIDERS[provider].fields.filter((field) => field.sensitive).map((field) => field.name)
}

const objectBranch = (schema: TSchema): TObject | undefined => {
  if (schema[Kind] === 'Object') return schema as TObject
  if (schema[Kind] === 'Union') return (schema.anyOf as TSchema[]).find((branch) => branch[Kind] === 'Object') as TObject | undefined
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
    result[key] = nestedObject && isPlainObject(propertyValue) ? withDefaults(nestedObject, propertyValue) : propertyValue
  }
  return result
}

/** Trimmed, lowercased, without a trailing dot; a bare name is a subdomain of the provider's own domain. */
function normaliseCloudonixDomain(domain: string): string {
  const cleaned = domain.trim().replace(/\.+$/, '').toLowerCase()
  return cleaned === '' || cleaned.includes('.') ? cleaned : `${cleaned}.cloudonix.net`
}

function normaliseCredentials(provider: ProviderName, credentials: Credentials): Credentials {
  if (provider === 'cloudonix' && typeof credentials.domain_id === 'string') {
    return { ...credentials, domain_id: normaliseCloudonixDomain(credentials.domain_id) }
  }
  if (provider === 'ari' && isPlainObject(credentials.external_pbx)) {
    const nonAgentApi = credentials.external_pbx.non_agent_api
    if (isPlainObject(nonAgentApi) && !nonAgentApi.url) {
      return { ...credentials, external_pbx: { ...credentials.external_pbx, non_agent_api: null } }
    }
  }
  return credentials
}

export function storableCredentials(provider: ProviderName, config: Record<string, unknown>): Credentials {
  const { provider: _tag, from_numbers: _ignored, ...declared } = withDefaults(VARIANT_SCHEMAS[provider], config)
  return normaliseCredentials(provider, declared)
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

/** Rules across fields that a schema cannot state. */
function crossFieldItems(provider: ProviderName, config: Record<string, unknown>, loc: Loc): ValidationItem[] {
  if (provider !== 'ari' || !isPlainObject(config.external_pbx)) return []
  const nonAgentApi = config.external_pbx.non_agent_api
  if (!isPlainObject(nonAgentApi) || !nonAgentApi.url) return []
  if (nonAgentApi.username && nonAgentApi.password) return []
  return [valueError([...loc, provider, 'external_pbx', 'non_agent_api'], 'non_agent_api needs url, username and password together', nonAgentApi)]
}

/** Validates a create `config` (every variant rule, Pydantic-shaped items, `loc` includes the provider tag). */
export function validateConfig(config: unknown, loc: Loc = ['body', 'config']): ValidationItem[] {
  const items = checkValue(TelephonyConfigSchema, config, loc)
  if (items.length > 0) return items
  const { provider } = config as { provider: ProviderName }
  return crossFieldItems(provider, config as Record<string, unknown>, loc)
}

/**
 * Validates an update `config`: the variant of `storedProvider` (or of the `provider` the patch names)
 * with nothing required. A patch naming another known provider passes here; the caller rejects the change.
 */
export function validatePartialUpdate(patch: unknown, storedProvider: ProviderName, loc: Loc = ['body', 'config']): ValidationItem[] {
  const tagged = isPlainObject(patch) && patch.provider === undefined ? { ...patch, provider: storedProvider } : patch
  const items = checkValue(TelephonyConfigPatchSchema, tagged, loc)
  if (items.length > 0) return items
  const { provider } = tagged as { provider: ProviderName }
  return crossFieldItems(provider, tagged as Record<string, unknown>, loc)
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
        docs_url: null,
      }
    }),
  }
}

export type SetupStep = { key: string; title: string; description: string; complete: boolean; blocks_outbound: boolean }

export type SetupChecklist = {
  ready_for_outbound: boolean
  outbound_blocked_reason: string | null
  steps: SetupStep[]
  docs_url: string | null
}

/** Counts the checklist is derived from; the trunk and inbound counts matter only to providers with trunks. */
export type SetupFacts = {
  activeNumberCount: number
  enabledTrunkCount?: number
  activeNumbersWithoutTrunkCount?: number
  activeNumbersWithInboundWorkflowCount?: number
}

function callerIdStep(displayName: string, activeNumberCount: number): SetupStep {
  return {
    key: 'caller_id',
    title: 'Add a caller ID number',
    description: `Outbound calls need a number to call from: add at least one active ${displayName} number under Phone numbers.`,
    complete: activeNumberCount > 0,
    blocks_outbound: true,
  }
}

function cloudonixSteps(facts: SetupFacts): SetupStep[] {
  const enabledTrunks = facts.enabledTrunkCount ?? 0
  const steps: SetupStep[] = [
    {
      key: 'outbound_trunk',
      title: 'Add an outbound trunk',
      description: 'Add an enabled trunk to choose the region calls leave through; without one the domain default is used.',
      complete: enabledTrunks > 0,
      blocks_outbound: false,
    },
    callerIdStep('Cloudonix', facts.activeNumberCount),
  ]
  if (enabledTrunks > 1) {
    steps.push({
      key: 'trunk_assignment',
      title: 'Assign numbers to trunks',
      description: 'With more than one trunk, pick the trunk of each active number.',
      complete: (facts.activeNumbersWithoutTrunkCount ?? 0) === 0,
      blocks_outbound: false,
    })
  }
  steps.push({
    key: 'inbound_routing',
    title: 'Route inbound calls to an agent',
    description: 'Attach an agent to at least one active number to answer calls to it.',
    complete: (facts.activeNumbersWithInboundWorkflowCount ?? 0) > 0,
    blocks_outbound: false,
  })
  return steps
}

function whatsappSteps(facts: SetupFacts): SetupStep[] {
  return [{
    key: 'business_number',
    title: 'Add your business number',
    description: 'Calls are routed by the business phone number: add it under Phone numbers.',
    complete: facts.activeNumberCount > 0,
    blocks_outbound: false,
  }]
}

/**
 * What is left to set up before a configuration can carry calls; null when the provider needs nothing (ARI).
 * Readiness is derived from the steps, so no provider can be ready while a blocking step is open.
 */
export function setupChecklist(provider: ProviderName, facts: SetupFacts): SetupChecklist | null {
  const info = PROVIDERS[provider]
  let steps: SetupStep[]
  if (provider === 'cloudonix') steps = cloudonixSteps(facts)
  else if (provider === 'whatsapp') steps = whatsappSteps(facts)
  else if (info.requiresCallerId) steps = [callerIdStep(info.displayName, facts.activeNumberCount)]
  else return null

  const firstBlocking = steps.find((step) => step.blocks_outbound && !step.complete)
  const blockedReason = info.supportsOutbound
    ? firstBlocking?.description ?? null
    : `${info.displayName} configurations do not place outbound calls.`
  return { ready_for_outbound: blockedReason === null, outbound_blocked_reason: blockedReason, steps, docs_url: null }
}
