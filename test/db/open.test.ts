import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { applyMigrations, openDatabase } from '../../src/db/open'

describe('database', () => {
  test('pragmas are set and migrations are applied once, tracked by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ringbase-db-'))
    try {
      const first = openDatabase(dir)
      expect(first.applied[0]).toBe('0001_core')
      const pragma = (name: string) => Object.values(first.sqlite.query(`PRAGMA ${name}`).get() as object)[0]
      expect(pragma('journal_mode')).toBe('wal')
      expect(pragma('synchronous')).toBe(1)
      expect(pragma('foreign_keys')).toBe(1)
      expect(pragma('busy_timeout')).toBe(5000)
      first.sqlite.close()
      const second = openDatabase(dir)
      expect(second.applied).toEqual([])
      second.sqlite.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('pending migrations run in one transaction: a failing one leaves none applied', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ringbase-db-'))
    try {
      const { sqlite } = openDatabase(dir, [])
      expect(() =>
        applyMigrations(sqlite, [
          { name: 'a', sql: 'CREATE TABLE a (id INTEGER)' },
          { name: 'b', sql: 'CREATE TABLE broken (' },
        ]),
      ).toThrow()
      expect(sqlite.query("SELECT name FROM sqlite_master WHERE name = 'a'").all()).toEqual([])
      expect(sqlite.query('SELECT name FROM _migrations').all()).toEqual([])
      sqlite.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
