import type { Config, ProviderApiName } from './config'
import type { Db, SqlDatabase } from './db/open'
import type { Clock } from './lib/clock'
import type { OrgEventBus } from './lib/org-event-bus'
import type { Logger } from './log'
import type { ModelHealth } from './models/health'
import type { VectorCache } from './knowledge/vector-index'
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
  /** Another instance holds the configuration's events connection, so it places and answers its calls. */
  heldElsewhere(configurationId: number): boolean
  /** Closes every connection and stops the timers. */
  stop(): Promise<void>
}

/**
 * A change of a run (created, ringing, talking, next node, finished, a webhook attempt recorded or a delivery given
 * up) or of a campaign (state): ids only, for the live events stream (GET /api/v1/events), whose readers look up what
 * they show. Published by the domain modules, wired in src/boot.ts.
 */
export type ChangeEvent =
  | { kind: 'run'; organizationId: number; runId: number }
  | { kind: 'campaign'; organizationId: number; campaignId: number }

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
  /** This process among the ones sharing the database (random per start; src/instances/). */
  instanceId: string
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
  /** Uploaded CSVs, recordings, transcripts and documents: under `<dataDir>/objects` or in an S3 bucket. */
  objects: ObjectStore
  /**
   * The knowledge base's in-memory side: documents' vectors (a cache; the database holds them), and the nudge that has
   * the background processor look for queued documents now (a no-op until it runs: tests drain the queue themselves).
   */
  knowledge: { vectors: VectorCache; wake(): void }
  /** The addresses of a host name, for outbound requests (which check them all); tests answer for made-up names. */
  resolveHost: (hostname: string) => Promise<string[]>
  /** Model servers seen failing lately (models/health.ts): run starts refuse a call they would fail. */
  modelHealth: ModelHealth
  /** Changes of runs and campaigns, as they happen in this process. */
  events: OrgEventBus<ChangeEvent>
}
