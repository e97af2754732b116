import type { AppContext } from '../context'

/** The instances' statements written as SQL: registration, heartbeat, liveness. */

export type InstanceRow = { id: string; startedAt: string; heartbeatAt: string; version: string; hostname: string }

/** Registers the instance, or (a row another instance removed as dead while this one stalled) registers it again. */
export function upsertInstance(ctx: AppContext, row: InstanceRow): void {
  ctx.sqlite
    .query(
      `INSERT INTO instances (id, started_at, heartbeat_at, version, hostname) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
    )
    .run(row.id, row.startedAt, row.heartbeatAt, row.version, row.hostname)
}

export function deleteInstance(ctx: AppContext, id: string): void {
  ctx.sqlite.query('DELETE FROM instances WHERE id = ?').run(id)
}

/** Rows of instances silent since before `cutoff` (ISO). */
export function deleteInstancesSilentSince(ctx: AppContext, cutoff: string): number {
  return ctx.sqlite.query('DELETE FROM instances WHERE heartbeat_at < ?').run(cutoff).changes
}

/** Instances that heartbeat at or after `since` (ISO). */
export function countInstancesSeenSince(ctx: AppContext, since: string): number {
  return ctx.sqlite
    .query<{ n: number }, [string]>('SELECT count(*) AS n FROM instances WHERE heartbeat_at >= ?')
    .get(since)!.n
}

/**
 * A condition on a run's `instance_id` (one `?`: the liveness cutoff) that holds when no live instance handles it: the
 * instance stopped heartbeating, or the run is from before instances were recorded.
 */
export const HANDLED_BY_NO_LIVE_INSTANCE =
  '(instance_id IS NULL OR instance_id NOT IN (SELECT id FROM instances WHERE heartbeat_at >= ?))'
