import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildContext } from '../src/boot'
import { loadConfig } from '../src/config'
import { MasterKeyMismatch } from '../src/credentials/master-key-check'
import { createLogger } from '../src/log'
import { postgresMissing, startPostgres, type TestPostgres } from './support/postgres'

// Secrets are sealed with the master key: an instance started with another key than the one the installation's
// secrets were sealed with is refused at start, before it serves anything.

const KEY_A = 'a'.repeat(64)
const KEY_B = 'b'.repeat(64)
const dirs: string[] = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-key-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const start = (flags: Record<string, string>, masterKey?: string) =>
  buildContext(loadConfig(flags, masterKey ? { RINGBASE_MASTER_KEY: masterKey } : {}), {
    log: createLogger('silent'),
  })

test('SQLite: a restart with another RINGBASE_MASTER_KEY than the data dir was started with is refused', () => {
  const dir = freshDir()
  start({ dir }, KEY_A).sqlite.close()
  expect(() => start({ dir }, KEY_B)).toThrow(MasterKeyMismatch)
  expect(() => start({ dir }, KEY_B)).toThrow(/give every instance the same key/)
  // The key file made at the first start without the variable is the other way to give the same key.
  start({ dir }, KEY_A).sqlite.close()
})

const missing = postgresMissing()
describe.skipIf(missing !== null)('PostgreSQL: instances with data dirs of their own share one database', () => {
  let postgres: TestPostgres
  beforeAll(async () => {
    postgres = await startPostgres()
  })
  afterAll(() => postgres?.stop())

  test('the second instance starts with the same key, and is refused with its own key file', () => {
    const first = start({ dir: freshDir(), 'database-url': postgres.url }, KEY_A)
    try {
      start({ dir: freshDir(), 'database-url': postgres.url }, KEY_A).sqlite.close()
      expect(() => start({ dir: freshDir(), 'database-url': postgres.url })).toThrow(MasterKeyMismatch)
    } finally {
      first.sqlite.close()
    }
  })
})
