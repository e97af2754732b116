import { Type as t, type Static } from '@sinclair/typebox'
import { TelephonyConfigSchema } from './providers'

const DateTime = t.String({ format: 'date-time' })

const NullableDateTime = t.Union([DateTime, t.Null()])

const NullableString = t.Union([t.String(), t.Null()])

const NullableInteger = t.Union([t.Integer(), t.Null()])

const FreeFormObject = (description: string) => t.Record(t.String(), t.Unknown(), { description })

const ConfigurationName = t.String({ minLength: 1, maxLength: 64 })

export const CreateConfigurationBody = t.Object({
  name: ConfigurationName,
  is_default_outbound: t.Optional(
    t.Boolean({
      default: false,
      description: 'Make it the organization default for outbound calls (unsets the current one).',
    }),
  ),
  config: TelephonyConfigSchema,
})

export const UpdateConfigurationBody = t.Object({
  name: t.Optional(t.Union([ConfigurationName, t.Null()])),
  config: t.Optional(
    t.Union([
      FreeFormObject(
        "The fields to change, in the shape of the configuration's provider variant; `provider` may be left out and cannot change. " +
          'A sensitive value equal to its mask in a GET response keeps the stored secret.',
      ),
      t.Null(),
    ]),
  ),
})

const SetupStepView = t.Object({
  key: t.String(),
  title: t.String(),
  description: t.String(),
  complete: t.Boolean(),
  blocks_outbound: t.Boolean(),
})

const SetupChecklistView = t.Object({
  ready_for_outbound: t.Boolean({ description: 'False while any step that blocks outbound calls is incomplete.' }),
  outbound_blocked_reason: NullableString,
  steps: t.Array(SetupStepView),
  docs_url: NullableString,
})

const SipConnectivityView = t.Object({
  provider_display_name: t.String(),
  regions: t.Array(
    t.Object({
      region: t.String(),
      inbound_transports: t.Array(
        t.Object({ transport: t.String(), hostname: t.String(), port: t.Integer(), uri: t.String() }),
      ),
      outbound_origin_ip: t.String(),
    }),
  ),
})

export const TrunkView = t.Object({
  id: t.Integer(),
  name: t.String(),
  enabled: t.Boolean(),
  settings: FreeFormObject("The provider's trunk settings."),
  phone_number_count: t.Integer(),
  created_at: DateTime,
  updated_at: DateTime,
})

export type TrunkView = Static<typeof TrunkView>

export const TrunkList = t.Object({ trunks: t.Array(TrunkView) })

const Connectivity = t.Union([t.Literal('api'), t.Literal('sip')])

const Connected = t.Union([t.Boolean(), t.Null()], {
  description: 'ARI: whether the events connection to Asterisk is up. Null for providers reached over HTTP.',
})

/** Fields of list items and details alike. */
const configurationSummaryFields = {
  id: t.Integer(),
  name: t.String(),
  provider: t.String(),
  connectivity: Connectivity,
  is_default_outbound: t.Boolean(),
  inactive: t.Boolean(),
  inactive_since: NullableDateTime,
  inactive_reason: NullableString,
  supports_outbound: t.Boolean(),
  supports_phone_number_sync: t.Boolean(),
  connected: Connected,
  created_at: DateTime,
  updated_at: DateTime,
}

export const ConfigurationDetail = t.Object({
  ...configurationSummaryFields,
  credentials: FreeFormObject('Provider credentials; sensitive values show only their last 4 characters.'),
  sip_connectivity: t.Union([SipConnectivityView, t.Null()]),
  setup_checklist: t.Union([SetupChecklistView, t.Null()]),
  supports_trunks: t.Boolean(),
  trunks: t.Array(TrunkView),
})

export type ConfigurationDetail = Static<typeof ConfigurationDetail>

const ConfigurationListItem = t.Object({
  ...configurationSummaryFields,
  phone_number_count: t.Integer({ description: 'Active phone numbers.' }),
  is_ready_for_outbound: t.Boolean(),
  outbound_blocked_reason: NullableString,
})

export type ConfigurationListItem = Static<typeof ConfigurationListItem>

export const ConfigurationList = t.Object({ configurations: t.Array(ConfigurationListItem) })

export const DeletedConfiguration = t.Object({ message: t.String() })

export const ProvidersMetadata = t.Object({
  providers: t.Array(
    t.Object({
      provider: t.String(),
      display_name: t.String(),
      connectivity: Connectivity,
      fields: t.Array(
        t.Object({
          name: t.String({ description: 'Dotted for nested fields, e.g. external_pbx.agent_api.url.' }),
          label: t.String(),
          type: t.String({
            description: 'text, password, textarea, string-array, number, boolean, select or readonly',
          }),
          required: t.Boolean(),
          sensitive: t.Boolean(),
          description: NullableString,
          placeholder: NullableString,
          options: t.Union([t.Array(t.Object({ value: t.String(), label: t.String() })), t.Null()]),
          visible_when: t.Union([t.Object({ field: t.String(), equals: t.Unknown() }), t.Null()]),
          section: NullableString,
        }),
      ),
      supports_call_transfer: t.Boolean({
        description:
          'Whether calls on this provider can be transferred (transfer_call tools); agents using them are refused at publish when the default configuration cannot.',
      }),
      docs_url: NullableString,
    }),
  ),
})

const CountryCode = t.String({
  minLength: 2,
  maxLength: 2,
  description: 'ISO 3166-1 alpha-2; needed for numbers written without a leading +.',
})

const Label = t.String({ maxLength: 64 })

export const CreatePhoneNumberBody = t.Object({
  address: t.String({
    minLength: 1,
    maxLength: 255,
    description: 'E.164 number, national number (with country_code), SIP URI or extension.',
  }),
  country_code: t.Optional(t.Union([CountryCode, t.Null()])),
  label: t.Optional(t.Union([Label, t.Null()])),
  inbound_workflow_id: t.Optional(NullableInteger),
  telephony_trunk_id: t.Optional(NullableInteger),
  is_active: t.Optional(t.Boolean({ default: true })),
  is_default_caller_id: t.Optional(
    t.Boolean({ default: false, description: 'Make it the caller id of one-off calls (unsets the current one).' }),
  ),
  extra_metadata: t.Optional(FreeFormObject('Free-form data kept with the number.')),
})

export type CreatePhoneNumberBody = Static<typeof CreatePhoneNumberBody>

export const UpdatePhoneNumberBody = t.Object(
  {
    label: t.Optional(t.Union([Label, t.Null()])),
    inbound_workflow_id: t.Optional(NullableInteger),
    clear_inbound_workflow: t.Optional(t.Boolean({ default: false })),
    telephony_trunk_id: t.Optional(NullableInteger),
    clear_trunk: t.Optional(t.Boolean({ default: false })),
    is_active: t.Optional(t.Union([t.Boolean(), t.Null()])),
    country_code: t.Optional(t.Union([CountryCode, t.Null()])),
    extra_metadata: t.Optional(t.Union([FreeFormObject('Replaces the stored metadata.'), t.Null()])),
  },
  {
    description:
      'Partial: null or absent means no change (use the clear_* flags to remove a link). The address cannot change.',
  },
)

export type UpdatePhoneNumberBody = Static<typeof UpdatePhoneNumberBody>

const ProviderSync = t.Union([t.Object({ ok: t.Boolean(), message: NullableString }), t.Null()])

export const PhoneNumberView = t.Object({
  id: t.Integer(),
  telephony_configuration_id: t.Integer(),
  address: t.String(),
  address_normalized: t.String(),
  address_type: t.Union([t.Literal('pstn'), t.Literal('sip_uri'), t.Literal('sip_extension')]),
  country_code: NullableString,
  label: NullableString,
  inbound_workflow_id: NullableInteger,
  inbound_workflow_name: NullableString,
  telephony_trunk_id: NullableInteger,
  is_active: t.Boolean(),
  is_default_caller_id: t.Boolean(),
  extra_metadata: FreeFormObject('Free-form data kept with the number.'),
  created_at: DateTime,
  updated_at: DateTime,
  provider_sync: ProviderSync,
})

export type PhoneNumberView = Static<typeof PhoneNumberView>

export const PhoneNumberList = t.Object({ phone_numbers: t.Array(PhoneNumberView) })

export const DeletedPhoneNumber = t.Object({ message: t.String(), provider_sync: ProviderSync })

const TrunkName = t.String({ minLength: 1, maxLength: 64 })

const TrunkSettings = FreeFormObject('Cloudonix: {region: India | UAE | Global, sip_domain}.')

export const CreateTrunkBody = t.Object({
  name: TrunkName,
  enabled: t.Optional(t.Boolean({ default: true })),
  settings: t.Optional(TrunkSettings),
})

export type CreateTrunkBody = Static<typeof CreateTrunkBody>

export const UpdateTrunkBody = t.Object(
  {
    name: t.Optional(t.Union([TrunkName, t.Null()])),
    enabled: t.Optional(t.Union([t.Boolean(), t.Null()])),
    settings: t.Optional(t.Union([TrunkSettings, t.Null()])),
  },
  { description: 'Partial: null or absent fields keep their stored value.' },
)

export type UpdateTrunkBody = Static<typeof UpdateTrunkBody>

export const TrunkDeleted = t.Object({ success: t.Boolean() })
