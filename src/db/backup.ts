import { Database } from 'bun:sqlite'
import { DATABASE_FILE, databasePath } from './open'

/** The files SQLite keeps for the database of a data dir: a backup takes a snapshot instead of copying them. */
export const DATABASE_FILES = [DATABASE_FILE, `${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`]

/**
 * A consistent copy of a data dir's database in one file, taken while a server may be writing to it: `VACUUM INTO`
 * reads one snapshot (WAL) on its own connection, so the server's writers are not blocked meanwhile.
 */
export function snapshotDatabase(dataDir: string, targetPath: string): void {
  const sqlite = new Database(databasePath(dataDir), { readonly: true })
  try {
    sqlite.run('PRAGMA busy_timeout = 5000')
    sqlite.run('VACUUM INTO ?', [targetPath])
  } finally {
    sqlite.close()
  }
}
