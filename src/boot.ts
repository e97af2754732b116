import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import packageJson from '../package.json'
import { applyCallReport, orderedCallReports } from './calls/outcomes'
import { contactAttempts } from './campaigns/attempts'
import { routeInboundCall } from './calls/inbound'
import type { Config } from './config'
import type { AppContext, ChangeEvent } from './context'
import { openConfiguredDatabase } from './db/open'
import { resolveHostAddresses } from './egress/outbound'
import { systemClock, type Clock } from './lib/clock'
import { loadMasterKey } from './lib/encryption'
import { createOrgEventBus } from './lib/org-event-bus'
import { createLogger, type Logger } from './log'
import { verifyMasterKey } from './credentials/master-key-check'
import { createModelHealth } from './models/health'
import { localObjectStore, type ObjectStore } from './storage/object-store'
import { s3ObjectStore } from './storage/s3-object-store'
import { createVectorCache } from './knowledge/vector-index'
import { createTelephony } from './telephony/provider'
import { registerCarriers } from './telephony/carriers/registry'
import { storedConfigurations } from './telephony/config/configurations'
import { PROVIDER_API_BASE_URLS } from './telephony/carriers/http'

/**
 * The composition root: the only module that wires implementations together. `buildContext` assembles the context
 * and its listeners; `startBackgroundServices` (src/background.ts) starts what runs beside the HTTP API.
 */
export { startBackgroundServices, type BackgroundServices } from './background'

export const VERSION: string = packageJson.version

/** Knowledge-base vectors kept in memory: 512 MiB holds ~170,000 chunks of 768 dimensions. */
const KNOWLEDGE_CACHE_BYTES = 512 * 1024 * 1024

/** The store `--object-store` names: the data dir's `objects/`, or an S3-compatible bucket. */
export function objectStoreFor(config: Config): ObjectStore {
  const { objectStore } = config
  return objectStore.kind === 's3' ? s3ObjectStore(objectStore) : localObjectStore(join(config.dataDir, 'objects'))
}

/** Opens the data dir (database, migrations) and assembles the context. The caller closes `ctx.sqlite`. */
export function buildContext(config: Config, overrides: { log?: Logger; clock?: Clock } = {}): AppContext {
  const log = overrides.log ?? createLogger(config.logLevel)
  const { db, sqlite, applied } = openConfiguredDatabase(config)
  if (applied.length > 0) log.info({ migrations: applied }, 'database migrated')
  const masterKey = loadMasterKey({ env: config.masterKey ?? undefined, dataDir: config.dataDir })
  try {
    verifyMasterKey({ sqlite }, masterKey)
  } catch (error) {
    sqlite.close()
    throw error
  }
  const clock = overrides.clock ?? systemClock
  const ctx: AppContext = {
    config,
    db,
    sqlite,
    log,
    clock,
    version: VERSION,
    instanceId: randomUUID(),
    masterKey,
    providerApis: { ...PROVIDER_API_BASE_URLS, ...config.providerApiOverrides },
    ariConnected: () => false,
    telephony: createTelephony(),
    ari: null,
    objects: objectStoreFor(config),
    knowledge: { vectors: createVectorCache(KNOWLEDGE_CACHE_BYTES), wake: () => {} },
    resolveHost: resolveHostAddresses,
    modelHealth: createModelHealth(() => clock.now()),
    events: createOrgEventBus<ChangeEvent>((error) => log.error({ err: error }, 'change event listener failed')),
  }
  registerCarriers(ctx)
  // Inbound calls of every provider (ARI's Stasis, carriers' answer webhooks) are routed here.
  ctx.telephony.readConfigurationsFrom(storedConfigurations(ctx))
  ctx.telephony.routeInboundWith((offer) => routeInboundCall(ctx, offer))
  // Every provider's call reports land on their runs (and campaign contacts) here, whoever placed the call.
  ctx.telephony.onReport(
    orderedCallReports(
      (report) => applyCallReport(ctx, report, contactAttempts),
      (error, report) => log.error({ err: error, callId: report.callId, kind: report.kind }, 'call report not applied'),
    ),
  )
  return ctx
}
