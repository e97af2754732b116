import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/open'
import { postgresCreateStatements } from '../../src/db/postgres-schema'
import { postgresMissing, startPostgres, type TestPostgres } from '../support/postgres'

const missing = postgresMissing()
if (missing) console.warn(missing)

/** Every column of every ordinary table of a migrated SQLite database, as `table.column`. */
function sqliteColumns(): string[] {
  const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-pg-compare-'))
  const { sqlite } = openDatabase(dataDir)
  try {
    // Ordinary tables only: full-text indexes are virtual tables with shadow tables, SQLite's own start with sqlite_,
    // and _migrations is the SQLite migrator's bookkeeping (each dialect's migrator keeps its own).
    const tables = sqlite
      .query<{ name: string }, []>(
        `SELECT name FROM pragma_table_list
         WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_migrations'`,
      )
      .all()
      .map(({ name }) => name)
    return tables
      .flatMap((table) =>
        sqlite
          .query<{ name: string }, [string]>('SELECT name FROM pragma_table_info(?)')
          .all(table)
          .map(({ name }) => `${table}.${name}`),
      )
      .sort()
  } finally {
    sqlite.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

describe.skipIf(missing !== null)('PostgreSQL schema derived from the declared tables', () => {
  let postgres: TestPostgres
  let db: InstanceType<typeof Bun.SQL>
  beforeAll(async () => {
    postgres = await startPostgres()
    db = new Bun.SQL(postgres.url)
  })
  afterAll(async () => {
    await db?.close()
    postgres?.stop()
  })

  test('creates on a real PostgreSQL, and every SQLite table and column has its PostgreSQL counterpart', async () => {
    for (const statement of postgresCreateStatements()) await db.unsafe(statement)
    const rows: { table_name: string; column_name: string }[] = await db`
      SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`
    const postgresColumns = new Set(rows.map((row) => `${row.table_name}.${row.column_name}`))
    const sqlite = sqliteColumns()
    expect(sqlite.length).toBeGreaterThan(100)
    expect(sqlite.filter((column) => !postgresColumns.has(column))).toEqual([])
  })
})
