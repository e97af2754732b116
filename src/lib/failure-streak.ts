/** What a streak needs of the process's logger (pino's calls). */
type StreakLog = {
  error(fields: object, message: string): void
  info(fields: object, message: string): void
}

/**
 * A periodic task's failures, logged once per streak: the first failure in full, then nothing until a pass succeeds,
 * which is logged with how many passes failed and for how long. Why: during a database outage a loop that runs every
 * second fails every second, and 900 identical error lines in a quarter of an hour bury everything else in the log.
 */
export function failureStreak(log: StreakLog, messages: { failed: string; recovered: string }) {
  let failedPasses = 0
  let firstFailureAtMs = 0
  return {
    failed(error: unknown): void {
      if (failedPasses++ > 0) return
      firstFailureAtMs = performance.now()
      log.error({ err: error }, messages.failed)
    },
    succeeded(): void {
      if (failedPasses === 0) return
      log.info({ failedPasses, failingForMs: Math.round(performance.now() - firstFailureAtMs) }, messages.recovered)
      failedPasses = 0
    },
  }
}
