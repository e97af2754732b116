import type { SqlDatabase } from '../db/open'

/** The credentials' statements with SQL of their own. */

/** Records `value` under `name` unless a value is recorded already; returns the recorded one. */
export function recordInstallationFact(sqlite: SqlDatabase, name: string, value: string): string {
  sqlite.query('INSERT INTO installation (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING').run(name, value)
  return sqlite.query<{ value: string }, [string]>('SELECT value FROM installation WHERE name = ?').get(name)!.value
}
