import type { AppContext } from '../../context'

/** The ARI leases' statements written as SQL: which instance holds a configuration's events connection. */

/**
 * Takes the configuration's lease for the instance, or renews it, until `expiresAt` (ISO): one conditional upsert that
 * writes only when the lease is free, the instance's own, or expired before `now`. True when the instance holds it.
 */
export function takeAriLease(
  ctx: AppContext,
  configurationId: number,
  instanceId: string,
  now: string,
  expiresAt: string,
): boolean {
  return (
    ctx.sqlite
      .query<{ instance_id: string }, [number, string, string, string]>(
        `INSERT INTO ari_leases (telephony_configuration_id, instance_id, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (telephony_configuration_id) DO UPDATE SET instance_id = excluded.instance_id, expires_at = excluded.expires_at
         WHERE ari_leases.instance_id = excluded.instance_id OR ari_leases.expires_at < ?
         RETURNING instance_id`,
      )
      .get(configurationId, instanceId, expiresAt, now) !== null
  )
}

export function releaseAriLease(ctx: AppContext, configurationId: number, instanceId: string): void {
  ctx.sqlite
    .query('DELETE FROM ari_leases WHERE telephony_configuration_id = ? AND instance_id = ?')
    .run(configurationId, instanceId)
}

export function releaseAriLeasesOf(ctx: AppContext, instanceId: string): void {
  ctx.sqlite.query('DELETE FROM ari_leases WHERE instance_id = ?').run(instanceId)
}

/** The instance named on the configuration's lease (expired or not), or null when nobody holds it. */
export function ariLeaseHolder(ctx: AppContext, configurationId: number): string | null {
  return (
    ctx.sqlite
      .query<{ instance_id: string }, [number]>(
        'SELECT instance_id FROM ari_leases WHERE telephony_configuration_id = ?',
      )
      .get(configurationId)?.instance_id ?? null
  )
}
