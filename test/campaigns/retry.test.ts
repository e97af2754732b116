import { describe, expect, test } from 'bun:test'
import {
  RETRY_CONFIG_REQUEST_DEFAULTS,
  RETRY_CONFIG_WHEN_OMITTED,
  retryDecision,
  type CallOutcome,
  type RetryConfig,
} from '../../src/campaigns/retry'

const NOW = Date.parse('2025-06-01T12:00:00Z')
const config: RetryConfig = { ...RETRY_CONFIG_REQUEST_DEFAULTS }

test('the two default sets are the documented ones', () => {
  expect(RETRY_CONFIG_REQUEST_DEFAULTS).toEqual({
    enabled: true,
    max_retries: 2,
    retry_delay_seconds: 120,
    retry_on_busy: true,
    retry_on_no_answer: true,
    retry_on_voicemail: true,
  })
  expect(RETRY_CONFIG_WHEN_OMITTED).toEqual({
    enabled: true,
    max_retries: 1,
    retry_delay_seconds: 120,
    retry_on_busy: true,
    retry_on_no_answer: true,
    retry_on_voicemail: false,
  })
})

describe('retryDecision', () => {
  test.each(['busy', 'no_answer', 'voicemail'] as const)('%p is retried after retry_delay_seconds', (outcome) => {
    expect(retryDecision(config, outcome, 1, NOW)).toEqual({ retry: true, at: NOW + 120_000 })
    expect(retryDecision({ ...config, retry_delay_seconds: 30 }, outcome, 1, NOW)).toEqual({
      retry: true,
      at: NOW + 30_000,
    })
  })

  test('max_retries counts retries after the first attempt: 2 → up to 3 attempts', () => {
    expect(retryDecision(config, 'busy', 1, NOW).retry).toBe(true)
    expect(retryDecision(config, 'busy', 2, NOW).retry).toBe(true)
    expect(retryDecision(config, 'busy', 3, NOW)).toEqual({ retry: false, final: true, reason: 'retries_exhausted' })
    expect(retryDecision({ ...config, max_retries: 0 }, 'no_answer', 1, NOW)).toEqual({
      retry: false,
      final: true,
      reason: 'retries_exhausted',
    })
  })

  test('completed ends the contact without failure; failed is never retried', () => {
    expect(retryDecision(config, 'completed', 1, NOW)).toEqual({ retry: false, final: false, reason: 'completed' })
    expect(retryDecision(config, 'failed', 1, NOW)).toEqual({ retry: false, final: true, reason: 'not_retryable' })
  })

  test.each([
    ['busy', 'retry_on_busy'],
    ['no_answer', 'retry_on_no_answer'],
    ['voicemail', 'retry_on_voicemail'],
  ] as const)('%p follows its own flag %p only', (outcome, flag) => {
    const off = { ...config, [flag]: false }
    expect(retryDecision(off, outcome, 1, NOW)).toEqual({ retry: false, final: true, reason: 'not_retryable' })
    const others = (['busy', 'no_answer', 'voicemail'] as CallOutcome[]).filter((o) => o !== outcome)
    for (const other of others) expect(retryDecision(off, other, 1, NOW).retry).toBe(true)
  })

  test('enabled: false disables every retry', () => {
    for (const outcome of ['busy', 'no_answer', 'voicemail'] as const) {
      expect(retryDecision({ ...config, enabled: false }, outcome, 1, NOW)).toEqual({
        retry: false,
        final: true,
        reason: 'not_retryable',
      })
    }
  })

  test('the default when retry_config is omitted does not retry voicemail and retries once', () => {
    expect(retryDecision(RETRY_CONFIG_WHEN_OMITTED, 'voicemail', 1, NOW).retry).toBe(false)
    expect(retryDecision(RETRY_CONFIG_WHEN_OMITTED, 'busy', 1, NOW).retry).toBe(true)
    expect(retryDecision(RETRY_CONFIG_WHEN_OMITTED, 'busy', 2, NOW).retry).toBe(false)
  })

  test('attemptsSoFar must be a whole number >= 1', () => {
    expect(() => retryDecision(config, 'busy', 0, NOW)).toThrow(RangeError)
    expect(() => retryDecision(config, 'busy', 1.5, NOW)).toThrow(RangeError)
  })
})
