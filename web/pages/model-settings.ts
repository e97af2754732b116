// The settings of a model configuration's sections as the API takes them (src/models/schemas.ts), and the control the
// console's form (model-configuration.tsx) edits each with; test/console/model-configuration-settings.test.ts holds
// them to the API's schemas.

export type Service = 'llm' | 'stt' | 'tts' | 'embeddings' | 'realtime'

/** One setting of a section, as the API takes it (src/models/schemas.ts), and the control that edits it. */
export type Setting = {
  /** Its name in the section's settings; `turn_detection.type` is `type` inside `turn_detection`. */
  key: string
  /** Follows the service's label: "LLM temperature". */
  label: string
  hint?: string
  /** A number input with the API's bounds; an integer one steps by 1. */
  number?: { min: number; max?: number; integer?: boolean }
  /** A select; its '' choice sends nothing (the model's or the API's default). */
  options?: { value: string; label: string }[]
  multiline?: { maxLength: number }
}

const MODEL: Setting = { key: 'model', label: 'model' }
const VOICE: Setting = { key: 'voice', label: 'voice' }
const MILLISECONDS = { min: 0, max: 10_000, integer: true }

/** Each service's fieldset: `title` is its legend, `label` begins its fields' labels; `settings` are all the API takes. */
export const SERVICES: { service: Service; title: string; label: string; settings: Setting[] }[] = [
  {
    service: 'llm',
    title: 'LLM',
    label: 'LLM',
    settings: [
      MODEL,
      { key: 'temperature', label: 'temperature', number: { min: 0, max: 2 }, hint: "0 to 2; empty: the model's own" },
      { key: 'max_tokens', label: 'max tokens', number: { min: 1, integer: true }, hint: 'Longest reply, in tokens' },
    ],
  },
  {
    service: 'stt',
    title: 'Speech to text',
    label: 'Speech to text',
    settings: [
      MODEL,
      { key: 'language', label: 'language', hint: 'ISO 639-1, e.g. en' },
      {
        key: 'streaming',
        label: 'streaming',
        options: [
          { value: '', label: 'Off: upload each utterance' },
          { value: 'openai', label: 'OpenAI Realtime API socket' },
          { value: 'vllm', label: 'vLLM realtime socket' },
        ],
        hint: 'Transcribe while the caller speaks (one socket per call); uploads when the socket fails',
      },
    ],
  },
  {
    service: 'tts',
    title: 'Text to speech',
    label: 'Text to speech',
    settings: [
      MODEL,
      VOICE,
      { key: 'speed', label: 'speed', number: { min: 0.25, max: 4 }, hint: '0.25 to 4; 1 is normal' },
    ],
  },
  {
    service: 'embeddings',
    title: 'Embeddings',
    label: 'Embeddings',
    settings: [
      MODEL,
      {
        key: 'dimensions',
        label: 'dimensions',
        number: { min: 1, max: 4096, integer: true },
        hint: "Empty: the model's own length",
      },
    ],
  },
  {
    service: 'realtime',
    title: 'Realtime speech to speech',
    label: 'Realtime',
    settings: [
      MODEL,
      VOICE,
      {
        key: 'instructions',
        label: 'instructions',
        multiline: { maxLength: 10_000 },
        hint: "Given to the model before every node's prompt",
      },
      {
        key: 'turn_detection.type',
        label: 'turn detection',
        options: [
          { value: '', label: "The model's default" },
          { value: 'server_vad', label: 'Server VAD' },
          { value: 'semantic_vad', label: 'Semantic VAD' },
        ],
        hint: 'Server VAD ends the turn on a silence, semantic VAD when the words sound finished',
      },
      {
        key: 'turn_detection.threshold',
        label: 'VAD threshold',
        number: { min: 0, max: 1 },
        hint: '0 to 1; higher needs louder speech',
      },
      { key: 'turn_detection.prefix_padding_ms', label: 'prefix padding (ms)', number: MILLISECONDS },
      { key: 'turn_detection.silence_duration_ms', label: 'silence duration (ms)', number: MILLISECONDS },
    ],
  },
]
