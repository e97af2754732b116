import { Database } from 'bun:sqlite'
import { databasePath } from './open'

/** Row counts per table and a counter of commits: two equal fingerprints mean nothing was written in between. */
export type DatabaseFingerprint = { commits: number; rows: Record<string, number> }

export type FingerprintReader = { read(): DatabaseFingerprint; close(): void }

/**
 * Reads a data dir's database through a connection of its own, beside a server using it (tests, scripts/fuzz.ts).
 * `commits` is SQLite's data_version, which changes whenever another connection commits: with the row counts it also
 * catches an UPDATE, and a write rolled back is not counted.
 */
export function openFingerprintReader(dataDir: string): FingerprintReader {
  const sqlite = new Database(databasePath(dataDir), { readonly: true })
  sqlite.run('PRAGMA busy_timeout = 5000')
  const tables = sqlite
    .query<{ name: string }, []>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all()
    .map((row) => row.name)
  const counts = sqlite.query<Record<string, number>, []>(
    `SELECT ${tables.map((table, index) => `(SELECT count(*) FROM "${table}") AS t${index}`).join(', ')}`,
  )
  const dataVersion = sqlite.query<{ data_version: number }, []>('PRAGMA data_version')
  return {
    read() {
      const commits = dataVersion.get()!.data_version
      const row = counts.get()!
      return { commits, rows: Object.fromEntries(tables.map((table, index) => [table, row[`t${index}`]])) }
    },
    close: () => sqlite.close(),
  }
}
