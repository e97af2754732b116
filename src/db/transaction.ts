import type { SqlDatabase } from './open'

/**
 * Runs `work` in one write transaction and returns its result; a throw rolls it back. On SQLite the transaction takes
 * the write lock at once (BEGIN IMMEDIATE), so a read-then-write inside cannot fail half way on a busy database;
 * another engine would use an ordinary transaction. Nested calls become savepoints.
 */
export function transaction<T>(owner: { sqlite: SqlDatabase }, work: () => T): T {
  return owner.sqlite.transaction(work).immediate()
}
