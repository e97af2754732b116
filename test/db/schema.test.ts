import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { is } from 'drizzle-orm'
import { getTableConfig, SQLiteSyncDialect, SQLiteTable } from 'drizzle-orm/sqlite-core'
import { openDatabase } from '../../src/db/open'
import * as schema from '../../src/db/schema'

/**
 * The drizzle schema (what the code reads and writes) against the database the migrations build (what is stored):
 * the same tables, columns (type, NOT NULL, primary key) and indexes (columns, uniqueness, partial WHERE), so the
 * two cannot drift apart.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-schema-'))
const { sqlite } = openDatabase(dataDir)
afterAll(() => {
  sqlite.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** SQLite-only machinery declared in migrations alone: the FTS5 trigram index over run numbers and its shadow tables. */
const MIGRATION_ONLY = /^(_migrations|sqlite_.*|workflow_run_numbers.*)$/

type Column = { name: string; type: string; notNull: boolean; primaryKey: boolean }
type Index = { columns: string[]; unique: boolean; where: string | null; name: string | null }

const normalizeSql = (text: string | null) => (text === null ? null : text.replace(/\s+/g, ' ').trim().toLowerCase())
const sortIndexes = (indexes: Index[]) => indexes.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
/** Column order is not compared: a later migration appends what the schema file lists where it belongs. */
const sortColumns = (columns: Column[]) => columns.sort((a, b) => a.name.localeCompare(b.name))

function migratedTables(): Map<string, { columns: Column[]; indexes: Index[] }> {
  const names = sqlite
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'")
    .all()
    .map((row) => row.name)
    .filter((name) => !MIGRATION_ONLY.test(name))
  return new Map(
    names.map((table) => {
      const columns = sqlite
        .query<{ name: string; type: string; notnull: number; pk: number }, []>(`PRAGMA table_xinfo(${table})`)
        .all()
        .map((column) => ({
          name: column.name,
          type: column.type.toLowerCase(),
          notNull: column.notnull === 1 || column.pk > 0,
          primaryKey: column.pk > 0,
        }))
      const indexes = sqlite
        .query<{ name: string; unique: number; origin: string }, []>(`PRAGMA index_list(${table})`)
        .all()
        .filter((index) => index.origin !== 'pk')
        .map((index) => {
          const definition =
            sqlite
              .query<{ sql: string | null }, [string]>('SELECT sql FROM sqlite_master WHERE name = ?')
              .get(index.name)?.sql ?? null
          return {
            columns: sqlite
              .query<{ name: string }, []>(`PRAGMA index_info(${index.name})`)
              .all()
              .map((column) => column.name),
            unique: index.unique === 1,
            where: normalizeSql(definition?.match(/\bWHERE\b([\s\S]*)$/i)?.[1].replace(/;\s*$/, '') ?? null),
            name: index.origin === 'c' ? index.name : null,
          }
        })
      return [table, { columns: sortColumns(columns), indexes: sortIndexes(indexes) }]
    }),
  )
}

function declaredTables(): Map<string, { columns: Column[]; indexes: Index[] }> {
  const dialect = new SQLiteSyncDialect()
  const tables = (Object.values(schema) as unknown[]).filter((value): value is SQLiteTable => is(value, SQLiteTable))
  return new Map(
    tables.map((table) => {
      const config = getTableConfig(table)
      const compositeKey = config.primaryKeys.flatMap((key) => key.columns.map((column) => column.name))
      const columns = config.columns.map((column) => {
        const primaryKey = column.primary || compositeKey.includes(column.name)
        return {
          name: column.name,
          type: column.getSQLType().toLowerCase(),
          notNull: column.notNull || primaryKey,
          primaryKey,
        }
      })
      const single = config.columns
        .filter((column) => column.isUnique)
        .map((column) => ({ columns: [column.name], unique: true, where: null, name: null }))
      const composite = config.uniqueConstraints.map((constraint) => ({
        columns: constraint.columns.map((column) => column.name),
        unique: true,
        where: null,
        name: null,
      }))
      const named = config.indexes.map((index) => ({
        columns: index.config.columns.map((column) => (column as { name: string }).name),
        unique: index.config.unique,
        where: index.config.where ? normalizeSql(dialect.sqlToQuery(index.config.where).sql) : null,
        name: index.config.name,
      }))
      return [config.name, { columns: sortColumns(columns), indexes: sortIndexes([...single, ...composite, ...named]) }]
    }),
  )
}

describe('drizzle schema against the migrated database', () => {
  const migrated = migratedTables()
  const declared = declaredTables()

  test('the same tables', () => {
    expect(migrated.size).toBeGreaterThan(10)
    expect([...declared.keys()].sort()).toEqual([...migrated.keys()].sort())
  })

  for (const table of [...migrated.keys()].sort()) {
    test(`${table}: columns (name, type, NOT NULL, primary key) and indexes`, () => {
      expect(declared.get(table)).toEqual(migrated.get(table)!)
    })
  }
})
