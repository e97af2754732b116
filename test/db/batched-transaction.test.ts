import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { batchedTransaction } from '../../src/db/batched-transaction'

let dir: string
let owner: { sqlite: Database }
/** A second connection: it sees only what is committed. */
let reader: Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ringbase-batched-'))
  owner = { sqlite: new Database(join(dir, 'batch.db')) }
  owner.sqlite.run('PRAGMA journal_mode = WAL')
  owner.sqlite.run('PRAGMA foreign_keys = ON')
  owner.sqlite.run('CREATE TABLE notes (text TEXT NOT NULL UNIQUE)')
  owner.sqlite.run('CREATE TABLE parents (id INTEGER PRIMARY KEY)')
  owner.sqlite.run(
    'CREATE TABLE children (parent_id INTEGER NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)',
  )
  reader = new Database(join(dir, 'batch.db'), { readonly: true })
})
afterEach(() => {
  reader.close()
  owner.sqlite.close()
  rmSync(dir, { recursive: true, force: true })
})

const add = (text: string) => owner.sqlite.run('INSERT INTO notes (text) VALUES (?)', [text])
const committedNotes = () =>
  reader
    .query<{ text: string }, []>('SELECT text FROM notes ORDER BY rowid')
    .all()
    .map((row) => row.text)

test('calls made together commit together; each promise settles with its result once the data is committed', async () => {
  const results = Array.from({ length: 5 }, (_, index) =>
    batchedTransaction(owner, () => {
      add(`note ${index}`)
      return index
    }),
  )
  // Nothing has run yet: the batch is flushed on a later turn of the event loop.
  expect(committedNotes()).toEqual([])
  const seenOnSettle = await Promise.all(
    results.map((result) => result.then((value) => ({ value, committed: committedNotes().length }))),
  )
  expect(seenOnSettle).toEqual([0, 1, 2, 3, 4].map((value) => ({ value, committed: 5 })))
  expect(owner.sqlite.inTransaction).toBe(false)
})

test('a call that throws rolls back only its own writes and rejects only its own promise', async () => {
  const results = [
    batchedTransaction(owner, () => add('first')),
    batchedTransaction(owner, () => {
      add('dropped')
      add('first')
    }),
    batchedTransaction(owner, () => add('last')),
  ]
  const settled = await Promise.allSettled(results)
  expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect(String((settled[1] as PromiseRejectedResult).reason)).toContain('UNIQUE')
  expect(committedNotes()).toEqual(['first', 'last'])
})

test('a failed COMMIT rejects every call of the batch and leaves nothing', async () => {
  const settled = await Promise.allSettled([
    batchedTransaction(owner, () => add('would be kept')),
    // A deferred foreign key is checked only at COMMIT.
    batchedTransaction(owner, () => owner.sqlite.run('INSERT INTO children (parent_id) VALUES (42)')),
  ])
  expect(settled.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
  expect(String((settled[0] as PromiseRejectedResult).reason)).toContain('FOREIGN KEY')
  expect(committedNotes()).toEqual([])
  expect(owner.sqlite.inTransaction).toBe(false)
})

test('a batch holds at most 64 calls: the next ones commit in the following batches', async () => {
  // Each call notes how many rows were committed when it ran: the same count for every call of one batch.
  const committedBefore = await Promise.all(
    Array.from({ length: 130 }, (_, index) =>
      batchedTransaction(owner, () => {
        const committed = committedNotes().length
        add(`note ${index}`)
        return committed
      }),
    ),
  )
  expect(committedBefore).toEqual([...Array(64).fill(0), ...Array(64).fill(64), 128, 128])
})
