import type { Database } from 'bun:sqlite'
import type { Config } from './config'
import type { Db } from './db/open'
import type { Clock } from './lib/clock'
import type { Logger } from './log'
import { openDatabase } from './db/open'
import { systemClock } from './lib/clock'
import { createLogger } from './log'
import { PROVIDER_API_BASE_URLS, type ProviderApiBaseUrls } from './telephony/provisioning'
import { loadMasterKey } from './telephony/secrets'
import { createTelephony, type Telephony } from './telephony/provider'
import { applyCallReport } from './calls/outcomes'
import type { AriManager } from './telephony/ari/manager'
import { localObjectStore, type ObjectStore } from './storage/object-store'
import { join } from 'node:path'
import packageJson from '../package.json'

/** Everything a request or a background loop needs, built once in main.ts (or a test) and passed down. */
export type AppContext = {
  config: Config
  db: Db
  sqlite: Database
  log: Logger
  clock: Clock
  version: string
  /** Encrypts provider secrets at rest: RINGBASE_MASTER_KEY, else `<dataDir>/master.key` (created 0600). */
  masterKey: Buffer
  /** Provider REST APIs called when a telephony configuration is saved; tests point them at fakes. */
  providerApis: ProviderApiBaseUrls
  /** Whether an ARI configuration's events socket is up; the ARI connection manager replaces this default. */
  ariConnected: (configurationId: number) => boolean
  /** Telephony providers by name and the fan-out of their call reports. */
  telephony: Telephony
  /** The ARI connection manager once `startAriManager` ran (serve, tests that place calls); null otherwise. */
  ari: AriManager | null
  /** Uploaded CSVs, recordings and transcripts, under `<dataDir>/objects`. */
  objects: ObjectStore
}
export const VERSION: string = packageJson.version

/** Opens the data dir (database, migrations) and assembles the context. The caller closes `ctx.sqlite`. */
export function buildContext(config: Config, overrides: { log?: Logger; clock?: Clock } = {}): AppContext {
  const log = overrides.log ?? createLogger(config.logLevel)
  const { db, sqlite, applied } = openDatabase(config.dataDir)
  if (applied.length > 0) log.info({ migrations: applied }, 'database migrated')
  const masterKey = loadMasterKey({ env: config.masterKey ?? undefined, dataDir: config.dataDir })
  const ctx: AppContext = {
    config, db, sqlite, log, clock: overrides.clock ?? systemClock, version: VERSION,
    masterKey, providerApis: { ...PROVIDER_API_BASE_URLS }, ariConnected: () => false, telephony: createTelephony(),
    ari: null,
    objects: localObjectStore(join(config.dataDir, 'objects')),
  }
  // Every provider's call reports land on their runs (and campaign contacts) here, whoever placed the call.
  ctx.telephony.onReport((report) => {
    try {
      applyCallReport(ctx, report)
    } catch (error) {
      log.error({ err: error, callId: report.callId, kind: report.kind }, 'call report not applied')
    }
  })
  return ctx
}
