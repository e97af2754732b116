import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads'
import type { BridgeAnswer, BridgeReply, BridgeRequest, BridgeSetup } from './protocol'
import { DomainError } from '../../lib/errors'
import { toPostgres } from './translate'

/**
 * PostgreSQL behind the part of bun:sqlite's `Database` that Ringbase uses (`query`/`prepare` → `all`, `get`, `run`,
 * `values`; `run`, `exec`, `inTransaction`, `close`), synchronous like it: each statement is sent to a worker thread
 * (./worker.ts) holding one connection, and this thread waits for the answer. So the services, drizzle's sqlite-core
 * queries and the transactions keep one code path on both backends (docs/scale-out.md says why and what it costs).
 *
 * A write transaction (`BEGIN IMMEDIATE`) first takes one advisory lock shared by every instance: write
 * transactions are serialized across the cluster as SQLite serializes them on one machine, so a read-then-write inside
 * one (claim the next contact, count open calls) stays exactly-once with several instances.
 */

const WORKER_URL = new URL(
  import.meta.url.includes('/$bunfs/') ? './db/postgres/worker.ts' : './worker.ts',
  import.meta.url,
)

/** The advisory lock key of write transactions ("ringbase" in ASCII, truncated). */
export const WRITE_LOCK_KEY = 0x72696e67

/** No statement runs longer than a minute, nor waits for a lock longer than 30 s. */
const SESSION_SETTINGS = 'SET statement_timeout = 60000; SET lock_timeout = 30000'

/** Longer than any statement may run (SESSION_SETTINGS): past it the worker is taken for stuck. */
const ANSWER_TIMEOUT_MS = 120_000

/** What SQLite would have raised; the services match SQLite's wording of unique violations (src/db/tables.ts). */
export class PostgresError extends Error {
  constructor(
    message: string,
    readonly sqlState: string | null,
  ) {
    super(message)
    this.name = 'PostgresError'
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

type Binding = string | number | bigint | boolean | null | Uint8Array | undefined
type Row = Record<string, unknown>
type RunResult = { changes: number; lastInsertRowid: number }

function errorOf(answer: Extract<BridgeAnswer, { kind: 'error' }>): Error {
  if (answer.connectionLost)
    return new DomainError(
      'unavailable',
      'The database could not be reached',
      new PostgresError(answer.message, answer.sqlState),
    )
  if (answer.sqlState === '23505' && answer.table && answer.detail) {
    const columns = /^Key \(([^)]*)\)=/.exec(answer.detail)?.[1].split(', ') ?? []
    return new PostgresError(
      `UNIQUE constraint failed: ${columns.map((column) => `${answer.table}.${column}`).join(', ')}`,
      answer.sqlState,
    )
  }
  return new PostgresError(answer.message, answer.sqlState)
}

function bound(params: Binding[], listParameters: number[]): unknown[] {
  const values: unknown[] = params.map((value) => {
    if (value === undefined) return null
    if (typeof value === 'boolean') return value ? 1 : 0
    // PostgreSQL's text cannot hold NUL (SQLite's can): a NUL from a request becomes U+FFFD, so it matches nothing
    // stored and is stored visibly instead of failing the statement.
    if (typeof value === 'string' && value.includes('\u0000')) return value.replaceAll('\u0000', '\uFFFD')
    return value
  })
  for (const index of listParameters) values[index] = JSON.parse(String(values[index]))
  return values
}

const TRANSACTION_START = /^\s*BEGIN\b/i
const TRANSACTION_END = /^\s*(COMMIT|END|ROLLBACK)\s*;?\s*$/i

export class PostgresStatementHandle {
  constructor(
    private readonly database: PostgresDatabase,
    private readonly text: string,
  ) {}

  values(...params: Binding[]): unknown[][] {
    return this.database.execute(this.text, params).rows
  }

  all(...params: Binding[]): Row[] {
    const { columns, rows } = this.database.execute(this.text, params)
    return rows.map((values) => {
      const row: Row = {}
      for (let index = 0; index < columns.length; index++) row[columns[index]] = values[index]
      return row
    })
  }

  get(...params: Binding[]): Row | null {
    return this.all(...params)[0] ?? null
  }

  run(...params: Binding[]): RunResult {
    return { changes: this.database.execute(this.text, params).changes, lastInsertRowid: 0 }
  }

  finalize(): void {}
}

export class PostgresDatabase {
  private readonly worker: Worker
  private readonly answers: MessagePort
  private readonly signal = new Int32Array(new SharedArrayBuffer(4))
  private lastId = 0
  private readonly statements = new Map<string, PostgresStatementHandle>()
  private transactionDepth = 0
  private closed = false

  constructor(url: string, options: { connectTimeoutSeconds?: number } = {}) {
    const channel = new MessageChannel()
    this.answers = channel.port2
    this.worker = new Worker(WORKER_URL)
    this.worker.unref()
    this.call(
      {
        kind: 'open',
        url,
        connectTimeoutSeconds: options.connectTimeoutSeconds ?? 5,
        sessionSettings: SESSION_SETTINGS,
        answers: channel.port1,
        signal: this.signal.buffer as SharedArrayBuffer,
      },
      [channel.port1],
    )
  }

  get inTransaction(): boolean {
    return this.transactionDepth > 0
  }

  query(text: string): PostgresStatementHandle {
    let statement = this.statements.get(text)
    if (!statement) {
      statement = new PostgresStatementHandle(this, text)
      if (this.statements.size > 5000) this.statements.clear()
      this.statements.set(text, statement)
    }
    return statement
  }

  prepare(text: string): PostgresStatementHandle {
    return new PostgresStatementHandle(this, text)
  }

  /** One statement with parameters, or (without) a script of several, as bun:sqlite's `run` takes either. */
  run(text: string, ...params: Binding[]): RunResult {
    if (params.length > 0) return this.prepare(text).run(...params)
    this.script(text)
    return { changes: 0, lastInsertRowid: 0 }
  }

  exec(text: string): void {
    this.script(text)
  }

  /** bun:sqlite's `transaction(fn)`: a function running `fn` in a write transaction (each variant is the same here). */
  transaction<Args extends unknown[], T>(work: (...args: Args) => T) {
    const run = (...args: Args): T => {
      this.begin()
      try {
        const result = work(...args)
        this.script('COMMIT')
        return result
      } catch (error) {
        this.script('ROLLBACK')
        throw error
      }
    }
    return Object.assign(run, { deferred: run, immediate: run, exclusive: run })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    try {
      this.call({ kind: 'close' })
    } finally {
      this.worker.terminate()
    }
  }

  /** @internal the statements' way in. */
  execute(text: string, params: Binding[]): { columns: string[]; rows: unknown[][]; changes: number } {
    if (TRANSACTION_START.test(text)) return this.begin()
    const statement = toPostgres(text)
    const answer = this.call({
      kind: 'statement',
      text: statement.text,
      params: bound(params, statement.listParameters),
      inTransaction: this.inTransaction,
    })
    if (TRANSACTION_END.test(text)) this.transactionDepth = 0
    return answer
  }

  private begin() {
    this.transactionDepth = 1
    try {
      this.call({ kind: 'script', text: `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`, inTransaction: true })
    } catch (error) {
      // A lock wait that timed out leaves PostgreSQL's transaction open and failed: end it before reporting.
      this.script('ROLLBACK')
      throw error
    }
    return { columns: [], rows: [], changes: 0 }
  }

  private script(text: string): void {
    if (TRANSACTION_START.test(text)) {
      this.begin()
      return
    }
    try {
      this.call({ kind: 'script', text, inTransaction: this.inTransaction })
    } finally {
      if (TRANSACTION_END.test(text)) this.transactionDepth = 0
    }
  }

  /**
   * Sends one request and waits for its answer. Each request has an id; the worker sets the shared signal to the id of
   * each answer it posts. A posted message may show on the port a moment after the signal: it is waited for, and an
   * answer to an earlier request (one given up on) is never taken for this one's.
   */
  private call(request: DistributiveOmit<BridgeRequest | BridgeSetup, 'id'>, transfer: MessagePort[] = []) {
    if (this.closed && request.kind !== 'close') throw new PostgresError('The database is closed', null)
    const id = ++this.lastId
    this.worker.postMessage({ ...request, id }, transfer)
    const deadline = performance.now() + ANSWER_TIMEOUT_MS
    let answer: BridgeReply | undefined
    while (answer?.id !== id) {
      const remaining = deadline - performance.now()
      const signalled = Atomics.load(this.signal, 0)
      if (remaining <= 0) return this.giveUp()
      if (signalled < id) Atomics.wait(this.signal, 0, signalled, remaining)
      else answer = (receiveMessageOnPort(this.answers)?.message as BridgeReply | undefined) ?? this.pause(answer)
    }
    if (answer.kind === 'error') {
      // A failed statement aborts PostgreSQL's transaction; the caller's rollback then ends it.
      throw errorOf(answer)
    }
    return answer
  }

  /** Waits a millisecond for a message the worker has posted but the port does not show yet. */
  private pause(previous: BridgeReply | undefined): BridgeReply | undefined {
    Atomics.wait(this.signal, 0, Atomics.load(this.signal, 0), 1)
    return previous
  }

  private giveUp(): never {
    // A late answer would be waited for by nobody: this connection is done.
    this.closed = true
    this.worker.terminate()
    throw new PostgresError('PostgreSQL did not answer in time', null)
  }
}
