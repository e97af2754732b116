import { SQL } from 'bun'
import type { MessagePort } from 'node:worker_threads'
import type { BridgeAnswer, BridgeReply, BridgeRequest, BridgeSetup } from './protocol'

/**
 * The PostgreSQL side of the synchronous client (./client.ts): one reserved connection, statements run one at a time
 * in the order they arrive. Each answer goes to the answer port, then the shared flag wakes the waiting thread.
 *
 * A lost connection (the server restarted, a network cut, an administrator's terminate) fails the statement that met
 * it, and the next one connects again. When that connect fails too, the connection is made again in the background and
 * statements fail at once meanwhile: the waiting thread is the server's event loop, and a server that does not answer
 * would otherwise hold it for the whole connect timeout on every statement. Lost inside a transaction, the
 * transaction is gone with it: every statement fails until the client's ROLLBACK, so nothing meant for that
 * transaction runs outside it.
 *
 * A server that stops answering on a connection already made (a network cut that drops packets) gives no error at
 * all: a statement unanswered for PROBE_AFTER_MS makes the worker ask the server again on a second connection. If that
 * gets no answer within the connect timeout either, the statement fails as a lost connection and the worker connects
 * again in the background: the server's event loop waits seconds for a vanished database, not the client's last-resort
 * answer timeout (client.ts).
 */

declare const self: Worker

const BOOL = 16
const INT8 = 20
const NUMERIC = 1700
const JSON_TYPES = new Set([114, 3802])

type Connection = Awaited<ReturnType<SQL['reserve']>>

let connection: Connection | null = null
let pool: SQL | null = null
/** How to make the pool again (after a connection that stopped answering), and the liveness check's connections. */
let poolSetup: { url: string; connectTimeoutSeconds: number } | null = null
/** Run on each new connection: the session's time limits. */
let sessionSettings = ''
let lostInTransaction = false
let answers: MessagePort | null = null
let signal: Int32Array | null = null

/** A value as SQLite would give it: int8, numeric and booleans as numbers (every value here fits a double), JSON as text. */
function sqliteValue(type: number, value: unknown): unknown {
  if (value === null) return null
  if (type === INT8 || type === NUMERIC) return Number(value)
  if (type === BOOL) return value ? 1 : 0
  if (JSON_TYPES.has(type)) return typeof value === 'string' ? value : JSON.stringify(value)
  return value
}

function asSqliteValues(rows: unknown[][], types: number[]): unknown[][] {
  const converted = types.flatMap((type, index) =>
    type === INT8 || type === NUMERIC || type === BOOL || JSON_TYPES.has(type) ? [index] : [],
  )
  if (converted.length === 0) return rows
  for (const row of rows) for (const index of converted) row[index] = sqliteValue(types[index], row[index])
  return rows
}

class TransactionLost extends Error {}

/** A statement refused at once while the connection is being made again. */
class Reconnecting extends Error {}

/** The server stopped answering on an established connection (see the header). */
class ServerSilent extends Error {}

/** A statement unanswered this long makes the worker check that the server still answers. */
const PROBE_AFTER_MS = 2_000

/** Between two connect attempts in the background. */
const RECONNECT_PAUSE_MS = 1000
let reconnecting: Promise<void> | null = null

function reconnectInBackground(): void {
  reconnecting ??= (async () => {
    while (connection === null) {
      try {
        await connected()
      } catch {
        await Bun.sleep(RECONNECT_PAUSE_MS)
      }
    }
  })().finally(() => {
    reconnecting = null
  })
}

const DONE: BridgeAnswer = { kind: 'done', columns: [], rows: [], changes: 0 }
const ROLLBACK = /^\s*ROLLBACK\s*;?\s*$/i

async function connected(): Promise<Connection> {
  if (!connection) {
    connection = await pool!.reserve()
    if (sessionSettings !== '') await connection.unsafe(sessionSettings).simple()
  }
  return connection
}

/** What Bun's client refuses in a statement before it reaches the server: the connection is as good as before. */
const STATEMENT_REFUSED = new Set(
  [
    'SYNTAX_ERROR',
    'TOO_MANY_PARAMETERS',
    'INVALID_BINARY_DATA',
    'INVALID_CHARACTER',
    'INVALID_BYTE_SEQUENCE',
    'UNSUPPORTED_INTEGER_SIZE',
    'UNSUPPORTED_ARRAY_FORMAT',
    'UNSUPPORTED_BYTEA_FORMAT',
    'UNKNOWN_FORMAT_CODE',
    'NOT_TAGGED_CALL',
    'EXPECTED_STATEMENT',
    'COPY_NOT_SUPPORTED',
  ].map((name) => `ERR_POSTGRES_${name}`),
)

/**
 * Not an error of the statement but of the connection: the server's admin or crash codes, or anything else the client
 * reports (closed, refused, timed out, TLS, authentication, a garbled message).
 */
const connectionLost = (error: unknown) => {
  const { code, errno } = error as { code?: string; errno?: string }
  if (code === 'ERR_POSTGRES_SERVER_ERROR') return /^(08|57P)/.test(errno ?? '')
  return !STATEMENT_REFUSED.has(code ?? '')
}

async function answer(request: Exclude<BridgeRequest, { kind: 'close' }>): Promise<BridgeAnswer> {
  if (lostInTransaction) {
    if (request.kind === 'script' && ROLLBACK.test(request.text)) {
      lostInTransaction = false
      return DONE
    }
    throw new TransactionLost('the connection to PostgreSQL was lost during this transaction, which was rolled back')
  }
  if (reconnecting) throw new Reconnecting('PostgreSQL could not be reached; connecting again in the background')
  try {
    return await runWatched(await connected(), request)
  } catch (error) {
    if (connectionLost(error)) {
      // No connection to lose: connecting itself failed.
      if (connection === null) reconnectInBackground()
      connection = null
      lostInTransaction = request.inTransaction
    }
    throw error
  }
}

/** `run`, checking every PROBE_AFTER_MS that the server still answers; when it does not, the connection is dropped. */
async function runWatched(
  session: Connection,
  request: Exclude<BridgeRequest, { kind: 'close' }>,
): Promise<BridgeAnswer> {
  const statement = run(session, request).then(
    (answer) => ({ answer }),
    (error: unknown) => ({ error }),
  )
  for (;;) {
    const settled = await Promise.race([statement, Bun.sleep(PROBE_AFTER_MS).then(() => null)])
    if (settled && 'error' in settled) throw settled.error
    if (settled) return settled.answer
    if (await serverAnswers()) continue
    dropStuckConnection()
    throw new ServerSilent(
      `PostgreSQL stopped answering: a statement got no answer for ${PROBE_AFTER_MS / 1000} s, nor a check on a new connection`,
    )
  }
}

/**
 * Whether the server answers a new connection within the connect timeout: `SELECT 1`, or any error of its own (too
 * many connections still is an answer: the statement is only slow).
 */
async function serverAnswers(): Promise<boolean> {
  const { url, connectTimeoutSeconds } = poolSetup!
  const check = new SQL(url, { max: 1, idleTimeout: 0, connectionTimeout: connectTimeoutSeconds })
  try {
    const gaveUp = Bun.sleep(connectTimeoutSeconds * 1000).then(() => false)
    return await Promise.race([check`SELECT 1`.then(() => true), gaveUp])
  } catch (error) {
    return (error as { code?: string }).code === 'ERR_POSTGRES_SERVER_ERROR'
  } finally {
    void check.close({ timeout: 0 }).catch(() => {})
  }
}

/** Gives up the connection that stopped answering: its pool (of one) is closed and made again. */
function dropStuckConnection(): void {
  const stuck = pool!
  connection = null
  pool = newPool()
  void stuck.close({ timeout: 0 }).catch(() => {})
}

const newPool = () =>
  new SQL(poolSetup!.url, {
    max: 1,
    bigint: true,
    idleTimeout: 0,
    connectionTimeout: poolSetup!.connectTimeoutSeconds,
  })

async function run(session: Connection, request: Exclude<BridgeRequest, { kind: 'close' }>): Promise<BridgeAnswer> {
  if (request.kind === 'script') {
    await session.unsafe(request.text).simple()
    return DONE
  }
  const result = await session.unsafe(request.text, request.params).values()
  const columns = (result as unknown as { columns?: { name: string; type: number }[] }).columns ?? []
  return {
    kind: 'done',
    columns: columns.map((column) => column.name),
    rows: asSqliteValues(
      result as unknown[][],
      columns.map((column) => column.type),
    ),
    changes: (result as unknown as { affectedRows?: number }).affectedRows ?? result.count ?? 0,
  }
}

function reply(id: number, message: BridgeAnswer): void {
  answers!.postMessage({ ...message, id } satisfies BridgeReply)
  Atomics.store(signal!, 0, id)
  Atomics.notify(signal!, 0)
}

function failure(error: unknown): BridgeAnswer {
  const { message, errno, table, detail } = error as {
    message: string
    errno?: string
    table?: string
    detail?: string
  }
  return {
    kind: 'error',
    message,
    sqlState: errno ?? null,
    table: table ?? null,
    detail: detail ?? null,
    connectionLost: connectionLost(error) || error instanceof TransactionLost,
  }
}

async function open(setup: BridgeSetup): Promise<void> {
  answers = setup.answers
  signal = new Int32Array(setup.signal)
  try {
    poolSetup = { url: setup.url, connectTimeoutSeconds: setup.connectTimeoutSeconds }
    pool = newPool()
    sessionSettings = setup.sessionSettings
    await connected()
    reply(setup.id, DONE)
  } catch (error) {
    reply(setup.id, failure(error))
  }
}

self.onmessage = async (event: MessageEvent<BridgeSetup | BridgeRequest>) => {
  const message = event.data
  if (message.kind === 'open') return open(message)
  if (message.kind === 'close') {
    connection?.release()
    await pool?.close({ timeout: 1 })
    return reply(message.id, DONE)
  }
  try {
    reply(message.id, await answer(message))
  } catch (error) {
    reply(message.id, failure(error))
  }
}
