/** Retry policy for campaign contacts: what happens after an attempt ends with a given outcome. */

import type { RetryConfig } from '../db/schema/campaigns'
import type { CallOutcome } from '../telephony/provider'

export type { CallOutcome }

export type { RetryConfig }

/** Defaults of each field of a `retry_config` object sent in a request. */
export const RETRY_CONFIG_REQUEST_DEFAULTS: RetryConfig = {
  enabled: true,
  max_retries: 2,
  retry_delay_seconds: 120,
  retry_on_busy: true,
  retry_on_no_answer: true,
  retry_on_voicemail: true,
}

/** Stored (and shown) when a campaign request has no `retry_config` at all. */
export const RETRY_CONFIG_WHEN_OMITTED: RetryConfig = {
  enabled: true,
  max_retries: 1,
  retry_delay_seconds: 120,
  retry_on_busy: true,
  retry_on_no_answer: true,
  retry_on_voicemail: false,
}

/** Why no retry: the call completed, the outcome is not retried under this config, or the retries are used up. */
export type NoRetryReason = 'completed' | 'not_retryable' | 'retries_exhausted'

export type RetryDecision =
  | { retry: true; at: number }
  /** `final`: the contact closes without having been reached (counts as a failed row); false only for `completed`. */
  | { retry: false; final: boolean; reason: NoRetryReason }

function retriesOutcome(config: RetryConfig, outcome: CallOutcome): boolean {
  switch (outcome) {
    case 'busy':
      return config.retry_on_busy
    case 'no_answer':
      return config.retry_on_no_answer
    case 'voicemail':
      return config.retry_on_voicemail
    case 'completed':
    case 'failed':
    case 'canceled':
      return false
  }
}

/** Whether the config allows another attempt after `attemptsSoFar` (whatever the last one's outcome). */
export function hasRetriesLeft(config: RetryConfig, attemptsSoFar: number): boolean {
  return config.enabled && attemptsSoFar - 1 < config.max_retries
}

/** What to do after attempt number `attemptsSoFar` (1 for the first call) ended with `outcome` at `now` (ms). */
export function retryDecision(
  config: RetryConfig,
  outcome: CallOutcome,
  attemptsSoFar: number,
  now: number,
): RetryDecision {
  if (!Number.isInteger(attemptsSoFar) || attemptsSoFar < 1) {
    throw new RangeError(`attemptsSoFar must be a whole number >= 1, got ${attemptsSoFar}`)
  }
  if (outcome === 'completed') return { retry: false, final: false, reason: 'completed' }
  if (!config.enabled || !retriesOutcome(config, outcome)) return { retry: false, final: true, reason: 'not_retryable' }
  if (!hasRetriesLeft(config, attemptsSoFar)) return { retry: false, final: true, reason: 'retries_exhausted' }
  return { retry: true, at: now + config.retry_delay_seconds * 1000 }
}
