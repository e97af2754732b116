/**
 * Campaign circuit breaker: pause dialling when too many recent calls failed. Pure evaluation over outcomes the
 * scheduler keeps in the database. A failure is a call that could not be placed or ended `failed`; busy and
 * no-answer calls are successes here (the callee's line works).
 */

import type { CircuitBreakerConfig } from '../db/schema/campaigns'

export type { CircuitBreakerConfig }

export type BreakerOutcome = { at: number; failed: boolean; runId?: number; reason?: string }

export type BreakerStats = {
  trip: boolean
  failure_rate: number
  failure_count: number
  success_count: number
  total: number
}

/** Stored and shown when a campaign request has no `circuit_breaker`: disabled, so what is shown is what runs. */
export const DEFAULT_CIRCUIT_BREAKER: CircuitBreakerConfig = {
  enabled: false,
  failure_threshold: 0.5,
  window_seconds: 120,
  min_calls_in_window: 5,
}

export const MAX_RECENT_FAILURES = 20

/** The config a request asks for: absent → disabled; a sent object is enabled unless it says otherwise. */
export function resolveCircuitBreakerConfig(
  requested: Partial<CircuitBreakerConfig> | null | undefined,
): CircuitBreakerConfig {
  if (!requested) return DEFAULT_CIRCUIT_BREAKER
  return {
    enabled: requested.enabled ?? true,
    failure_threshold: requested.failure_threshold ?? DEFAULT_CIRCUIT_BREAKER.failure_threshold,
    window_seconds: requested.window_seconds ?? DEFAULT_CIRCUIT_BREAKER.window_seconds,
    min_calls_in_window: requested.min_calls_in_window ?? DEFAULT_CIRCUIT_BREAKER.min_calls_in_window,
  }
}

/** Outcomes with `at` strictly after this instant (and not after now) are inside the window; older ones may be pruned. */
export const breakerWindowStart = (config: CircuitBreakerConfig, now: number): number =>
  now - config.window_seconds * 1000

const inWindow = (outcome: BreakerOutcome, config: CircuitBreakerConfig, now: number) =>
  outcome.at > breakerWindowStart(config, now) && outcome.at <= now

/** Counts the window's outcomes; trips when enabled, with enough calls, at a failure rate at or above the threshold. */
export function evaluateBreaker(
  config: CircuitBreakerConfig,
  outcomes: readonly BreakerOutcome[],
  now: number,
): BreakerStats {
  let failureCount = 0
  let successCount = 0
  for (const outcome of outcomes) {
    if (!inWindow(outcome, config, now)) continue
    if (outcome.failed) failureCount++
    else successCount++
  }
  const total = failureCount + successCount
  const failureRate = total === 0 ? 0 : failureCount / total
  return {
    trip: config.enabled && total >= config.min_calls_in_window && failureRate >= config.failure_threshold,
    failure_rate: failureRate,
    failure_count: failureCount,
    success_count: successCount,
    total,
  }
}

const percent = (fraction: number) => `${(fraction * 100).toFixed(2)}%`

/** The `circuit_breaker_tripped` log message, e.g. `Paused: failure rate 60.00% (3/5) exceeded threshold 50.00% in 120s window`. */
export function tripMessage(stats: BreakerStats, config: CircuitBreakerConfig): string {
  return (
    `Paused: failure rate ${percent(stats.failure_rate)} (${stats.failure_count}/${stats.total}) ` +
    `exceeded threshold ${percent(config.failure_threshold)} in ${config.window_seconds}s window`
  )
}

export type TripDetails = {
  failure_rate: number
  failure_count: number
  success_count: number
  threshold: number
  window_seconds: number
  recent_failures: { workflow_run_id: number | null; reason: string | null; ts: string }[]
}

/** The `details` of the `circuit_breaker_tripped` log entry: the stats and the window's latest failures, newest first. */
export function tripDetails(
  stats: BreakerStats,
  config: CircuitBreakerConfig,
  outcomes: readonly BreakerOutcome[],
  now: number,
): TripDetails {
  const recentFailures = outcomes
    .filter((outcome) => outcome.failed && inWindow(outcome, config, now))
    .sort((a, b) => b.at - a.at)
    .slice(0, MAX_RECENT_FAILURES)
    .map((outcome) => ({
      workflow_run_id: outcome.runId ?? null,
      reason: outcome.reason ?? null,
      ts: new Date(outcome.at).toISOString(),
    }))
  return {
    failure_rate: stats.failure_rate,
    failure_count: stats.failure_count,
    success_count: stats.success_count,
    threshold: config.failure_threshold,
    window_seconds: config.window_seconds,
    recent_failures: recentFailures,
  }
}
