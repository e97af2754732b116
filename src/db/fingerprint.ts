import { Database } from 'bun:sqlite'
import { databasePath } from './open'

/** Per table, its row count and a digest of its content: two equal fingerprints mean nothing was written in between. */
export type DatabaseFingerprint = { rows: Record<string, number>; digests: Record<string, string> }

export type FingerprintReader = { read(): DatabaseFingerprint; close(): void }

/**
 * Tables the server writes on its own, whatever the requests: its heartbeat and its ARI leases, renewed every few
 * seconds. A commit there is no request's doing, so it is left out.
 */
const BOOKKEEPING_TABLES = new Set(['instances', 'ari_leases'])

/**
 * Reads a data dir's database through a connection of its own, beside a server using it (tests, scripts/fuzz.ts).
 * Content digests rather than SQLite's commit counter: an UPDATE is caught, a rolled-back write is not counted, and the
 * server's own bookkeeping (BOOKKEEPING_TABLES) does not look like a request's write.
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
    .filter((table) => !BOOKKEEPING_TABLES.has(table))
  const contents = tables.map(
    (table) => [table, sqlite.query<Record<string, unknown>, []>(`SELECT * FROM "${table}"`)] as const,
  )
  const read = sqlite.transaction(() => {
    const rows: Record<string, number> = {}
    const digests: Record<string, string> = {}
    for (const [table, query] of contents) {
      const tableRows = query.values()
      rows[table] = tableRows.length
      digests[table] = Bun.hash(JSON.stringify(tableRows)).toString(36)
    }
    return { rows, digests }
  })
  return { read, close: () => sqlite.close() }
}
