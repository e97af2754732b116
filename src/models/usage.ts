import type { ModelRef, TokenUsage } from './types'

/**
 * What a run consumed, in the reference platform's `usage_info` shape (keys `<service>|||<model>`), with STT filled
 * too. Pure functions: every helper returns a new value.
 */
export type LlmTokenCounts = {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  /** Realtime speech-to-speech models: of the prompt and completion tokens, the audio ones. */
  audio_prompt_tokens?: number
  audio_completion_tokens?: number
}

export type UsageInfo = {
  llm: Record<string, LlmTokenCounts>
  /** Characters sent to speech synthesis. */
  tts: Record<string, number>
  /** Seconds of audio sent to transcription. */
  stt: Record<string, number>
  /** Tokens the embeddings server counted for the run's knowledge-base queries; present once one was embedded. */
  embeddings?: Record<string, number>
  call_duration_seconds: number
}

/** An organization's prices, all optional; amounts in `currency` (default USD). */
export type PriceCard = {
  currency?: string
  llm_input_per_1k_tokens?: number
  llm_output_per_1k_tokens?: number
  stt_per_minute?: number
  tts_per_1k_characters?: number
  telephony_per_minute?: number
}

/** `charge_usd` (read by the usage report) is present only when the card is in USD. */
export type CostInfo = {
  currency: string
  llm: number
  stt: number
  tts: number
  telephony: number
  total: number
  charge_usd?: number
}

export const emptyUsageInfo = (): UsageInfo => ({ llm: {}, tts: {}, stt: {}, call_duration_seconds: 0 })

export const usageKey = (ref: ModelRef) => `${ref.service}|||${ref.model}`

/** Float sums drift (0.1 + 0.2); usage and money are kept to a fixed number of decimals. */
const rounded = (value: number, decimals: number) => Math.round(value * 10 ** decimals) / 10 ** decimals

export function addLlmUsage(usage: UsageInfo, ref: ModelRef, tokens: TokenUsage): UsageInfo {
  const key = usageKey(ref)
  const before = usage.llm[key] ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  return {
    ...usage,
    llm: {
      ...usage.llm,
      [key]: {
        prompt_tokens: before.prompt_tokens + tokens.promptTokens,
        completion_tokens: before.completion_tokens + tokens.completionTokens,
        total_tokens: before.total_tokens + tokens.totalTokens,
        ...audioCounts(before, tokens),
      },
    },
  }
}

function audioCounts(before: LlmTokenCounts, tokens: TokenUsage): Partial<LlmTokenCounts> {
  if (tokens.audioPromptTokens === undefined && before.audio_prompt_tokens === undefined) return {}
  return {
    audio_prompt_tokens: (before.audio_prompt_tokens ?? 0) + (tokens.audioPromptTokens ?? 0),
    audio_completion_tokens: (before.audio_completion_tokens ?? 0) + (tokens.audioCompletionTokens ?? 0),
  }
}

export function addTtsCharacters(usage: UsageInfo, ref: ModelRef, characters: number): UsageInfo {
  const key = usageKey(ref)
  return { ...usage, tts: { ...usage.tts, [key]: (usage.tts[key] ?? 0) + characters } }
}

export function addSttSeconds(usage: UsageInfo, ref: ModelRef, seconds: number): UsageInfo {
  const key = usageKey(ref)
  return { ...usage, stt: { ...usage.stt, [key]: rounded((usage.stt[key] ?? 0) + seconds, 3) } }
}

export function addEmbeddingTokens(usage: UsageInfo, ref: ModelRef, tokens: number): UsageInfo {
  const key = usageKey(ref)
  return { ...usage, embeddings: { ...usage.embeddings, [key]: (usage.embeddings?.[key] ?? 0) + tokens } }
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0)

/**
 * The run's `cost_info` from its usage and the organization's price card; `{}` without a card. `telephony` says
 * whether the run was a phone call (chat and browser sessions have no telephony minutes).
 */
export function costInfo(
  usage: UsageInfo,
  card: PriceCard | null | undefined,
  { telephony }: { telephony: boolean },
): CostInfo | Record<string, never> {
  if (!card) return {}
  const llmCounts = Object.values(usage.llm)
  const llm =
    (sum(llmCounts.map((counts) => counts.prompt_tokens)) / 1000) * (card.llm_input_per_1k_tokens ?? 0) +
    (sum(llmCounts.map((counts) => counts.completion_tokens)) / 1000) * (card.llm_output_per_1k_tokens ?? 0)
  const stt = (sum(Object.values(usage.stt)) / 60) * (card.stt_per_minute ?? 0)
  const tts = (sum(Object.values(usage.tts)) / 1000) * (card.tts_per_1k_characters ?? 0)
  const phone = telephony ? (usage.call_duration_seconds / 60) * (card.telephony_per_minute ?? 0) : 0
  const currency = card.currency ?? 'USD'
  const total = rounded(llm + stt + tts + phone, 6)
  return {
    currency,
    llm: rounded(llm, 6),
    stt: rounded(stt, 6),
    tts: rounded(tts, 6),
    telephony: rounded(phone, 6),
    total,
    ...(currency === 'USD' ? { charge_usd: total } : {}),
  }
}
