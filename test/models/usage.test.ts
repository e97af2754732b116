import { describe, expect, test } from 'bun:test'
import {
  addLlmUsage,
  addSttSeconds,
  addTtsCharacters,
  costInfo,
  emptyUsageInfo,
  usageKey,
} from '../../src/models/usage'

const llm = { service: 'openai', model: 'gpt-4.1' }
const backup = { service: 'groq', model: 'llama-3.3-70b-versatile' }
const stt = { service: 'speaches', model: 'whisper-small' }
const tts = { service: 'speaches', model: 'kokoro' }

function aCall() {
  let usage = emptyUsageInfo()
  usage = addLlmUsage(usage, llm, { promptTokens: 1200, completionTokens: 80, totalTokens: 1280 })
  usage = addLlmUsage(usage, llm, { promptTokens: 1400, completionTokens: 120, totalTokens: 1520 })
  usage = addLlmUsage(usage, backup, { promptTokens: 400, completionTokens: 0, totalTokens: 400 })
  usage = addSttSeconds(usage, stt, 0.1)
  usage = addSttSeconds(usage, stt, 0.2)
  usage = addSttSeconds(usage, stt, 89.7)
  usage = addTtsCharacters(usage, tts, 1500)
  usage = addTtsCharacters(usage, tts, 500)
  return { ...usage, call_duration_seconds: 120 }
}

describe('usage_info', () => {
  test('accumulates per <service>|||<model> in the reference shape, STT included', () => {
    expect(usageKey(llm)).toBe('openai|||gpt-4.1')
    expect(aCall()).toEqual({
      llm: {
        'openai|||gpt-4.1': { prompt_tokens: 2600, completion_tokens: 200, total_tokens: 2800 },
        'groq|||llama-3.3-70b-versatile': { prompt_tokens: 400, completion_tokens: 0, total_tokens: 400 },
      },
      tts: { 'speaches|||kokoro': 2000 },
      stt: { 'speaches|||whisper-small': 90 },
      call_duration_seconds: 120,
    })
  })

  test('helpers leave their input untouched', () => {
    const before = emptyUsageInfo()
    addLlmUsage(before, llm, { promptTokens: 1, completionTokens: 1, totalTokens: 2 })
    addTtsCharacters(before, tts, 5)
    addSttSeconds(before, stt, 1)
    expect(before).toEqual(emptyUsageInfo())
  })
})

describe('cost_info', () => {
  const card = {
    llm_input_per_1k_tokens: 0.002,
    llm_output_per_1k_tokens: 0.008,
    stt_per_minute: 0.006,
    tts_per_1k_characters: 0.015,
    telephony_per_minute: 0.01,
  }

  test('priced from the card: tokens in and out per 1k, STT per minute, TTS per 1k characters, phone per minute', () => {
    // llm 3000/1000·0.002 + 200/1000·0.008 = 0.0076; stt 1.5·0.006 = 0.009; tts 2·0.015 = 0.03; phone 2·0.01 = 0.02
    expect(costInfo(aCall(), card, { telephony: true })).toEqual({
      currency: 'USD',
      llm: 0.0076,
      stt: 0.009,
      tts: 0.03,
      telephony: 0.02,
      total: 0.0666,
      charge_usd: 0.0666,
    })
  })

  test('a chat session has no telephony minutes; another currency has no charge_usd; no card is {}', () => {
    expect(costInfo(aCall(), card, { telephony: false })).toMatchObject({ telephony: 0, total: 0.0466 })
    const euros = costInfo(aCall(), { ...card, currency: 'EUR' }, { telephony: true })
    expect(euros).toMatchObject({ currency: 'EUR', total: 0.0666 })
    expect('charge_usd' in euros).toBe(false)
    expect(costInfo(aCall(), null, { telephony: true })).toEqual({})
    expect(costInfo(aCall(), { stt_per_minute: 0.01 }, { telephony: true })).toMatchObject({
      llm: 0,
      stt: 0.015,
      total: 0.015,
    })
  })
})
