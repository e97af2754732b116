import { describe, expect, test } from 'bun:test'
import { isModelProvider, MODEL_PROVIDER_NAMES, MODEL_PROVIDERS } from '../../src/models/providers'

describe('model provider presets', () => {
  test("the four kinds of connection with their default base URLs; speaches has none (its default port is Ringbase's)", () => {
    expect(MODEL_PROVIDER_NAMES).toEqual(['openai', 'speaches', 'groq', 'openrouter'])
    expect(
      Object.fromEntries(MODEL_PROVIDER_NAMES.map((name) => [name, MODEL_PROVIDERS[name].defaultBaseUrl])),
    ).toEqual({
      openai: 'https://api.openai.com/v1',
      speaches: null,
      groq: 'https://api.groq.com/openai/v1',
      openrouter: 'https://openrouter.ai/api/v1',
    })
    for (const name of MODEL_PROVIDER_NAMES) {
      const url = MODEL_PROVIDERS[name].defaultBaseUrl
      if (url !== null) expect(new URL(url).pathname).not.toEndWith('/')
    }
  })

  test('names are recognised exactly; inherited object keys are not providers', () => {
    expect(isModelProvider('groq')).toBe(true)
    expect(isModelProvider('Groq')).toBe(false)
    expect(isModelProvider('toString')).toBe(false)
    expect(isModelProvider('elevenlabs')).toBe(false)
  })
})
