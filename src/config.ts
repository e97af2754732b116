import { resolve } from 'node:path'

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

export type Config = {
  httpHost: string
  httpPort: number
  dataDir: string
  publicUrl: string
  logLevel: LogLevel
  bootstrapApiKey: string | null
  masterKey: string | null
  maxUploadBytes: number
  /** How long an outbound call may ring before the provider gives up (ARI originate timeout). */
  ringTimeoutSeconds: number
  /** A connection with a request in progress and no traffic for this long is closed. */
  httpIdleTimeoutSeconds: number
  /** Web calls (voice from the browser) each organization may have at once, within its concurrent call limit. */
  webCallLimit: number
  /**
   * How long a knowledge-base document being processed stays claimed without a renewal: after a crash or restart it is
   * taken up again once this has passed (several instances may share the queue, so none can tell a dead claim sooner).
   */
  knowledgeLeaseSeconds: number
  /**
   * How often this process tells the database it is alive and renews its ARI leases. An instance silent for three
   * heartbeats is dead (its calls are recovered by a live one) and an ARI lease lasts three heartbeats. 5 s; tests
   * shorten it.
   */
  instanceHeartbeatMs: number
  /** Carrier REST API base URLs replacing the public ones (`RINGBASE_PROVIDER_API_<PROVIDER>`): tests, proxies, regions. */
  providerApiOverrides: Partial<Record<ProviderApiName, string>>
  /** Where uploads, recordings, transcripts and documents are kept: `<dataDir>/objects` unless an S3 bucket is named. */
  objectStore: { kind: 'local' } | ({ kind: 's3' } & S3StoreConfig)
  /**
   * `postgres://…` (`--database-url`, `RINGBASE_DATABASE_URL`): the data in PostgreSQL, shared by several instances;
   * null for SQLite in the data dir. It may hold a password: log `databaseLabel(url)`, never the URL.
   */
  databaseUrl: string | null
}

/** An S3-compatible bucket (`--object-store s3://bucket/prefix`), its endpoint and credentials from the environment. */
export type S3StoreConfig = {
  bucket: string
  /** Key prefix without slashes at either end; '' for the bucket's root. */
  prefix: string
  /** Unset: AWS's endpoint for the region. */
  endpoint: string | undefined
  region: string | undefined
  accessKeyId: string
  secretAccessKey: string
}

/** Carriers whose REST API base URL is configuration (Exotel's is a field of each configuration instead). */
export const PROVIDER_API_NAMES = ['cloudonix', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp'] as const
export type ProviderApiName = (typeof PROVIDER_API_NAMES)[number]
const PROVIDER_API_VARIABLE = /^RINGBASE_PROVIDER_API_(.+)$/

export class ConfigError extends Error {}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
export const DEFAULT_HTTP = '127.0.0.1:8000'
export const DEFAULT_DATA_DIR = './data'
export const DEFAULT_MAX_UPLOAD_BYTES = 100 * 1024 * 1024
export const DEFAULT_RING_TIMEOUT_SECONDS = 30
/** Above the 10 s a provider's REST API may take to answer a request that waits on it. Bun allows up to 255. */
export const DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS = 30
export const DEFAULT_KNOWLEDGE_LEASE_SECONDS = 30
export const DEFAULT_WEB_CALL_LIMIT = 2
export const DEFAULT_INSTANCE_HEARTBEAT_MS = 5000

export type Flags = Record<string, string | true>

/** `--name value`, `--name=value` and bare `--switch`; everything else is positional. */
export function parseArgs(argv: string[]): { positional: string[]; flags: Flags } {
  const positional: string[] = []
  const flags: Flags = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (!arg.startsWith('--')) {
      positional.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    if (eq > 0) flags[arg.slice(2, eq)] = arg.slice(eq + 1)
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) flags[arg.slice(2)] = argv[++i]
    else flags[arg.slice(2)] = true
  }
  return { positional, flags }
}

export function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  const port = match ? Number(match[2]) : NaN
  if (!match || port < 0 || port > 65535) throw new ConfigError(`--http must be HOST:PORT, got '${value}'`)
  return { host: match[1], port }
}

function flagString(flags: Flags, name: string): string | undefined {
  const value = flags[name]
  if (value === true) throw new ConfigError(`--${name} needs a value`)
  return value
}

function wholeSeconds(value: string | undefined, fallback: number, flag: string, max: number): number {
  const seconds = value === undefined ? fallback : Number(value)
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > max) {
    throw new ConfigError(`--${flag} must be a whole number of seconds from 1 to ${max}`)
  }
  return seconds
}

/** Flags override environment variables, which override defaults. No other file reads process.env. */
export function loadConfig(flags: Flags, env: Record<string, string | undefined> = process.env): Config {
  const http = flagString(flags, 'http') ?? env.RINGBASE_HTTP ?? DEFAULT_HTTP
  const { host, port } = parseHostPort(http)
  const dataDir = resolve(flagString(flags, 'dir') ?? env.RINGBASE_DIR ?? DEFAULT_DATA_DIR)
  const publicUrl = (flagString(flags, 'public-url') ?? env.RINGBASE_PUBLIC_URL ?? `http://${host}:${port}`).replace(
    /\/+$/,
    '',
  )
  if (!/^https?:\/\/[^/]+/.test(publicUrl))
    throw new ConfigError(`--public-url must be an http(s) URL, got '${publicUrl}'`)
  const logLevel = (env.RINGBASE_LOG_LEVEL ?? 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`RINGBASE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)
  const bootstrapApiKey = env.RINGBASE_BOOTSTRAP_API_KEY || null
  if (bootstrapApiKey !== null && bootstrapApiKey.length < 16) {
    throw new ConfigError('RINGBASE_BOOTSTRAP_API_KEY must be at least 16 characters')
  }
  const maxUpload = flagString(flags, 'max-upload-bytes') ?? env.RINGBASE_MAX_UPLOAD_BYTES
  const maxUploadBytes = maxUpload === undefined ? DEFAULT_MAX_UPLOAD_BYTES : Number(maxUpload)
  if (!Number.isInteger(maxUploadBytes) || maxUploadBytes < 1)
    throw new ConfigError('--max-upload-bytes must be a positive integer')
  const ringTimeoutSeconds = wholeSeconds(
    flagString(flags, 'ring-timeout') ?? env.RINGBASE_RING_TIMEOUT_SECONDS,
    DEFAULT_RING_TIMEOUT_SECONDS,
    'ring-timeout',
    300,
  )
  const httpIdleTimeoutSeconds = wholeSeconds(
    flagString(flags, 'http-idle-timeout') ?? env.RINGBASE_HTTP_IDLE_TIMEOUT_SECONDS,
    DEFAULT_HTTP_IDLE_TIMEOUT_SECONDS,
    'http-idle-timeout',
    255,
  )
  const knowledgeLeaseSeconds = wholeSeconds(
    env.RINGBASE_KNOWLEDGE_LEASE_SECONDS,
    DEFAULT_KNOWLEDGE_LEASE_SECONDS,
    'knowledge-lease (RINGBASE_KNOWLEDGE_LEASE_SECONDS)',
    3600,
  )
  const heartbeat = env.RINGBASE_INSTANCE_HEARTBEAT_MS
  const instanceHeartbeatMs = heartbeat === undefined ? DEFAULT_INSTANCE_HEARTBEAT_MS : Number(heartbeat)
  if (!Number.isInteger(instanceHeartbeatMs) || instanceHeartbeatMs < 50 || instanceHeartbeatMs > 60_000)
    throw new ConfigError('RINGBASE_INSTANCE_HEARTBEAT_MS must be a whole number of milliseconds from 50 to 60000')
  const webCall = flagString(flags, 'web-call-limit') ?? env.RINGBASE_WEB_CALL_LIMIT
  const webCallLimit = webCall === undefined ? DEFAULT_WEB_CALL_LIMIT : Number(webCall)
  if (!Number.isInteger(webCallLimit) || webCallLimit < 0 || webCallLimit > 1000)
    throw new ConfigError('--web-call-limit must be a whole number from 0 to 1000')
  return {
    providerApiOverrides: providerApiOverrides(env),
    objectStore: objectStoreConfig(flagString(flags, 'object-store') ?? env.RINGBASE_OBJECT_STORE, env),
    databaseUrl: databaseUrl(flagString(flags, 'database-url') ?? env.RINGBASE_DATABASE_URL),
    httpHost: host.replace(/^\[|\]$/g, ''),
    httpPort: port,
    dataDir,
    publicUrl,
    logLevel,
    bootstrapApiKey,
    masterKey: env.RINGBASE_MASTER_KEY || null,
    maxUploadBytes,
    ringTimeoutSeconds,
    httpIdleTimeoutSeconds,
    knowledgeLeaseSeconds,
    instanceHeartbeatMs,
    webCallLimit,
  }
}

function providerApiOverrides(env: Record<string, string | undefined>): Partial<Record<ProviderApiName, string>> {
  const overrides: Partial<Record<ProviderApiName, string>> = {}
  for (const [variable, value] of Object.entries(env)) {
    const provider = PROVIDER_API_VARIABLE.exec(variable)?.[1].toLowerCase()
    if (provider === undefined || value === undefined || value === '') continue
    if (!(PROVIDER_API_NAMES as readonly string[]).includes(provider)) {
      throw new ConfigError(
        `${variable}: unknown provider; the variables are RINGBASE_PROVIDER_API_ followed by one of ${PROVIDER_API_NAMES.join(', ').toUpperCase()}`,
      )
    }
    if (!/^https?:\/\/[^/]+/.test(value)) throw new ConfigError(`${variable} must be an http(s) URL, got '${value}'`)
    overrides[provider as ProviderApiName] = value.replace(/\/+$/, '')
  }
  return overrides
}

/** The database named without its credentials: `postgresql://host:port/name`. */
export function databaseLabel(url: string): string {
  const parsed = new URL(url)
  return `postgresql://${parsed.host}${parsed.pathname}`
}

function databaseUrl(value: string | undefined): string | null {
  if (value === undefined || value === '') return null
  let parsed: URL | null = null
  try {
    parsed = new URL(value)
  } catch {
    parsed = null
  }
  if (!parsed || !/^postgres(ql)?:$/.test(parsed.protocol) || parsed.host === '')
    throw new ConfigError('--database-url must be postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE')
  return value
}

const S3_URL = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/

/** `local` (or nothing) for the data dir, `s3://bucket/prefix` for a bucket; credentials only from the environment. */
function objectStoreConfig(value: string | undefined, env: Record<string, string | undefined>): Config['objectStore'] {
  if (value === undefined || value === '' || value === 'local') return { kind: 'local' }
  const match = S3_URL.exec(value)
  if (!match) throw new ConfigError(`--object-store must be local or s3://BUCKET[/PREFIX], got '${value}'`)
  const endpoint = env.RINGBASE_S3_ENDPOINT || undefined
  if (endpoint !== undefined && !/^https?:\/\/[^/]+/.test(endpoint))
    throw new ConfigError(`RINGBASE_S3_ENDPOINT must be an http(s) URL, got '${endpoint}'`)
  const accessKeyId = env.RINGBASE_S3_ACCESS_KEY_ID
  const secretAccessKey = env.RINGBASE_S3_SECRET_ACCESS_KEY
  if (!accessKeyId || !secretAccessKey)
    throw new ConfigError(
      '--object-store s3://… needs RINGBASE_S3_ACCESS_KEY_ID and RINGBASE_S3_SECRET_ACCESS_KEY in the environment',
    )
  return {
    kind: 's3',
    bucket: match[1],
    prefix: (match[2] ?? '').replace(/^\/+|\/+$/g, ''),
    endpoint,
    region: env.RINGBASE_S3_REGION || undefined,
    accessKeyId,
    secretAccessKey,
  }
}
