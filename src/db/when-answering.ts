/**
 * A write that must not be lost to a database outage: while the database does not answer (PostgreSQL down or out of
 * reach: DomainError 'unavailable'), it is tried again every `retryMs` for up to `giveUpMs`. For what only memory holds
 * meanwhile, a call's outcome and transcript: without it, a call that ended during an outage stayed open until the next
 * restart's recovery closed it without them.
 */
import { DomainError } from '../lib/errors'

/** The database did not answer (PostgreSQL down or out of reach), as opposed to a statement it refused. */
export const databaseUnavailable = (error: unknown): error is DomainError =>
  error instanceof DomainError && error.kind === 'unavailable'

export async function whenDatabaseAnswers<T>(
  write: () => T,
  options: { retryMs?: number; giveUpMs?: number; onWait?: (error: DomainError) => void } = {},
): Promise<T> {
  const { retryMs = 2_000, giveUpMs = 15 * 60_000 } = options
  const giveUpAt = performance.now() + giveUpMs
  for (let waited = false; ; waited = true) {
    try {
      return write()
    } catch (error) {
      if (!databaseUnavailable(error) || performance.now() + retryMs > giveUpAt) throw error
      if (!waited) options.onWait?.(error)
      await Bun.sleep(retryMs)
    }
  }
}
