import type { ModelFailureKind } from './types'

/**
 * What this process last saw of each model server (by provider connection uuid): a connection check or a request of a
 * call that could not reach it marks it down; a check that got an answer marks it up again. Run starts read it to refuse
 * a call its agent's model server would fail at once, without asking the server before each dial (no added latency,
 * no probe traffic): a failure is remembered for DOWN_REMEMBERED_MS, after which the next call tries again. Memory
 * only: a restart forgets it.
 */
export type ModelHealth = {
  noteDown(connectionUuid: string, kind: ModelFailureKind): void
  noteUp(connectionUuid: string): void
  /** The failure seen within DOWN_REMEMBERED_MS before `now`, or null. */
  downAt(connectionUuid: string, now: number): { kind: ModelFailureKind; seenAt: number } | null
}

export const DOWN_REMEMBERED_MS = 60_000

/** The failures that mean the server cannot serve a call at all; a refused request (4xx) says the server is up. */
export const SERVER_DOWN_KINDS: ReadonlySet<ModelFailureKind> = new Set(['unreachable', 'timeout', 'server_error'])

export function createModelHealth(now: () => number): ModelHealth {
  const down = new Map<string, { kind: ModelFailureKind; seenAt: number }>()
  return {
    noteDown(connectionUuid, kind) {
      if (SERVER_DOWN_KINDS.has(kind)) down.set(connectionUuid, { kind, seenAt: now() })
    },
    noteUp(connectionUuid) {
      down.delete(connectionUuid)
    },
    downAt(connectionUuid, at) {
      const seen = down.get(connectionUuid)
      if (!seen) return null
      if (at - seen.seenAt < DOWN_REMEMBERED_MS) return seen
      down.delete(connectionUuid)
      return null
    },
  }
}
