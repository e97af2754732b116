import type { Config, ProviderApiName } from './config'
import type { Db, SqlDatabase } from './db/open'
import type { Clock } from './lib/clock'
import type { Logger } from './log'
import type { ModelHealth } from './models/health'
import type { ObjectStore } from './storage/object-store'
import type { Telephony } from './telephony/provider'

/** The carrier REST APIs (calls, provisioning on save), by provider. */
export type ProviderApiBaseUrls = Record<ProviderApiName, string>

/** The ARI connections, as the rest of the app sees them. */
export interface AriConnections {
  /** Re-reads the active ARI configurations and starts, restarts or stops connections to match. */
  sync(): Promise<void>
  isConnected(configurationId: number): boolean
  counts(): { connected: number; total: number }
  /** Closes every connection and stops the timers. */
  stop(): Promise<void>
}

/**
 * Everything a request or a background loop needs, passed down explicitly. Types only: src/boot.ts builds it (or a
 * test does), so nothing here pulls implementations in and no module can import its way back to the wiring.
 */
export type AppContext = {
  config: Config
  db: Db
  sqlite: SqlDatabase
  log: Logger
  clock: Clock
  version: string
  /** Encrypts provider secrets at rest: RINGBASE_MASTER_KEY, else `<dataDir>/master.key` (created 0600). */
  masterKey: Buffer
  /** Carrier REST APIs (calls, and what a configuration save creates); tests point them at fakes. */
  providerApis: ProviderApiBaseUrls
  /** Whether an ARI configuration's events socket is up; the ARI connection manager replaces this default. */
  ariConnected: (configurationId: number) => boolean
  /** Telephony providers by name and the fan-out of their call reports. */
  telephony: Telephony
  /** The ARI connections once the ARI manager started (serve, tests that place calls); null otherwise. */
  ari: AriConnections | null
  /** Uploaded CSVs, recordings and transcripts, under `<dataDir>/objects`. */
  objects: ObjectStore
  /** The addresses of a host name, for outbound requests (which check them all); tests answer for made-up names. */
  resolveHost: (hostname: string) => Promise<string[]>
  /** Model servers seen failing lately (models/health.ts): run starts refuse a call they would fail. */
  modelHealth: ModelHealth
}
