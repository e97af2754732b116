import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS } from '../../migrations/index'
import { POSTGRES_MIGRATIONS } from '../../migrations/pg/index'
import { openDatabase, openPostgres, type SqlDatabase } from '../../src/db/open'
import { compiledBinary } from '../support/compiled-binary'
import { postgresMissing, startPostgres, type TestPostgres } from '../support/postgres'

const missing = postgresMissing()
if (missing) console.warn(missing)

type Shape = { columns: string[]; indexes: string[] }

/** Every column (`table.column type notnull`) and index name of a migrated SQLite database. */
function sqliteShape(): Shape {
  const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-pg-compare-'))
  const { sqlite } = openDatabase(dataDir)
  try {
    // Ordinary tables only: the full-text index is a virtual table with shadow tables (PostgreSQL scans instead),
    // SQLite's own start with sqlite_, and each dialect's migrator keeps its own _migrations.
    const tables = sqlite
      .query<{ name: string }, []>(
        `SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%'
           AND name <> '_migrations' AND name NOT LIKE 'workflow_run_numbers%'`,
      )
      .all()
      .map(({ name }) => name)
    const columns = tables.flatMap((table) =>
      sqlite
        .query<{ name: string; type: string; notnull: number; pk: number }, [string]>(
          'SELECT name, type, "notnull", pk FROM pragma_table_xinfo(?)',
        )
        .all(table)
        .map(
          (column) =>
            `${table}.${column.name} ${sqliteType(column.type)} ${column.notnull || column.pk ? 'not null' : 'null'}`,
        ),
    )
    const indexes = sqlite
      .query<{ name: string }, []>(
        `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name NOT LIKE 'workflow_run_numbers%'`,
      )
      .all()
      .map(({ name }) => name)
    return { columns: columns.sort(), indexes: indexes.sort() }
  } finally {
    sqlite.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const sqliteType = (declared: string) =>
  ({ INTEGER: 'integer', REAL: 'real', BLOB: 'blob', TEXT: 'text' })[declared.toUpperCase()] ?? 'text'

const POSTGRES_TYPES: Record<string, string> = {
  bigint: 'integer',
  'double precision': 'real',
  bytea: 'blob',
  text: 'text',
}

function postgresShape(sqlite: SqlDatabase): Shape {
  const columns = sqlite
    .query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }, []>(
      `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name <> '_migrations'`,
    )
    .all()
    .map(
      (column) =>
        `${column.table_name}.${column.column_name} ${POSTGRES_TYPES[column.data_type] ?? column.data_type} ${column.is_nullable === 'NO' ? 'not null' : 'null'}`,
    )
  const indexes = sqlite
    .query<{ indexname: string }, []>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'`,
    )
    .all()
    .map((row) => row.indexname)
  return { columns: columns.sort(), indexes: indexes.sort() }
}

describe.skipIf(missing !== null)('PostgreSQL migrations', () => {
  let postgres: TestPostgres
  beforeAll(async () => {
    postgres = await startPostgres()
  })
  afterAll(() => postgres?.stop())

  test('give every SQLite table, column (type and NOT NULL) and named index its PostgreSQL counterpart', () => {
    const { sqlite, applied } = openPostgres(postgres.url)
    try {
      expect(applied).toEqual(POSTGRES_MIGRATIONS.map((migration) => migration.name))
      const expected = sqliteShape()
      const actual = postgresShape(sqlite)
      expect(expected.columns.length).toBeGreaterThan(100)
      expect(actual.columns).toEqual(expected.columns)
      expect(actual.indexes).toEqual(expected.indexes)
    } finally {
      sqlite.close()
    }
  })

  test('the compiled `ringbase migrate --database-url` migrates an empty database, then `keys create` works on it', () => {
    const admin = openPostgres(postgres.url).sqlite
    admin.exec('CREATE DATABASE by_command')
    admin.close()
    const url = postgres.url.replace(/\/postgres$/, '/by_command')
    const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-pg-migrate-'))
    try {
      const run = (args: string[]) =>
        Bun.spawnSync([compiledBinary(), ...args, '--dir', dataDir, '--database-url', url], {
          stdout: 'pipe',
          stderr: 'pipe',
        })
      const migrated = run(['migrate'])
      expect(migrated.stdout.toString()).toBe('migrations applied\n')
      const key = run(['keys', 'create', '--org', 'acme'])
      expect(key.exitCode).toBe(0)
      expect(key.stdout.toString()).toMatch(/^rb_\S+\n$/)
      const { sqlite, applied } = openPostgres(url)
      expect(applied).toEqual([])
      expect(sqlite.query('SELECT name FROM organizations').all()).toEqual([{ name: 'acme' }])
      sqlite.close()
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)

  test('every SQLite migration after the baseline has its PostgreSQL twin of the same name', () => {
    const baselineEnd = MIGRATIONS.findIndex((migration) => migration.name === '0018_web_calls')
    const later = MIGRATIONS.slice(baselineEnd + 1).map((migration) => migration.name)
    const twins = POSTGRES_MIGRATIONS.map((migration) => migration.name)
    expect(later.filter((name) => !twins.includes(name))).toEqual([])
  })

  test('two instances starting together on an empty database migrate it once; a later start applies nothing', async () => {
    const admin = openPostgres(postgres.url).sqlite
    admin.exec('CREATE DATABASE racing')
    admin.close()
    const url = postgres.url.replace(/\/postgres$/, '/racing')
    const script = `import { openPostgres } from './src/db/open'; openPostgres(process.argv[1]).sqlite.close()`
    const starts = [0, 1].map(() =>
      Bun.spawn([process.execPath, '-e', script, url], { cwd: join(import.meta.dir, '..', '..'), stderr: 'pipe' }),
    )
    const codes = await Promise.all(starts.map((start) => start.exited))
    expect(codes).toEqual([0, 0])
    const { sqlite, applied } = openPostgres(url)
    try {
      expect(applied).toEqual([])
      const names = sqlite.query<{ name: string }, []>('SELECT name FROM _migrations ORDER BY name').all()
      expect(names.map((row) => row.name)).toEqual(POSTGRES_MIGRATIONS.map((migration) => migration.name))
    } finally {
      sqlite.close()
    }
  })
})
