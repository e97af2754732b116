import { hostname } from 'node:os'
import type { AppContext } from '../context'
import { isoNow } from '../lib/clock'
import { failureStreak } from '../lib/failure-streak'
import { countInstancesSeenSince, deleteInstance, deleteInstancesSilentSince, upsertInstance } from './queries'

/**
 * The processes sharing one database (several `ringbase serve` on one SQLite file, or on one PostgreSQL). Each has a
 * random id (`ctx.instanceId`), registers itself at start, heartbeats, and removes its row when it stops. One silent
 * for LIVENESS_HEARTBEATS heartbeats is dead: a live instance recovers the runs it handled (calls/recovery.ts,
 * runs/session-recovery.ts) and takes its ARI leases once they expire (telephony/ari/manager.ts).
 */

/** Missed heartbeats after which an instance is dead; an ARI lease lasts as long. */
export const LIVENESS_HEARTBEATS = 3
/** A dead instance's row is kept this long (who ran, and when it was last heard of), then deleted. */
const DEAD_ROW_RETENTION_MS = 24 * 3600_000

/** How long an instance stays live after its last heartbeat (15 s by default). */
export const livenessWindowMs = (ctx: AppContext) => LIVENESS_HEARTBEATS * ctx.config.instanceHeartbeatMs

/** The cutoff (ISO): an instance that heartbeat at or after it is live. */
export const liveSince = (ctx: AppContext) => new Date(ctx.clock.now() - livenessWindowMs(ctx)).toISOString()

export function liveInstanceCount(ctx: AppContext): number {
  return countInstancesSeenSince(ctx, liveSince(ctx))
}

export type InstanceHeartbeat = {
  /** Stops the heartbeat (waiting for a beat under way) and removes the instance's row. */
  stop(): Promise<void>
}

function beat(ctx: AppContext, startedAt: string): void {
  upsertInstance(ctx, {
    id: ctx.instanceId,
    startedAt,
    heartbeatAt: isoNow(ctx.clock),
    version: ctx.version,
    hostname: hostname(),
  })
  deleteInstancesSilentSince(ctx, new Date(ctx.clock.now() - DEAD_ROW_RETENTION_MS).toISOString())
}

/**
 * Registers this instance and heartbeats every `instanceHeartbeatMs`. After a heartbeat `afterBeat` runs (a periodic
 * task that needs this instance live while it runs, such as recovering dead instances' calls), unless the previous
 * one is still running: the heartbeat itself never waits for it.
 */
export function startInstanceHeartbeat(ctx: AppContext, afterBeat: () => Promise<void>): InstanceHeartbeat {
  const startedAt = isoNow(ctx.clock)
  beat(ctx, startedAt)
  ctx.log.info({ instanceId: ctx.instanceId }, 'instance registered')
  let running: Promise<void> | null = null
  const beats = failureStreak(ctx.log, {
    failed: 'instance heartbeat failed',
    recovered: 'instance heartbeat works again',
  })
  const timer = setInterval(() => {
    try {
      beat(ctx, startedAt)
    } catch (error) {
      beats.failed(error)
      return
    }
    beats.succeeded()
    running ??= afterBeat()
      .catch((error) => ctx.log.error({ err: error }, 'periodic work after the heartbeat failed'))
      .finally(() => {
        running = null
      })
  }, ctx.config.instanceHeartbeatMs)
  return {
    async stop() {
      clearInterval(timer)
      await running
      deleteInstance(ctx, ctx.instanceId)
    },
  }
}
