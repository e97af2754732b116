import { Database } from 'bun:sqlite'
import { chmodSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { MIGRATIONS, type Migration } from '../../migrations/index'
import { POSTGRES_MIGRATIONS } from '../../migrations/pg/index'
import { databaseLabel } from '../config'
import { PostgresDatabase } from './postgres/client'
import * as schema from './schema'

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }

/**
 * The connection for raw SQL (plain ANSI SQL with `?` parameters outside src/db/), bulk work and pragmas: bun:sqlite's
 * Database, or on PostgreSQL the client with the same API (./postgres/client.ts).
 */
export type SqlDatabase = Database

export type DatabaseBackend = 'sqlite' | 'postgresql'

export type OpenedDb = { db: Db; sqlite: SqlDatabase; applied: string[]; backend: DatabaseBackend }

/** Which engine holds the data behind a connection. */
export const backendOf = (sqlite: SqlDatabase): DatabaseBackend =>
  (sqlite as unknown) instanceof PostgresDatabase ? 'postgresql' : 'sqlite'

/** SQLite in the data dir, or PostgreSQL at `databaseUrl`; migrated either way. */
export function openConfiguredDatabase(config: { dataDir: string; databaseUrl: string | null }): OpenedDb {
  return config.databaseUrl === null ? openDatabase(config.dataDir) : openPostgres(config.databaseUrl)
}

/**
 * PostgreSQL at `url`, migrated. Instances starting together migrate one at a time: the migrations run in a write
 * transaction, which holds the cluster-wide write lock.
 */
export function openPostgres(url: string, migrations: Migration[] = POSTGRES_MIGRATIONS): OpenedDb {
  let client: PostgresDatabase
  try {
    client = new PostgresDatabase(url)
  } catch (error) {
    const reason = ((error as Error).cause as Error | undefined)?.message ?? (error as Error).message
    throw new Error(`PostgreSQL at ${databaseLabel(url)} could not be opened: ${reason}`)
  }
  const sqlite = client as unknown as SqlDatabase
  try {
    const applied = applyMigrations(sqlite, migrations)
    return { db: drizzle(sqlite, { schema }) as Db, sqlite, applied, backend: 'postgresql' }
  } catch (error) {
    client.close()
    throw error
  }
}

/** The database's file name inside a data dir. */
export const DATABASE_FILE = 'ringbase.db'

export const databasePath = (dataDir: string) => join(dataDir, DATABASE_FILE)

/** Opens (creating if needed) `<dataDir>/ringbase.db` with the pragmas every connection needs, then migrates. */
export function openDatabase(dataDir: string, migrations: Migration[] = MIGRATIONS): OpenedDb {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  // A data dir made before files were private (or by hand) is closed too: what is inside is then out of reach.
  chmodSync(dataDir, 0o700)
  const sqlite = new Database(databasePath(dataDir), { create: true, strict: true })
  // busy_timeout first: the other pragmas may already need to wait for a writer (e.g. `keys create` beside a server).
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA foreign_keys = ON')
  const applied = applyMigrations(sqlite, migrations)
  return { db: drizzle(sqlite, { schema }) as Db, sqlite, applied, backend: 'sqlite' }
}

/**
 * Applies every pending migration, tracked by file name, all in one write transaction, on either engine. The applied
 * names are read inside it: two processes migrating at once apply each migration once. Returns the names applied.
 */
export function applyMigrations(sqlite: SqlDatabase, migrations: Migration[]): string[] {
  return sqlite
    .transaction(() => {
      sqlite.run('CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)')
      const done = new Set(
        sqlite
          .query<{ name: string }, []>('SELECT name FROM _migrations')
          .all()
          .map((row) => row.name),
      )
      const pending = migrations.filter((migration) => !done.has(migration.name))
      const record = sqlite.query('INSERT INTO _migrations (name, applied_at) VALUES (?, ?)')
      for (const migration of pending) {
        sqlite.run(migration.sql)
        record.run(migration.name, new Date().toISOString())
      }
      return pending.map((migration) => migration.name)
    })
    .immediate()
}
