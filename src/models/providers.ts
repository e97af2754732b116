/**
 * The kinds of model connection an organization can create. Every one speaks the OpenAI HTTP API; a preset only
 * supplies the default base URL, whether a key is needed and sensible default models. Facts from the reference
 * platform's registry, except that a connection has one base URL for all its services.
 */

export type ModelService = 'llm' | 'stt' | 'tts' | 'embeddings' | 'realtime'

export const MODEL_SERVICES: readonly ModelService[] = ['llm', 'stt', 'tts', 'embeddings', 'realtime']

export type ModelProviderPreset = {
  label: string
  /** Null when no usual address can be right: a connection of this kind names its own. */
  defaultBaseUrl: string | null
  apiKey: 'required' | 'optional'
  /** The services this kind of server offers, with the model (and voice) to suggest. */
  defaults: {
    llm?: { model: string }
    stt?: { model: string }
    tts?: { model: string; voice: string }
    embeddings?: { model: string }
    /** A speech-to-speech model on the OpenAI Realtime API (WebSocket `<base URL>/realtime`). */
    realtime?: { model: string; voice: string }
  }
}

export const MODEL_PROVIDERS = {
  openai: {
    label: 'OpenAI or any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LocalAI…)',
    defaultBaseUrl: 'https://api.openai.com/v1',
    // Optional because self-hosted servers behind this preset usually take none; OpenAI itself answers 401.
    apiKey: 'optional',
    defaults: {
      llm: { model: 'gpt-4.1' },
      stt: { model: 'gpt-4o-transcribe' },
      tts: { model: 'gpt-4o-mini-tts', voice: 'alloy' },
      embeddings: { model: 'text-embedding-3-small' },
      realtime: { model: 'gpt-realtime', voice: 'alloy' },
    },
  },
  speaches: {
    label: 'speaches (self-hosted speech to text and text to speech)',
    // speaches listens on port 8000 by default, as Ringbase does: a default would point at Ringbase itself.
    defaultBaseUrl: null,
    apiKey: 'optional',
    defaults: {
      stt: { model: 'Systran/faster-distil-whisper-small.en' },
      tts: { model: 'kokoro', voice: 'af_heart' },
    },
  },
  groq: {
    label: 'Groq',
    defaultBaseUrl: 'https://api.groq.com/openai/v1',
    apiKey: 'required',
    defaults: { llm: { model: 'llama-3.3-70b-versatile' }, stt: { model: 'whisper-large-v3-turbo' } },
  },
  openrouter: {
    label: 'OpenRouter',
    defaultBaseUrl: 'https://openrouter.ai/api/v1',
    apiKey: 'required',
    defaults: { llm: { model: 'openai/gpt-4.1' }, embeddings: { model: 'openai/text-embedding-3-small' } },
  },
} as const satisfies Record<string, ModelProviderPreset>

export type ModelProvider = keyof typeof MODEL_PROVIDERS

export const MODEL_PROVIDER_NAMES = Object.keys(MODEL_PROVIDERS) as ModelProvider[]

export const isModelProvider = (name: string): name is ModelProvider => Object.hasOwn(MODEL_PROVIDERS, name)

/** The services a kind of server offers (those it has defaults for), in a fixed order. */
export const servicesOf = (provider: ModelProvider): ModelService[] =>
  MODEL_SERVICES.filter((service) => Object.hasOwn(MODEL_PROVIDERS[provider].defaults, service))

/** Every kind of model server, with the services it offers and their defaults (the model-providers metadata). */
export const providersMetadata = () => ({
  providers: MODEL_PROVIDER_NAMES.map((provider) => {
    const preset: ModelProviderPreset = MODEL_PROVIDERS[provider]
    return {
      provider,
      label: preset.label,
      default_base_url: preset.defaultBaseUrl,
      api_key: preset.apiKey,
      services: servicesOf(provider),
      defaults: { ...preset.defaults },
    }
  }),
})
