import type { SqlDatabase } from './open'

type TransactionStatements = {
  [Name in 'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo']: { run(): unknown }
}

const statementsByDatabase = new WeakMap<SqlDatabase, TransactionStatements>()

function statementsOf(sqlite: SqlDatabase): TransactionStatements {
  let statements = statementsByDatabase.get(sqlite)
  if (!statements) {
    statements = {
      begin: sqlite.prepare('BEGIN IMMEDIATE'),
      commit: sqlite.prepare('COMMIT'),
      rollback: sqlite.prepare('ROLLBACK'),
      savepoint: sqlite.prepare('SAVEPOINT nested_transaction'),
      release: sqlite.prepare('RELEASE nested_transaction'),
      rollbackTo: sqlite.prepare('ROLLBACK TO nested_transaction'),
    }
    statementsByDatabase.set(sqlite, statements)
  }
  return statements
}

/**
 * Runs `work` in one write transaction and returns its result; a throw rolls it back. On SQLite the transaction takes
 * the write lock at once (BEGIN IMMEDIATE), so a read-then-write inside cannot fail half way on a busy database; on
 * PostgreSQL the client (postgres/client.ts) begins and takes the lock every instance's write transactions share.
 * Nested calls become savepoints. The statements are prepared once per connection (bun:sqlite's `transaction()` builds
 * four wrapped functions on every call).
 */
export function transaction<T>(owner: { sqlite: SqlDatabase }, work: () => T): T {
  const statements = statementsOf(owner.sqlite)
  const nested = owner.sqlite.inTransaction
  ;(nested ? statements.savepoint : statements.begin).run()
  try {
    const result = work()
    ;(nested ? statements.release : statements.commit).run()
    return result
  } catch (error) {
    // SQLite may have rolled back already (e.g. on SQLITE_FULL); then there is nothing left to undo.
    if (owner.sqlite.inTransaction) {
      if (nested) {
        statements.rollbackTo.run()
        statements.release.run()
      } else {
        statements.rollback.run()
      }
    }
    throw error
  }
}
