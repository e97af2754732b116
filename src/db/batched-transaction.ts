import type { SqlDatabase } from './open'
import { transaction } from './transaction'

/**
 * Group commit: writes that arrive together share one transaction, so SQLite's BEGIN IMMEDIATE, COMMIT and the WAL
 * appends of the pages they all touch (a table's and its indexes' last pages) are paid once per batch, not per write.
 */

type Outcome = { failed: false; value: unknown } | { failed: true; error: unknown }
type Pending = { work: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }

/** Bounds how long one batch holds the write lock and the event loop. */
const MAX_BATCH = 64

const openBatches = new WeakMap<SqlDatabase, Pending[]>()

/**
 * Runs `work` in a write transaction shared with the other calls made before the next macrotask, each in its own
 * savepoint: a throw rolls back that call's writes only and rejects its promise. Every promise settles after the
 * COMMIT, so no answer is sent before its data is durable; a failed COMMIT rejects every call of the batch. `work`
 * runs later than the call: check what can be checked without writing before calling, and keep `work` synchronous.
 */
export function batchedTransaction<T>(owner: { sqlite: SqlDatabase }, work: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let batch = openBatches.get(owner.sqlite)
    if (!batch || batch.length >= MAX_BATCH) {
      const fresh: Pending[] = []
      openBatches.set(owner.sqlite, fresh)
      // A macrotask: Bun drains microtasks after each request, so a microtask would flush every create alone (measured).
      setImmediate(() => {
        if (openBatches.get(owner.sqlite) === fresh) openBatches.delete(owner.sqlite)
        commitBatch(owner, fresh)
      })
      batch = fresh
    }
    batch.push({ work, resolve: resolve as (value: unknown) => void, reject })
  })
}

function commitBatch(owner: { sqlite: SqlDatabase }, batch: Pending[]): void {
  const outcomes: Outcome[] = []
  try {
    transaction(owner, () => {
      for (const pending of batch) {
        try {
          outcomes.push({ failed: false, value: transaction(owner, pending.work) })
        } catch (error) {
          // SQLite rolled the whole transaction back (e.g. SQLITE_FULL): the next calls would run outside it.
          if (!owner.sqlite.inTransaction) throw error
          outcomes.push({ failed: true, error })
        }
      }
    })
  } catch (error) {
    for (const pending of batch) pending.reject(error)
    return
  }
  batch.forEach((pending, index) => {
    const outcome = outcomes[index]
    if (outcome.failed) pending.reject(outcome.error)
    else pending.resolve(outcome.value)
  })
}
