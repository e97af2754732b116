import type { AppContext } from '../../context'
import { transaction } from '../../db/transaction'
import { livenessWindowMs } from '../../instances/registry'
import { ariLeaseHolder, releaseAriLease, releaseAriLeasesOf, takeAriLease } from './queries'

/**
 * Each ARI configuration's events connection is held by one instance at a time, through a lease in the database
 * (`ari_leases`): taken or renewed on every round of the connection manager (each heartbeat), lasting as long as an
 * instance stays live without a heartbeat (15 s by default). An instance opens the events websocket only while it
 * holds the lease; when its owner dies the lease expires and another instance takes it at its next round. Asterisk sends
 * a Stasis app's events to the one socket, so the instance holding the lease is also the one that places and answers
 * the configuration's calls (docs/scale-out.md, "Several instances").
 */
export type AriLeases = {
  /** Takes or renews the listed configurations' leases, releases the others held; returns those held now. */
  renew(configurationIds: number[]): Set<number>
  /** Another instance's name is on the lease (a dead owner's stays until a live instance takes it over). */
  heldElsewhere(configurationId: number): boolean
  /** Releases every lease of this instance (a graceful stop: another takes over at once). */
  releaseAll(): void
}

export function createAriLeases(ctx: AppContext): AriLeases {
  /** What this instance held after the last round, and until when (ctx.clock ms). */
  const held = new Map<number, number>()

  function renewEach(configurationIds: number[], now: number): void {
    const expiresAt = now + livenessWindowMs(ctx)
    const [nowIso, expiresIso] = [new Date(now).toISOString(), new Date(expiresAt).toISOString()]
    const released = [...held.keys()].filter((id) => !configurationIds.includes(id))
    const taken = transaction(ctx, () => {
      for (const id of released) releaseAriLease(ctx, id, ctx.instanceId)
      return configurationIds.filter((id) => takeAriLease(ctx, id, ctx.instanceId, nowIso, expiresIso))
    })
    held.clear()
    for (const id of taken) held.set(id, expiresAt)
  }

  return {
    renew(configurationIds) {
      const now = ctx.clock.now()
      try {
        renewEach(configurationIds, now)
      } catch (error) {
        // The database could not be asked: a lease is kept only until it would have expired.
        ctx.log.error({ err: error }, 'ARI leases not renewed')
        for (const [id, until] of held) if (until <= now) held.delete(id)
      }
      return new Set(held.keys())
    },
    heldElsewhere(configurationId) {
      const holder = ariLeaseHolder(ctx, configurationId)
      return holder !== null && holder !== ctx.instanceId
    },
    releaseAll() {
      releaseAriLeasesOf(ctx, ctx.instanceId)
      held.clear()
    },
  }
}
