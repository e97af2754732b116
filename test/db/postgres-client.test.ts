import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { PostgresDatabase } from '../../src/db/postgres/client'
import { toPostgres } from '../../src/db/postgres/translate'
import { postgresMissing, startPostgres, type TestPostgres } from '../support/postgres'
import { startTcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait'

test('SQLite-flavoured SQL as PostgreSQL runs it', () => {
  expect(
    toPostgres("SELECT * FROM t WHERE a = ? AND b LIKE ? ESCAPE '\\' AND c = 'x?' ORDER BY d DESC, e ASC"),
  ).toEqual({
    text: "SELECT * FROM t WHERE a = $1 AND b ILIKE $2 ESCAPE '\\' AND c = 'x?' ORDER BY d DESC NULLS LAST, e ASC NULLS FIRST",
    listParameters: [],
  })
  expect(toPostgres('SELECT id FROM t WHERE x = ? AND id IN (SELECT value FROM json_each(?)) LIMIT ?')).toEqual({
    text: 'SELECT id FROM t WHERE x = $1 AND id = ANY($2) LIMIT $3',
    listParameters: [1],
  })
  expect(toPostgres('SELECT ?1 || "select" || ?2, ? FROM t WHERE +t.a = 1 AND t.b+1 > 2').text).toBe(
    'SELECT $1 || "select" || $2, $3 FROM t WHERE t.a = 1 AND t.b+1 > 2',
  )
  expect(toPostgres('insert into "t" ("a") values (?) on conflict ("t"."a") do update set "a" = ?').text).toBe(
    'insert into "t" ("a") values ($1) on conflict ("a") do update set "a" = $2',
  )
})

const missing = postgresMissing()
describe.skipIf(missing !== null)('the synchronous PostgreSQL client', () => {
  let postgres: TestPostgres
  let db: PostgresDatabase
  let admin: PostgresDatabase
  beforeAll(async () => {
    postgres = await startPostgres()
    db = new PostgresDatabase(postgres.url)
    admin = new PostgresDatabase(postgres.url)
    db.exec('CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT, price DOUBLE PRECISION, data BYTEA)')
  })
  afterAll(() => {
    db?.close()
    admin?.close()
    postgres?.stop()
  })

  /** What an administrator's pg_terminate_backend, or a server restart, does to the client's connection. */
  const cutConnection = () =>
    admin
      .query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()',
      )
      .all()

  test('gives values as bun:sqlite does: integers, sums and booleans as numbers, bytes, NUL-free text', () => {
    db.query('INSERT INTO items VALUES (?, ?, ?, ?)').run(1, 'a\u0000b', 1.5, new Uint8Array([1, 2]))
    expect(
      db.query('SELECT id, name, price, data, id = 1 AS is_one, sum(id) OVER () AS total FROM items').get(),
    ).toEqual({
      id: 1,
      name: 'a\uFFFDb',
      price: 1.5,
      data: expect.any(Uint8Array),
      is_one: 1,
      total: 1,
    })
    expect(db.query('UPDATE items SET price = ? WHERE id = ?').run(2, 1).changes).toBe(1)
  })

  test('every answer is its own statement’s, thousands in a row (none taken for the next one’s)', () => {
    const echo = db.query('SELECT CAST(? AS BIGINT) AS n')
    const wrong: number[] = []
    for (let n = 0; n < 5000; n++) if ((echo.get(n) as { n: number }).n !== n) wrong.push(n)
    expect(wrong).toEqual([])
  })

  test('a unique violation is reported in SQLite’s words, which the services match', () => {
    expect(() => db.query('INSERT INTO items (id) VALUES (?)').run(1)).toThrow('UNIQUE constraint failed: items.id')
  })

  test('a lost connection fails one statement; the next one connects again', () => {
    cutConnection()
    expect(() => db.query('SELECT count(*) AS n FROM items').get()).toThrow()
    expect(db.query('SELECT count(*) AS n FROM items').get()).toEqual({ n: 1 })
  })

  test("a statement the client itself refuses is that statement's error: not a lost database, and the transaction goes on", () => {
    const tooMany = Array.from({ length: 70_000 }, (_, index) => index)
    db.run('BEGIN IMMEDIATE')
    let refused: unknown = null
    try {
      db.query(`SELECT 1 AS one WHERE 1 IN (${tooMany.map(() => '?').join(', ')})`).get(...tooMany)
    } catch (error) {
      refused = error
    }
    expect(refused).toBeInstanceOf(Error)
    expect(refused).not.toMatchObject({ kind: 'unavailable' })
    db.query('INSERT INTO items (id, name) VALUES (?, ?)').run(5, 'kept')
    db.run('COMMIT')
    expect(db.query('SELECT name FROM items WHERE id = 5').get()).toEqual({ name: 'kept' })
    db.query('DELETE FROM items WHERE id = 5').run()
  })

  test('lost inside a transaction: nothing more runs until the rollback, and nothing of it was written', () => {
    db.run('BEGIN IMMEDIATE')
    db.query('INSERT INTO items (id, name) VALUES (?, ?)').run(2, 'lost')
    cutConnection()
    expect(() => db.query('INSERT INTO items (id, name) VALUES (?, ?)').run(3, 'after')).toThrow()
    let outside: unknown = null
    try {
      db.query('INSERT INTO items (id, name) VALUES (?, ?)').run(4, 'outside')
    } catch (error) {
      outside = error
    }
    // Answered as the database being unavailable (503 through the API), with the reason for the log.
    expect(outside).toMatchObject({
      kind: 'unavailable',
      cause: { message: expect.stringMatching(/lost during this transaction/) },
    })
    db.run('ROLLBACK')
    expect(db.inTransaction).toBe(false)
    expect(db.query('SELECT id FROM items ORDER BY id').all()).toEqual([{ id: 1 }])
  })

  test('a server that stops answering holds the caller for one connect timeout, not on every statement; it is used again once it answers', async () => {
    const proxy = await startTcpProxy(new URL(postgres.url).port)
    const { command } = proxy
    const url = new URL(postgres.url)
    url.port = String(proxy.port)
    const client = new PostgresDatabase(url.toString(), { connectTimeoutSeconds: 1 })
    const attempt = () => {
      const started = performance.now()
      try {
        return { answer: client.query('SELECT 1 AS one').get(), ms: performance.now() - started }
      } catch (error) {
        return { error, ms: performance.now() - started }
      }
    }
    try {
      expect(attempt().answer).toEqual({ one: 1 })
      await command('blackhole')
      expect(attempt().error).toMatchObject({ kind: 'unavailable' })
      // Connecting again: nothing answers, so this statement waits for the connect timeout.
      const connecting = attempt()
      expect(connecting.error).toMatchObject({ kind: 'unavailable' })
      expect(connecting.ms).toBeGreaterThan(900)
      // Meanwhile the connection is made again in the background; statements are refused without waiting.
      const refused = attempt()
      expect(refused.error).toMatchObject({ kind: 'unavailable' })
      expect(refused.ms).toBeLessThan(connecting.ms / 3)
      await command('forward')
      await waitFor('the server used again', () => attempt().answer !== undefined, 10_000, 200)
    } finally {
      client.close()
      proxy.stop()
    }
  })

  test('a server that goes silent on an open connection (no error, no answer) fails the statement in seconds, not at the answer timeout', async () => {
    const proxy = await startTcpProxy(new URL(postgres.url).port)
    const url = new URL(postgres.url)
    url.port = String(proxy.port)
    const client = new PostgresDatabase(url.toString(), { connectTimeoutSeconds: 1 })
    try {
      client.exec('CREATE TEMP TABLE IF NOT EXISTS marks (id INTEGER)')
      expect(client.query('SELECT 1 AS one').get()).toEqual({ one: 1 })
      await proxy.command('silence')
      const started = performance.now()
      let failure: unknown
      try {
        client.query('SELECT 2 AS two').get()
      } catch (error) {
        failure = error
      }
      const waitedMs = performance.now() - started
      // a check after 2 s on a new connection, which gets no answer in the connect timeout (1 s)
      expect(failure).toMatchObject({
        kind: 'unavailable',
        cause: { message: expect.stringMatching(/stopped answering/) },
      })
      expect(waitedMs).toBeGreaterThan(1_900)
      expect(waitedMs).toBeLessThan(10_000)
      await proxy.command('forward')
      await waitFor(
        'the server used again',
        () => {
          try {
            return client.query('SELECT 3 AS three').get() !== undefined
          } catch {
            return false
          }
        },
        10_000,
        200,
      )
    } finally {
      client.close()
      proxy.stop()
    }
  })

  test('a statement that is only slow is left to finish: the server still answers the check', () => {
    const client = new PostgresDatabase(postgres.url)
    try {
      expect(client.query('SELECT 7 AS seven FROM pg_sleep(3)').get()).toEqual({ seven: 7 })
    } finally {
      client.close()
    }
  })
})
