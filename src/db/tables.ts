/** SQLite's wording of constraint errors, kept here so services stay portable SQL. */

const isUniqueViolation = (error: unknown, table: string, columns: string[]) =>
  error instanceof Error &&
  error.message === `UNIQUE constraint failed: ${columns.map((column) => `${table}.${column}`).join(', ')}`

/** Runs `write`; a violation of one of the listed UNIQUE constraints (or indexes) of `table` is rethrown as its error. */
export function translateUniqueViolations<T>(
  table: string,
  violations: [columns: string[], error: () => Error][],
  write: () => T,
): T {
  try {
    return write()
  } catch (error) {
    const violation = violations.find(([columns]) => isUniqueViolation(error, table, columns))
    throw violation ? violation[1]() : error
  }
}
