import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { transaction } from '../../src/db/transaction'

let owner: { sqlite: Database }
beforeEach(() => {
  owner = { sqlite: new Database(':memory:') }
  owner.sqlite.run('CREATE TABLE notes (text TEXT NOT NULL)')
})
afterEach(() => owner.sqlite.close())

const add = (text: string) => owner.sqlite.run('INSERT INTO notes (text) VALUES (?)', [text])
const notes = () =>
  owner.sqlite
    .query<{ text: string }, []>('SELECT text FROM notes ORDER BY rowid')
    .all()
    .map((row) => row.text)
const fails = (work: () => void) => expect(() => transaction(owner, work)).toThrow('refused')
const refuse = () => {
  throw new Error('refused')
}

test('commits what the work wrote and returns its result; a throw leaves nothing', () => {
  expect(
    transaction(owner, () => {
      add('kept')
      return 7
    }),
  ).toBe(7)
  fails(() => {
    add('dropped')
    refuse()
  })
  expect(notes()).toEqual(['kept'])
  expect(owner.sqlite.inTransaction).toBe(false)
})

test('a nested transaction is a savepoint: its throw undoes only its own writes, an outer throw undoes all', () => {
  transaction(owner, () => {
    add('outer')
    expect(() =>
      transaction(owner, () => {
        add('inner, dropped')
        refuse()
      }),
    ).toThrow('refused')
    transaction(owner, () => add('inner, kept'))
  })
  fails(() => {
    transaction(owner, () => add('nested in a failed one'))
    refuse()
  })
  expect(notes()).toEqual(['outer', 'inner, kept'])
  expect(owner.sqlite.inTransaction).toBe(false)
})

test('the transaction holds the write lock from its start (BEGIN IMMEDIATE), before it writes anything', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-transaction-'))
  const file = { sqlite: new Database(join(dir, 'lock.db')) }
  const other = new Database(join(dir, 'lock.db'))
  try {
    file.sqlite.run('PRAGMA journal_mode = WAL')
    transaction(file, () => {
      expect(() => other.run('BEGIN IMMEDIATE')).toThrow(/locked|busy/i)
    })
    other.run('BEGIN IMMEDIATE')
    other.run('COMMIT')
  } finally {
    other.close()
    file.sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
