import type { Database } from 'bun:sqlite'

/** SQLite-specific questions about the schema and its constraint errors, kept here so services stay portable SQL. */

const knownTables = new WeakMap<Database, Map<string, boolean>>()

/**
 * Whether a table exists, asked once per connection: migrations run before a connection is handed out, so the
 * answer cannot change while it is open. Lets a module read a table that a later migration may add.
 */
export function tableExists(sqlite: Database, name: string): boolean {
  let tables = knownTables.get(sqlite)
  if (!tables) knownTables.set(sqlite, (tables = new Map()))
  let exists = tables.get(name)
  if (exists === undefined) {
    exists = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== null
    tables.set(name, exists)
  }
  return exists
}

const isUniqueViolation = (error: unknown, table: string, columns: string[]) =>
  error instanceof Error && error.message === `UNIQUE constraint failed: ${columns.map((column) => `${table}.${column}`).join(', ')}`

/** Runs `write`; a violation of one of the listed UNIQUE constraints (or indexes) of `table` is rethrown as its error. */
export function translateUniqueViolations<T>(table: string, violations: [columns: string[], error: () => Error][], write: () => T): T {
  try {
    return write()
  } catch (error) {
    const violation = violations.find(([columns]) => isUniqueViolation(error, table, columns))
    throw violation ? violation[1]() : error
  }
}
