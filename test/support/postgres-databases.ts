import { Database } from 'bun:sqlite'
import { test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DATABASE_FILE, openPostgres, type SqlDatabase } from '../../src/db/open'
import { PostgresDatabase } from '../../src/db/postgres/client'

/**
 * With RINGBASE_TEST_POSTGRES_URL (a cluster's `postgres` database, as test/postgres-api.test.ts sets it), each test app
 * gets a PostgreSQL database of its own instead of SQLite: a copy of one migrated once per test process. Copies are
 * made ahead, while the tests run (a copy takes 20–400 ms with the machine idle or busy), and dropped in the background.
 */
export const TEST_POSTGRES_URL = process.env.RINGBASE_TEST_POSTGRES_URL || null

/** Copies kept ready. */
const READY_TARGET = 2

let admin: PostgresDatabase | null = null
let background: InstanceType<typeof Bun.SQL> | null = null
let template: string | null = null
let created = 0
const ready: string[] = []
let refilling = false

const databaseUrl = (name: string) => {
  const url = new URL(TEST_POSTGRES_URL!)
  url.pathname = `/${name}`
  return url.toString()
}

function templateName(): string {
  if (template !== null) return template
  admin = new PostgresDatabase(TEST_POSTGRES_URL!)
  background = new Bun.SQL(TEST_POSTGRES_URL!, { max: 1 })
  const name = `ringbase_template_${process.pid}`
  admin.exec(`DROP DATABASE IF EXISTS ${name}`)
  admin.exec(`CREATE DATABASE ${name}`)
  openPostgres(databaseUrl(name)).sqlite.close()
  template = name
  return name
}

const nextName = () => `ringbase_test_${process.pid}_${++created}`

async function refill(): Promise<void> {
  if (refilling) return
  refilling = true
  try {
    while (ready.length < READY_TARGET) {
      const name = nextName()
      await background!.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY FILE_COPY`)
      ready.push(name)
    }
  } catch {
    // The next app makes its copy itself.
  } finally {
    refilling = false
  }
}

/** A new, migrated, empty database's URL. */
export function freshTestDatabase(): string {
  const source = templateName()
  let name = ready.shift()
  if (name === undefined) {
    name = nextName()
    admin!.exec(`CREATE DATABASE ${name} TEMPLATE ${source} STRATEGY FILE_COPY`)
  }
  void refill()
  return databaseUrl(name)
}

/** Drops a database `freshTestDatabase` made (its connections closed first), in the background. */
export function dropTestDatabase(url: string): void {
  const name = new URL(url).pathname.slice(1)
  void background?.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
}

/** A test of SQLite's own file (read beside the server, fingerprinted): skipped when the apps run on PostgreSQL. */
export const sqliteOnlyTest = test.skipIf(TEST_POSTGRES_URL !== null)

type AppWithDatabase = { dataDir: string; ctx?: { config: { databaseUrl: string | null }; sqlite: SqlDatabase } }

/** A second connection to the app's database, as another process would open it: the file, or the PostgreSQL database. */
export function otherConnection(app: AppWithDatabase): SqlDatabase {
  const url = app.ctx?.config.databaseUrl ?? null
  if (url !== null) return new PostgresDatabase(url) as unknown as SqlDatabase
  const sqlite = new Database(join(app.dataDir, DATABASE_FILE))
  sqlite.run('PRAGMA busy_timeout = 5000')
  return sqlite
}

/**
 * Everything the database holds, as text: SQLite's file and WAL as bytes, or every row of every PostgreSQL table. What
 * a test proves absent here is absent from the data at rest.
 */
export function storedDatabaseText(app: AppWithDatabase): string {
  const sqlite = app.ctx?.sqlite
  if (sqlite && app.ctx?.config.databaseUrl) {
    const tables = sqlite
      .query<{ name: string }, []>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")
      .all()
    return tables
      .map(
        ({ name }) =>
          sqlite.query<{ rows: string | null }, []>(`SELECT string_agg(t::text, '\n') AS rows FROM "${name}" t`).get()!
            .rows ?? '',
      )
      .join('\n')
  }
  sqlite?.run('PRAGMA wal_checkpoint(TRUNCATE)')
  const path = join(app.dataDir, DATABASE_FILE)
  return [path, `${path}-wal`]
    .filter(existsSync)
    .map((file) => readFileSync(file).toString('latin1'))
    .join('\n')
}

/** Makes every insert into `table` fail with `message` (a full disk, a broken database), on either engine. */
export function failInsertsInto(app: Required<AppWithDatabase>, table: string, message: string): void {
  const quoted = message.replaceAll("'", "''")
  if (app.ctx.config.databaseUrl === null) {
    app.ctx.sqlite.run(
      `CREATE TRIGGER refuse_${table} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, '${quoted}'); END`,
    )
    return
  }
  app.ctx.sqlite.run(
    `CREATE FUNCTION refuse_${table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${quoted}'; END $$;
     CREATE TRIGGER refuse_${table} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_${table}();`,
  )
}
