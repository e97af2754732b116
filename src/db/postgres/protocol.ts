import type { MessagePort } from 'node:worker_threads'

/** Messages between the synchronous PostgreSQL client (./client.ts) and its worker thread (./worker.ts). */

export type BridgeSetup = {
  kind: 'open'
  url: string
  connectTimeoutSeconds: number
  /** Statements run on every new connection (the session's settings). */
  sessionSettings: string
  /** Where the worker posts each answer. */
  answers: MessagePort
  /** One Int32: the worker sets it to 1 and notifies once an answer is posted. */
  signal: SharedArrayBuffer
}

/** `inTransaction`: whether the client was inside a transaction when it sent the request. */
export type BridgeRequest =
  | { kind: 'statement'; text: string; params: unknown[]; inTransaction: boolean }
  /** Several statements without parameters, in one round trip (the simple query protocol). */
  | { kind: 'script'; text: string; inTransaction: boolean }
  | { kind: 'close' }

export type BridgeAnswer =
  | { kind: 'done'; columns: string[]; rows: unknown[][]; changes: number }
  | {
      kind: 'error'
      message: string
      sqlState: string | null
      table: string | null
      detail: string | null
      /** The connection failed, not the statement: the database is down or out of reach. */
      connectionLost: boolean
    }
