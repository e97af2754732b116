import { Type as t, type Static } from '@sinclair/typebox'
import { MAX_NAME_LENGTH, MAX_TOKEN_LENGTH } from '../lib/limits'
import { MODEL_PROVIDER_NAMES, MODEL_SERVICES } from './providers'
import { FLITE_VOICES } from './types'

/** Request and response shapes of provider connections, model configurations, run model overrides and price cards. */

// The pattern is what the 422 mapping reports; `format` is for the OpenAPI document.
export const Uuid = t.String({
  format: 'uuid',
  maxLength: 36,
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
})

const DateTime = t.String({ format: 'date-time' })
const Name = t.String({ minLength: 1, maxLength: 64 })
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

const ProviderName = t.Union(
  MODEL_PROVIDER_NAMES.map((name) => t.Literal(name)),
  {
    description: '`openai` is any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LocalAI, …) behind `base_url`.',
  },
)

const ApiKey = t.String({
  maxLength: 4096,
  description: 'Sent as `Authorization: Bearer …`. A masked value as a GET shows it keeps the stored key.',
})

export const CreateProviderConnectionBody = t.Object({
  name: Name,
  provider: ProviderName,
  base_url: t.Optional(
    t.String({
      maxLength: 2048,
      description:
        "Defaults to the provider's usual address (speaches has none: its default port is Ringbase's, 8000); ends before /chat/completions. Never this Ringbase server.",
    }),
  ),
  api_key: t.Optional(Nullable(ApiKey)),
})

export const UpdateProviderConnectionBody = t.Object({
  name: t.Optional(Name),
  provider: t.Optional(
    t.String({ maxLength: MAX_NAME_LENGTH, description: 'Cannot change; sending another provider is refused.' }),
  ),
  base_url: t.Optional(t.String({ maxLength: 2048 })),
  api_key: t.Optional(Nullable(ApiKey)),
})

export const ProviderConnectionView = t.Object({
  uuid: Uuid,
  name: t.String(),
  provider: t.String(),
  base_url: t.String(),
  api_key: Nullable(t.String({ description: 'Masked: `*` for all but the last 4 characters.' })),
  last_check: Nullable(
    t.Object(
      {
        ok: t.Boolean(),
        at: DateTime,
        error: Nullable(t.String()),
      },
      { description: 'The latest POST .../check of this server (null until one ran).' },
    ),
  ),
  created_at: DateTime,
  updated_at: DateTime,
})

export const ProviderConnectionList = t.Object({ connections: t.Array(ProviderConnectionView) })

export const ProviderConnectionCheck = t.Object({
  ok: t.Boolean(),
  models: t.Array(t.String(), { description: 'Model ids the server lists at GET {base_url}/models.' }),
  error: Nullable(t.String()),
})

export const LlmSettingsSchema = t.Object({
  model: t.Optional(
    t.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      description: "Defaults to the provider's usual model when it has one.",
    }),
  ),
  temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })),
  max_tokens: t.Optional(t.Integer({ minimum: 1 })),
})

export const SttSettingsSchema = t.Object({
  model: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  language: t.Optional(t.String({ minLength: 2, maxLength: 16, description: 'ISO 639-1, e.g. en' })),
  streaming: t.Optional(
    t.Union([t.Boolean(), t.Literal('openai'), t.Literal('vllm')], {
      description:
        "Transcribe while the caller speaks, over the server's realtime transcription socket (one per call) instead of uploading each utterance: true or 'openai' for the OpenAI Realtime API (<base URL>/realtime?intent=transcription), 'vllm' for vLLM's /v1/realtime; falls back to uploads when the socket fails.",
    }),
  ),
})

export const TtsSettingsSchema = t.Object({
  model: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  voice: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  speed: t.Optional(t.Number({ minimum: 0.25, maximum: 4 })),
})

export const EmbeddingsSettingsSchema = t.Object({
  model: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  dimensions: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: 4096,
      description:
        'Sent as `dimensions` to models that can shorten their vectors; any length is stored as it comes otherwise.',
    }),
  ),
})

export const RealtimeSettingsSchema = t.Object({
  model: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  voice: t.Optional(t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
  instructions: t.Optional(
    t.String({
      maxLength: 10_000,
      description: "Given to the model before every node's prompt (the node's prompt is the session's instructions).",
    }),
  ),
  turn_detection: t.Optional(
    t.Object(
      {
        type: t.Optional(t.Union([t.Literal('server_vad'), t.Literal('semantic_vad')])),
        threshold: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
        prefix_padding_ms: t.Optional(t.Integer({ minimum: 0, maximum: 10_000 })),
        silence_duration_ms: t.Optional(t.Integer({ minimum: 0, maximum: 10_000 })),
      },
      { description: "How the model decides the caller's turn is over (its own voice activity detection)." },
    ),
  ),
})

const BuiltinTts = t.Object(
  {
    builtin: t.Literal(true),
    settings: t.Optional(
      t.Object({
        voice: t.Optional(t.Union(FLITE_VOICES.map((voice) => t.Literal(voice)))),
      }),
    ),
  },
  { description: 'The voice built into the binary (Flite, US English); no model server needed.' },
)

const section = <S extends ReturnType<typeof t.Object>>(settings: S) =>
  t.Object({ provider_connection_uuid: Uuid, settings: t.Optional(settings) })

export const LlmSection = section(LlmSettingsSchema)
export const SttSection = section(SttSettingsSchema)
export const TtsSection = t.Union([section(TtsSettingsSchema), BuiltinTts])
export const EmbeddingsSection = section(EmbeddingsSettingsSchema)
/** A speech-to-speech model (OpenAI Realtime API over WebSocket): the call runs on it instead of STT → LLM → TTS. */
export const RealtimeSection = section(RealtimeSettingsSchema)

export const CreateModelConfigurationBody = t.Object({
  name: Name,
  is_default: t.Optional(
    t.Boolean({
      description:
        'The organization default (unsets the current one). The first configuration is the default unless false is sent.',
    }),
  ),
  llm: LlmSection,
  stt: t.Optional(Nullable(SttSection)),
  tts: t.Optional(Nullable(TtsSection)),
  embeddings: t.Optional(Nullable(EmbeddingsSection)),
  realtime: t.Optional(Nullable(RealtimeSection)),
})

export const UpdateModelConfigurationBody = t.Object({
  name: t.Optional(Name),
  is_default: t.Optional(t.Boolean()),
  llm: t.Optional(LlmSection),
  stt: t.Optional(Nullable(SttSection)),
  tts: t.Optional(Nullable(TtsSection)),
  embeddings: t.Optional(Nullable(EmbeddingsSection)),
  realtime: t.Optional(Nullable(RealtimeSection)),
})

const SectionView = t.Object({
  provider_connection_uuid: t.Optional(Uuid),
  builtin: t.Optional(t.Boolean()),
  settings: t.Record(t.String(), t.Unknown()),
})

export const ModelConfigurationView = t.Object({
  uuid: Uuid,
  name: t.String(),
  is_default: t.Boolean(),
  llm: SectionView,
  stt: Nullable(SectionView),
  tts: Nullable(SectionView),
  embeddings: Nullable(SectionView),
  realtime: Nullable(SectionView),
  created_at: DateTime,
  updated_at: DateTime,
})

export const ModelConfigurationList = t.Object({ configurations: t.Array(ModelConfigurationView) })

const Settings = t.Record(t.String(), t.Unknown())

const ServiceOverride = t.Object({
  settings: t.Optional(Settings),
  provider_connection_uuid: t.Optional(Uuid),
})

const FallbackRule = t.Object({
  condition: t.Object({
    type: t.String({
      maxLength: MAX_TOKEN_LENGTH,
      description: 'When to switch: no_output (no token after after_ms).',
    }),
    after_ms: t.Optional(t.Integer({ minimum: 0 })),
  }),
  target: t.Object({ provider_connection_uuid: Uuid, settings: t.Optional(Settings) }),
})

/** Per-run model choices: over the agent's configuration, over the organization default. */
export const ModelOverrides = t.Object({
  model_configuration_uuid: t.Optional(Uuid),
  llm: t.Optional(ServiceOverride),
  stt: t.Optional(ServiceOverride),
  tts: t.Optional(ServiceOverride),
  realtime: t.Optional(ServiceOverride),
  embeddings: t.Optional(ServiceOverride),
  llm_fallback: t.Optional(t.Object({ version: t.Optional(t.Integer()), rules: t.Optional(t.Array(FallbackRule)) })),
})

export type ModelOverridesInput = Static<typeof ModelOverrides>

const Price = t.Optional(t.Number({ minimum: 0 }))

export const PriceCardSchema = t.Object({
  currency: t.Optional(t.String({ maxLength: 3, pattern: '^[A-Z]{3}$', description: 'ISO 4217; default USD' })),
  llm_input_per_1k_tokens: Price,
  llm_output_per_1k_tokens: Price,
  stt_per_minute: Price,
  tts_per_1k_characters: Price,
  telephony_per_minute: Price,
})

export const PriceCardView = t.Object({
  price_card: Nullable(PriceCardSchema),
  updated_at: Nullable(DateTime),
})

const ServiceName = t.Union([
  t.Literal('llm'),
  t.Literal('stt'),
  t.Literal('tts'),
  t.Literal('embeddings'),
  t.Literal('realtime'),
]) satisfies { static: (typeof MODEL_SERVICES)[number] }

export const ModelProvidersMetadata = t.Object({
  providers: t.Array(
    t.Object({
      provider: t.String({ description: "The connection's `provider` value." }),
      label: t.String(),
      default_base_url: t.Union([t.String(), t.Null()], {
        description: 'null: a connection of this kind must name its server.',
      }),
      api_key: t.Union([t.Literal('required'), t.Literal('optional')]),
      services: t.Array(ServiceName, {
        description:
          'What a configuration section may use this kind of server for (llm, stt, tts, embeddings, realtime).',
      }),
      defaults: t.Record(t.String(), t.Record(t.String(), t.String()), {
        description: 'Per service, the model (and voice) a section gets when it names none.',
      }),
    }),
  ),
})
