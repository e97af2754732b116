import { Type as t } from '@sinclair/typebox'
import { MAX_NAME_LENGTH, MAX_TOKEN_LENGTH } from '../lib/limits'

// The pattern is what the 422 mapping reports; `format` is for the OpenAPI document.
const Uuid = t.String({ format: 'uuid', maxLength: 36, pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' })

const Settings = t.Record(t.String(), t.Unknown())

const ServiceOverride = t.Object({
  settings: t.Optional(Settings),
  provider_connection_uuid: t.Optional(Uuid),
})

const FallbackRule = t.Object({
  condition: t.Object({
    type: t.String({ maxLength: MAX_TOKEN_LENGTH, description: 'When to switch, e.g. no_output.' }),
    after_ms: t.Optional(t.Integer({ minimum: 0 })),
  }),
  target: t.Object({ provider_connection_uuid: Uuid, settings: t.Optional(Settings) }),
})

/** Per-run model choices; validated here and stored with the run for the conversation engine. */
export const ModelOverrides = t.Object({
  model_configuration_uuid: t.Optional(Uuid),
  llm: t.Optional(ServiceOverride),
  stt: t.Optional(ServiceOverride),
  tts: t.Optional(ServiceOverride),
  realtime: t.Optional(ServiceOverride),
  embeddings: t.Optional(ServiceOverride),
  llm_fallback: t.Optional(t.Object({ version: t.Optional(t.Integer()), rules: t.Optional(t.Array(FallbackRule)) })),
})

export const TriggerCallBody = t.Object({
  phone_number: t.String({ maxLength: MAX_NAME_LENGTH, description: 'Number to call: E.164 for carriers; ARI also takes extensions, SIP URIs and dial strings.' }),
  initial_context: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()], {
    description: 'Runtime data for the agent, available to its prompts as template variables.',
  })),
  telephony_configuration_id: t.Optional(t.Union([t.Integer(), t.Null()], {
    description: 'Route through this configuration instead of the organization default.',
  })),
  from_phone_number_id: t.Optional(t.Union([t.Integer(), t.Null()], {
    description: 'An active caller id of the resolved telephony configuration.',
  })),
  model_overrides: t.Optional(t.Union([ModelOverrides, t.Null()])),
})

export const TriggerCallResponse = t.Object({
  status: t.Literal('initiated'),
  workflow_run_id: t.Integer(),
  workflow_run_name: t.String(),
})
