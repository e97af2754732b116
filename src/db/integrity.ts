import { Database } from 'bun:sqlite'
import { databasePath } from './open'

/**
 * SQLite's own check of a data dir's database (every page, index and constraint), opened read-only beside whatever
 * else has it open. Returns the problems found; empty when the database is sound.
 */
export function databaseProblems(dataDir: string): string[] {
  const sqlite = new Database(databasePath(dataDir), { readonly: true })
  try {
    const rows = sqlite.query<{ integrity_check: string }, []>('PRAGMA integrity_check').all()
    const foreignKeys = sqlite
      .query<{ table: string; rowid: number; parent: string }, []>('PRAGMA foreign_key_check')
      .all()
    return [
      ...rows.map((row) => row.integrity_check).filter((result) => result !== 'ok'),
      ...foreignKeys.map((row) => `foreign key: ${row.table} row ${row.rowid} → missing ${row.parent}`),
    ]
  } finally {
    sqlite.close()
  }
}
