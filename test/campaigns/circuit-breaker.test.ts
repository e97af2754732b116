import { describe, expect, test } from 'bun:test'
import {
  breakerWindowStart,
  DEFAULT_CIRCUIT_BREAKER,
  evaluateBreaker,
  resolveCircuitBreakerConfig,
  tripDetails,
  tripMessage,
  type BreakerOutcome,
  type CircuitBreakerConfig,
} from '../../src/campaigns/circuit-breaker'

const NOW = Date.parse('2025-06-01T12:00:00Z')
const enabled: CircuitBreakerConfig = {
  enabled: true,
  failure_threshold: 0.5,
  window_seconds: 120,
  min_calls_in_window: 5,
}

/** Outcomes `secondsAgo` before NOW; `pattern` like 'FFSFS' (F failed, S success), oldest first. */
function outcomes(pattern: string, secondsAgo = 10): BreakerOutcome[] {
  return [...pattern].map((c, i) => ({
    at: NOW - (secondsAgo + pattern.length - i) * 1000,
    failed: c === 'F',
    runId: 100 + i,
    reason: c === 'F' ? 'failed' : undefined,
  }))
}

describe('defaults', () => {
  test('absent → disabled, with the documented numbers', () => {
    expect(DEFAULT_CIRCUIT_BREAKER).toEqual({
      enabled: false,
      failure_threshold: 0.5,
      window_seconds: 120,
      min_calls_in_window: 5,
    })
    expect(resolveCircuitBreakerConfig(null)).toEqual(DEFAULT_CIRCUIT_BREAKER)
    expect(resolveCircuitBreakerConfig(undefined)).toEqual(DEFAULT_CIRCUIT_BREAKER)
  })

  test('a sent object is enabled unless it says otherwise; missing numbers take the defaults', () => {
    expect(resolveCircuitBreakerConfig({})).toEqual({
      enabled: true,
      failure_threshold: 0.5,
      window_seconds: 120,
      min_calls_in_window: 5,
    })
    expect(resolveCircuitBreakerConfig({ failure_threshold: 0.3, window_seconds: 60 })).toEqual({
      enabled: true,
      failure_threshold: 0.3,
      window_seconds: 60,
      min_calls_in_window: 5,
    })
    expect(resolveCircuitBreakerConfig({ enabled: false, min_calls_in_window: 10 })).toEqual({
      enabled: false,
      failure_threshold: 0.5,
      window_seconds: 120,
      min_calls_in_window: 10,
    })
  })
})

describe('evaluateBreaker', () => {
  test('trips at exactly the threshold (>=) once enough calls are in the window', () => {
    const stats = evaluateBreaker(enabled, outcomes('FSFSFS'), NOW)
    expect(stats).toEqual({ trip: true, failure_rate: 0.5, failure_count: 3, success_count: 3, total: 6 })
  })

  test('below the threshold does not trip', () => {
    expect(evaluateBreaker(enabled, outcomes('FSFSSS'), NOW).trip).toBe(false)
    expect(evaluateBreaker({ ...enabled, failure_threshold: 0.34 }, outcomes('FSFSSS'), NOW).trip).toBe(false)
    expect(evaluateBreaker({ ...enabled, failure_threshold: 0.33 }, outcomes('FSFSSS'), NOW).trip).toBe(true)
  })

  test('needs min_calls_in_window calls before judging', () => {
    expect(evaluateBreaker(enabled, outcomes('FFFF'), NOW)).toEqual({
      trip: false,
      failure_rate: 1,
      failure_count: 4,
      success_count: 0,
      total: 4,
    })
    expect(evaluateBreaker(enabled, outcomes('FFFFF'), NOW).trip).toBe(true)
    expect(evaluateBreaker({ ...enabled, min_calls_in_window: 1 }, outcomes('F'), NOW).trip).toBe(true)
  })

  test('only outcomes inside (now - window, now] count', () => {
    const old = outcomes('FFFFF', 200) // 200+ s ago: outside a 120 s window
    expect(evaluateBreaker(enabled, [...old, ...outcomes('SS')], NOW)).toEqual({
      trip: false,
      failure_rate: 0,
      failure_count: 0,
      success_count: 2,
      total: 2,
    })
    const edge: BreakerOutcome[] = [
      { at: NOW - 120_000, failed: true }, // exactly window_seconds ago: out
      { at: NOW - 119_999, failed: true }, // in
      { at: NOW, failed: true }, // in
      { at: NOW + 1, failed: true }, // future: out
    ]
    expect(evaluateBreaker(enabled, edge, NOW).failure_count).toBe(2)
    expect(breakerWindowStart(enabled, NOW)).toBe(NOW - 120_000)
  })

  test('a disabled breaker reports the numbers but never trips', () => {
    expect(evaluateBreaker({ ...enabled, enabled: false }, outcomes('FFFFFFFF'), NOW)).toEqual({
      trip: false,
      failure_rate: 1,
      failure_count: 8,
      success_count: 0,
      total: 8,
    })
  })

  test('no outcomes: rate 0, no trip (even with threshold 0)', () => {
    expect(evaluateBreaker({ ...enabled, failure_threshold: 0, min_calls_in_window: 1 }, [], NOW)).toEqual({
      trip: false,
      failure_rate: 0,
      failure_count: 0,
      success_count: 0,
      total: 0,
    })
  })
})

test('tripMessage formats rates as percentages with two decimals', () => {
  const stats = evaluateBreaker(enabled, outcomes('FFSFS'), NOW)
  expect(tripMessage(stats, enabled)).toBe('Paused: failure rate 60.00% (3/5) exceeded threshold 50.00% in 120s window')
  const third = evaluateBreaker({ ...enabled, failure_threshold: 0.25, window_seconds: 300 }, outcomes('FSS'), NOW)
  expect(tripMessage(third, { ...enabled, failure_threshold: 0.25, window_seconds: 300 })).toBe(
    'Paused: failure rate 33.33% (1/3) exceeded threshold 25.00% in 300s window',
  )
})

test('tripDetails lists the window’s failures newest first, at most 20', () => {
  const many: BreakerOutcome[] = Array.from({ length: 30 }, (_, i) => ({
    at: NOW - (30 - i) * 1000,
    failed: true,
    runId: i,
    reason: i % 2 ? 'call_initiation_failed' : 'failed',
  }))
  const all = [{ at: NOW - 500_000, failed: true, runId: 999 }, ...many, { at: NOW - 1, failed: false, runId: 77 }]
  const stats = evaluateBreaker(enabled, all, NOW)
  const details = tripDetails(stats, enabled, all, NOW)
  expect(details).toMatchObject({
    failure_rate: 30 / 31,
    failure_count: 30,
    success_count: 1,
    threshold: 0.5,
    window_seconds: 120,
  })
  expect(details.recent_failures).toHaveLength(20)
  expect(details.recent_failures[0]).toEqual({
    workflow_run_id: 29,
    reason: 'call_initiation_failed',
    ts: new Date(NOW - 1000).toISOString(),
  })
  expect(details.recent_failures.at(-1)!.workflow_run_id).toBe(10)
  expect(details.recent_failures.map((f) => f.workflow_run_id)).not.toContain(999)
  expect(tripDetails(stats, enabled, [{ at: NOW - 5, failed: true }], NOW).recent_failures).toEqual([
    { workflow_run_id: null, reason: null, ts: new Date(NOW - 5).toISOString() },
  ])
})
