import type { Database, SQLQueryBindings } from 'bun:sqlite'
import { backendOf } from './open'

/**
 * SQL text with its `?` parameters, for queries composed per request on hot paths. Composing them with drizzle's `sql`
 * cost ~70 µs a request (measured on the usage report), plain strings a few µs; the text of each query shape stays the
 * same, so bun:sqlite's statement cache compiles it once.
 */
export type SqlPart = { text: string; params: SQLQueryBindings[] }

export const sqlPart = (text: string, ...params: SQLQueryBindings[]): SqlPart => ({ text, params })

/** The parts joined by `separator`, empty ones left out. */
export function joinSqlParts(parts: (SqlPart | undefined)[], separator: string): SqlPart {
  const present = parts.filter((part): part is SqlPart => part !== undefined && part.text !== '')
  return { text: present.map((part) => part.text).join(separator), params: present.flatMap((part) => part.params) }
}

/**
 * A page's LIMIT and OFFSET as parameters. Not a bare `LIMIT ?`: SQLite (3.47+) plans with a bound LIMIT's value, so it
 * prepares such a statement again each time it is bound (measured on the usage report: 27 µs instead of 2 µs for a
 * one-run page, 50 µs once the report's columns are around it).
 */
export const limitOffset = (limit: number, offset: number): SqlPart => sqlPart('LIMIT ? + 0 OFFSET ?', limit, offset)

/**
 * `expression IN (values)` with one parameter for any number of values (SQLite: json_each over a JSON array), so the
 * statement text, and with it its cached compilation, stays the same. PostgreSQL: `= ANY(?)` with an array.
 */
export const inList = (expression: string, values: readonly (string | number)[]): SqlPart =>
  sqlPart(`${expression} IN (SELECT value FROM json_each(?))`, JSON.stringify(values))

/** Every row of the query, through the statement cache. */
export function allRows<Row>(sqlite: Database, query: SqlPart): Row[] {
  return sqlite.query<Row, SQLQueryBindings[]>(query.text).all(...query.params)
}

/**
 * The rows of `query` as the text of a JSON array of objects, built by the database: a list answered this way makes no
 * JS object or string per row (listing 20 agents over HTTP, that was ~10 µs of server CPU per request, much of it the
 * garbage collector's). `columns` are the query's result column names, in order; values come out as stored (integers,
 * text, null: no booleans). The elements keep the query's ORDER BY (SQLite keeps a subquery's order for an aggregate
 * over it; the list tests check the order). PostgreSQL: json_agg over json_build_object, which keeps the subquery's
 * order too.
 */
export function jsonRows(sqlite: Database, columns: readonly string[], query: SqlPart): string {
  const pairs = columns.map((column) => `'${column}', "${column}"`).join(', ')
  const text =
    backendOf(sqlite) === 'postgresql'
      ? `SELECT coalesce(json_agg(json_build_object(${pairs})), '[]')::text AS rows FROM (${query.text}) AS listed`
      : `SELECT json_group_array(json_object(${pairs})) AS rows FROM (${query.text})`
  return sqlite.query<{ rows: string }, SQLQueryBindings[]>(text).get(...query.params)!.rows
}
