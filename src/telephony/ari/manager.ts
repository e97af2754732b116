import { failureStreak } from '../../lib/failure-streak'
import type { AppContext } from '../../context'
import type { AriConfiguration } from '../provider'
import type { Credentials } from '../../db/schema/telephony'
import { createAriAdapter, type AriAdapter, type AriLink } from './adapter'
import { createAriEvents, type AriEvents, type AriEventsOptions, type AriFailure } from './events'
import { createAriLeases } from './leases'
import { createAriRest, type AriRest } from './rest'
import type { AriConnectionSettings } from './types'

/**
 * One events websocket (and REST client) per active ARI configuration of every organization whose lease this instance
 * holds (leases.ts: with several instances, each configuration's connection is held by one), kept in step with the
 * database: started at boot, and again by `syncAriConnections` whenever a configuration is created, updated,
 * reactivated or deleted, and on every heartbeat, which renews the leases, takes over those of a dead instance and
 * closes a connection whose lease was lost. Events go to the ARI adapter.
 *
 * Parking: a configuration whose credentials ARI refuses PARK_AFTER_AUTH_FAILURES times in a row, or that fails
 * to connect for PARK_AFTER_FAILING_MS without a stable connection in between, is marked inactive with the reason,
 * and its connection stops. Only `POST …/reactivate` (then a sync) brings it back.
 */

export type AriManagerOptions = {
  /** Websocket timings (backoff, heartbeat); tests shorten them. */
  events?: AriEventsOptions
  /** How often the watchdog reconciles open calls and expires stuck ones. */
  watchdogIntervalMs?: number
  vanishGraceMs?: number
}

export type AriConnectionCounts = { connected: number; total: number }

export type AriManager = {
  adapter: AriAdapter
  /** Re-reads the active ARI configurations and starts, restarts or stops connections to match. */
  sync(): Promise<void>
  isConnected(configurationId: number): boolean
  counts(): AriConnectionCounts
  /** Another instance holds the configuration's events connection, so it places and answers its calls. */
  heldElsewhere(configurationId: number): boolean
  /**
   * Closes every connection, stops the timers and releases the leases (another instance takes over at once); open
   * calls are left to reconciliation at the next start.
   */
  stop(): Promise<void>
}

const PARK_AFTER_AUTH_FAILURES = 5
export const PARK_AFTER_FAILING_MS = 3_600_000
/** A connection that stayed up this long ends a failure streak. */
const STABLE_CONNECTION_MS = 30_000
const DEFAULT_WATCHDOG_INTERVAL_MS = 30_000

type Connection = AriLink & {
  config: AriConfiguration
  /** What the connection was opened with; a configuration edit that changes it restarts the connection. */
  key: string
  events: AriEvents
  connectedAt: number | null
  /** Start of the current failure streak (ctx.clock ms), null while healthy. */
  failingSince: number | null
  authFailuresInRow: number
}

/** The Stasis app is server-minted; rows older than that use the ARI username as the app, as before. */
function ariSettings(credentials: Credentials): AriConnectionSettings {
  const text = (name: string) => (typeof credentials[name] === 'string' ? (credentials[name] as string) : '')
  return {
    endpoint: text('ari_endpoint'),
    username: text('app_name'),
    password: text('app_password'),
    app: text('stasis_app_name') || text('app_name'),
  }
}

/** Counts a connection's failure; returns why its configuration is to be parked, or null while it keeps retrying. */
function recordFailure(connection: Connection, failure: AriFailure, now: number): string | null {
  if (connection.connectedAt !== null && now - connection.connectedAt >= STABLE_CONNECTION_MS)
    connection.failingSince = null
  connection.connectedAt = null
  connection.failingSince ??= now
  connection.authFailuresInRow = failure.kind === 'auth' ? connection.authFailuresInRow + 1 : 0
  if (connection.authFailuresInRow >= PARK_AFTER_AUTH_FAILURES) return `ari-auth: ${failure.message}`
  if (now - connection.failingSince >= PARK_AFTER_FAILING_MS) {
    return `ari-unreachable: failing for ${Math.round((now - connection.failingSince) / 60_000)} min; last error: ${failure.message}`
  }
  return null
}

const connectionKey = (config: AriConfiguration) => JSON.stringify(ariSettings(config.credentials))

/** Opens a configuration's connection: REST client and events websocket, its events going to the adapter. */
function openConnection(
  ctx: AppContext,
  config: AriConfiguration,
  adapter: AriAdapter,
  options: AriManagerOptions,
  onFailure: (connection: Connection, failure: AriFailure) => void,
): Connection {
  const settings = ariSettings(config.credentials)
  const logContext = { configurationId: config.id, organizationId: config.organizationId }
  const connection: Connection = {
    config,
    key: connectionKey(config),
    rest: createAriRest(settings),
    endpoint: settings.endpoint,
    app: settings.app,
    get connected() {
      return connection.events.state === 'connected'
    },
    events: createAriEvents(
      settings,
      {
        onEvent: (event) => adapter.handleEvent(config.id, event),
        onConnected: () => {
          connection.connectedAt = ctx.clock.now()
          connection.authFailuresInRow = 0
          return adapter.reconcile(config.id, { resubscribe: true })
        },
        onFailure: (failure) => onFailure(connection, failure),
      },
      { logger: ctx.log.child(logContext), ...options.events },
    ),
    connectedAt: null,
    failingSince: null,
    authFailuresInRow: 0,
  }
  connection.events.start()
  return connection
}

/** Marks a failing configuration inactive and stops its connection; false when it could not be marked. */
function parkConnection(ctx: AppContext, connection: Connection, reason: string): boolean {
  try {
    ctx.telephony.configurations.markInactive(connection.config.id, reason)
  } catch (error) {
    // The connection keeps retrying, so the next failure tries to park it again.
    ctx.log.error(
      { configurationId: connection.config.id, err: error },
      'could not mark the ARI configuration inactive',
    )
    return false
  }
  void connection.events.stop()
  return true
}

/** Starts the manager, registers the ARI provider and makes the context report connection state. */
export function startAriManager(ctx: AppContext, options: AriManagerOptions = {}): AriManager {
  const connections = new Map<number, Connection>()
  let syncing: Promise<void> = Promise.resolve()
  let stopped = false
  const leases = createAriLeases(ctx)

  const adapter = createAriAdapter(ctx, {
    link: (configurationId) => connections.get(configurationId),
    restFor: (configurationId) => connections.get(configurationId)?.rest ?? storedRest(ctx, configurationId),
    vanishGraceMs: options.vanishGraceMs,
    configurationIds: () => ctx.telephony.configurations.activeAri().map((config) => config.id),
  })

  function onFailure(connection: Connection, failure: AriFailure) {
    if (connections.get(connection.config.id) !== connection) return
    const parkReason = recordFailure(connection, failure, ctx.clock.now())
    if (parkReason !== null && parkConnection(ctx, connection, parkReason)) connections.delete(connection.config.id)
  }

  async function applyConfigurations() {
    if (stopped) return
    const active = ctx.telephony.configurations.activeAri()
    const held = leases.renew(active.map((config) => config.id))
    const wanted = new Map(active.filter((config) => held.has(config.id)).map((config) => [config.id, config]))
    const closing: Promise<void>[] = []
    for (const [id, connection] of connections) {
      const config = wanted.get(id)
      if (config && connectionKey(config) === connection.key) continue
      connections.delete(id)
      closing.push(connection.events.stop())
    }
    await Promise.all(closing)
    if (stopped) return
    for (const [id, config] of wanted) {
      if (connections.has(id)) continue
      try {
        connections.set(
          id,
          openConnection(ctx, config, adapter, options, (connection, failure) => onFailure(connection, failure)),
        )
      } catch (error) {
        // e.g. an endpoint that is not a URL: a stored configuration that cannot be used is parked at once.
        ctx.telephony.configurations.markInactive(id, `invalid_config: ${(error as Error).message}`)
      }
    }
  }

  const syncs = failureStreak(ctx.log, {
    failed: 'ARI connection sync failed',
    recovered: 'ARI connection sync works again',
  })
  function sync(): Promise<void> {
    syncing = syncing.then(applyConfigurations).then(syncs.succeeded, syncs.failed)
    return syncing
  }

  const sweeps = failureStreak(ctx.log, {
    failed: 'ARI call watchdog failed',
    recovered: 'ARI call watchdog works again',
  })
  const refreshTimer = setInterval(() => void sync(), ctx.config.instanceHeartbeatMs)
  const watchdogTimer = setInterval(
    () => void adapter.sweep().then(sweeps.succeeded, sweeps.failed),
    options.watchdogIntervalMs ?? DEFAULT_WATCHDOG_INTERVAL_MS,
  )

  const manager: AriManager = {
    adapter,
    sync,
    isConnected: (configurationId) => connections.get(configurationId)?.connected ?? false,
    counts: () => ({
      connected: [...connections.values()].filter((connection) => connection.connected).length,
      total: connections.size,
    }),
    heldElsewhere: leases.heldElsewhere,
    async stop() {
      stopped = true
      clearInterval(refreshTimer)
      clearInterval(watchdogTimer)
      await syncing
      const closing = [...connections.values()].map((connection) => connection.events.stop())
      connections.clear()
      await Promise.all(closing)
      leases.releaseAll()
    },
  }
  ctx.telephony.register('ari', adapter)
  ctx.ariConnected = manager.isConnected
  ctx.ari = manager
  void sync()
  return manager
}

/** Call after an ARI configuration was created, updated, reactivated or deleted; a no-op when no manager runs. */
export function syncAriConnections(ctx: AppContext): Promise<void> {
  return ctx.ari?.sync() ?? Promise.resolve()
}

/** Connected and total active ARI configurations, for the health endpoint. */
export function ariConnectionCounts(ctx: AppContext): AriConnectionCounts {
  return ctx.ari?.counts() ?? { connected: 0, total: 0 }
}

/** A REST client from a stored configuration's credentials (e.g. a parked one) for state lookups. */
function storedRest(ctx: AppContext, configurationId: number): AriRest | null {
  const stored = ctx.telephony.configurations.opened(configurationId)
  if (!stored || stored.provider !== 'ari') return null
  return createAriRest(ariSettings(stored.credentials))
}
