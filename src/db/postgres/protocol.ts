import type { MessagePort } from 'node:worker_threads'

/** Messages between the synchronous PostgreSQL client (./client.ts) and its worker thread (./worker.ts). */

export type BridgeSetup = {
  kind: 'open'
  id: number
  url: string
  connectTimeoutSeconds: number
  /** Statements run on every new connection (the session's settings). */
  sessionSettings: string
  /** Where the worker posts each answer. */
  answers: MessagePort
  /** One Int32: the worker sets it to the id of the answer it posted, then notifies. */
  signal: SharedArrayBuffer
}

/** `inTransaction`: whether the client was inside a transaction when it sent the request. */
export type BridgeRequest = { id: number } & (
  | { kind: 'statement'; text: string; params: unknown[]; inTransaction: boolean }
  /** Several statements without parameters, in one round trip (the simple query protocol). */
  | { kind: 'script'; text: string; inTransaction: boolean }
  | { kind: 'close' }
)

/** An answer and the id of the request it answers. */
export type BridgeReply = BridgeAnswer & { id: number }

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
