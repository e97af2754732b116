import WebSocket from 'ws'
import { AriError, ariBaseUrl, basicAuthorization, createAriRest } from './rest'
import type { AriConnectionSettings, AriEvent, AriLogger } from './types'

export type AriEventsState = 'connecting' | 'connected' | 'backoff' | 'stopped'

/** auth: ARI refused the credentials; network: unreachable, dropped or silent; protocol: ARI answered unexpectedly. */
export type AriFailure = { kind: 'auth' | 'network' | 'protocol'; message: string }

export type AriEventHandlers = {
  onEvent(event: AriEvent): void
  /** After every (re)connect. Asterisk does not replay missed events: reconcile live calls over REST here. */
  onConnected?(): void | Promise<void>
  onFailure?(failure: AriFailure): void
}

export type BackoffPolicy = { baseMs: number; capMs: number }

export type AriEventsOptions = {
  backoff?: BackoffPolicy
  /** A connection that stayed up this long resets the backoff. */
  stableAfterMs?: number
  pingIntervalMs?: number
  /** No message and no pong for this long: the connection is dead. */
  silenceTimeoutMs?: number
  /** Limit for the preflight request and for the websocket upgrade. */
  connectTimeoutMs?: number
  /** Source of jitter in [0, 1). */
  random?: () => number
  fetch?: typeof fetch
  logger?: AriLogger
}

export type AriEvents = {
  readonly state: AriEventsState
  /** Connects and keeps reconnecting until stop(); a no-op while already running. */
  start(): void
  /** Closes the socket and never reconnects; resolves once the socket is closed. */
  stop(): Promise<void>
}

const DEFAULTS = {
  backoff: { baseMs: 500, capMs: 30_000 },
  stableAfterMs: 30_000,
  pingIntervalMs: 10_000,
  silenceTimeoutMs: 25_000,
  connectTimeoutMs: 10_000,
}

/** How long a stop() waits for the server's close frame before dropping the socket. */
const CLOSE_GRACE_MS = 1_000

/** Capped exponential backoff with full jitter: uniform in [0, min(cap, base·2^failures)). */
export function backoffDelayMs(
  consecutiveFailures: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** consecutiveFailures)
  return Math.floor(random() * ceiling)
}

/**
 * `ws(s)://host[/prefix]/ari/events?app=…`; credentials go in a header, never in the URL. No `subscribeAll`: it
 * subscribes the app to every channel, bridge, endpoint and device state of the whole PBX (other tenants' calls
 * included), and its device-state subscriptions deadlocked Asterisk 22.10.1's res_stasis_device_state on session
 * teardown (issue 29). The app's own subscriptions carry what Ringbase needs (see the adapter).
 */
export function ariEventsUrl(settings: AriConnectionSettings): string {
  const url = new URL(`${ariBaseUrl(settings.endpoint)}/events`)
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
  url.searchParams.set('app', settings.app)
  return url.toString()
}

/** One events client: its settings, resolved options and the state its connection attempts share. */
type EventsClient = {
  settings: AriConnectionSettings
  handlers: AriEventHandlers
  backoff: NonNullable<AriEventsOptions['backoff']>
  stableAfterMs: number
  pingIntervalMs: number
  silenceTimeoutMs: number
  connectTimeoutMs: number
  random: () => number
  log: AriEventsOptions['logger']
  rest: ReturnType<typeof createAriRest>
  url: string
  logContext: { app: string; url: string }
  state: AriEventsState
  consecutiveFailures: number
  /** Bumped by start() and stop(): callbacks of an older run find it changed and do nothing. */
  run: number
  retryTimer: ReturnType<typeof setTimeout> | undefined
  openSocket: { socket: WebSocket; closed: Promise<void> } | undefined
}

export function createAriEvents(
  settings: AriConnectionSettings,
  handlers: AriEventHandlers,
  opts: AriEventsOptions = {},
): AriEvents {
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs
  const url = ariEventsUrl(settings)
  const client: EventsClient = {
    settings,
    handlers,
    backoff: opts.backoff ?? DEFAULTS.backoff,
    stableAfterMs: opts.stableAfterMs ?? DEFAULTS.stableAfterMs,
    pingIntervalMs: opts.pingIntervalMs ?? DEFAULTS.pingIntervalMs,
    silenceTimeoutMs: opts.silenceTimeoutMs ?? DEFAULTS.silenceTimeoutMs,
    connectTimeoutMs,
    random: opts.random ?? Math.random,
    log: opts.logger,
    rest: createAriRest(settings, { fetch: opts.fetch, timeoutMs: connectTimeoutMs }),
    url,
    logContext: { app: settings.app, url },
    state: 'stopped',
    consecutiveFailures: 0,
    run: 0,
    retryTimer: undefined,
    openSocket: undefined,
  }
  return {
    get state() {
      return client.state
    },
    start() {
      if (client.state !== 'stopped') return
      client.run += 1
      void connect(client, client.run)
    },
    stop: () => stopClient(client),
  }
}

async function stopClient(client: EventsClient) {
  client.run += 1
  client.state = 'stopped'
  clearTimeout(client.retryTimer)
  const current = client.openSocket
  client.openSocket = undefined
  if (!current) return
  current.socket.close(1000, 'client stopping')
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      current.socket.terminate()
      resolve()
    }, CLOSE_GRACE_MS)
    void current.closed.then(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

async function connect(client: EventsClient, thisRun: number) {
  client.state = 'connecting'
  const preflightFailure = await preflight(client)
  if (thisRun !== client.run) return
  if (preflightFailure) return retryAfter(client, preflightFailure, thisRun)
  openWebSocket(client, thisRun)
}

/**
 * A websocket upgrade refused with 401 reaches a WebSocket client only as a generic error, so credentials
 * and reachability are checked over REST first.
 */
async function preflight(client: EventsClient): Promise<AriFailure | undefined> {
  try {
    await client.rest.ping()
    return undefined
  } catch (error) {
    if (error instanceof AriError) return failureFromStatus(error.status, error.message)
    return { kind: 'protocol', message: `unexpected answer to GET /asterisk/ping: ${String(error)}` }
  }
}

function openWebSocket(client: EventsClient, thisRun: number) {
  const socket = new WebSocket(client.url, { headers: { authorization: basicAuthorization(client.settings) } })
  let markClosed!: () => void
  client.openSocket = {
    socket,
    closed: new Promise<void>((resolve) => {
      markClosed = resolve
    }),
  }
  let openedAt: number | undefined
  let lastTrafficAt = performance.now()
  let errorMessage: string | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let finished = false

  const connectTimer = setTimeout(() => {
    finish({ kind: 'network', message: `websocket not open after ${client.connectTimeoutMs} ms` })
  }, client.connectTimeoutMs)

  /** Ends this socket once, whatever ended it, and schedules the next attempt unless stop() came first. */
  const finish = (failure: AriFailure) => {
    if (finished) return
    finished = true
    clearTimeout(connectTimer)
    clearInterval(heartbeat)
    if (socket.readyState !== WebSocket.CLOSED) socket.terminate()
    if (client.openSocket?.socket === socket) client.openSocket = undefined
    if (thisRun !== client.run) return
    if (openedAt !== undefined && performance.now() - openedAt >= client.stableAfterMs) client.consecutiveFailures = 0
    retryAfter(client, failure, thisRun)
  }

  socket.addEventListener('open', () => {
    if (thisRun !== client.run) return
    openedAt = performance.now()
    lastTrafficAt = openedAt
    clearTimeout(connectTimer)
    client.state = 'connected'
    client.log?.info(client.logContext, 'ARI events connected')
    heartbeat = setInterval(() => {
      const silentForMs = performance.now() - lastTrafficAt
      if (silentForMs >= client.silenceTimeoutMs) {
        finish({ kind: 'network', message: `no message or pong for ${Math.round(silentForMs)} ms` })
      } else {
        socket.ping()
      }
    }, client.pingIntervalMs)
    void runHandler(client, 'onConnected', () => client.handlers.onConnected?.())
  })
  socket.on('pong', () => {
    lastTrafficAt = performance.now()
  })
  socket.addEventListener('message', (message) => {
    lastTrafficAt = performance.now()
    if (thisRun === client.run) deliver(client, message.data)
  })
  socket.on('error', (error: Error) => {
    errorMessage = error.message
  })
  socket.addEventListener('close', (event) => {
    markClosed()
    finish(
      openedAt === undefined
        ? failureFromUpgradeError(errorMessage)
        : {
            kind: 'network',
            message: `websocket closed (code ${event.code}${event.reason ? `: ${event.reason}` : ''})`,
          },
    )
  })
}

function deliver(client: EventsClient, data: unknown) {
  const event = parseEvent(data)
  if (!event) {
    const what = typeof data === 'string' ? `${data.length} chars` : 'binary'
    report(client, { kind: 'protocol', message: `ignored a websocket message that is not an ARI event (${what})` })
    return
  }
  client.log?.debug({ app: client.settings.app, type: event.type }, 'ARI event')
  if (event.type === 'ApplicationReplaced') {
    report(client, {
      kind: 'protocol',
      message: `another websocket registered app "${client.settings.app}"; its events no longer come to this connection`,
    })
  }
  void runHandler(client, 'onEvent', () => client.handlers.onEvent(event))
}

function retryAfter(client: EventsClient, failure: AriFailure, thisRun: number) {
  const delayMs = backoffDelayMs(client.consecutiveFailures, client.backoff, client.random)
  client.consecutiveFailures += 1
  client.state = 'backoff'
  report(client, failure, delayMs)
  client.retryTimer = setTimeout(() => {
    if (thisRun === client.run) void connect(client, thisRun)
  }, delayMs)
}

function report(client: EventsClient, failure: AriFailure, retryInMs?: number) {
  const fields = { ...client.logContext, kind: failure.kind, reason: failure.message, retryInMs }
  if (failure.kind === 'network') client.log?.warn(fields, 'ARI events connection failed')
  else client.log?.error(fields, 'ARI events connection problem')
  void runHandler(client, 'onFailure', () => client.handlers.onFailure?.(failure))
}

/** A throwing handler must not take the connection down with it. */
async function runHandler(client: EventsClient, name: keyof AriEventHandlers, call: () => void | Promise<void>) {
  try {
    await call()
  } catch (error) {
    client.log?.error({ ...client.logContext, handler: name, err: error }, 'ARI events handler failed')
  }
}

function failureFromStatus(status: number | null, message: string): AriFailure {
  if (status === 401 || status === 403)
    return { kind: 'auth', message: `ARI refused the credentials (HTTP ${status}: ${message})` }
  if (status === null || status >= 500) return { kind: 'network', message: `ARI unreachable: ${message}` }
  return { kind: 'protocol', message: `ARI answered HTTP ${status}: ${message}` }
}

/** Bun words a refused upgrade as "… Expected 101 status code: 401"; the status is the best clue there is. */
function failureFromUpgradeError(errorMessage: string | undefined): AriFailure {
  const status = errorMessage?.match(/Expected 101 status code: (\d{3})/)?.[1]
  if (status) return failureFromStatus(Number(status), 'websocket upgrade refused')
  return { kind: 'network', message: `websocket did not open${errorMessage ? `: ${errorMessage}` : ''}` }
}

function parseEvent(data: unknown): AriEvent | undefined {
  if (typeof data !== 'string') return undefined
  try {
    const parsed: unknown = JSON.parse(data)
    const isEvent =
      typeof parsed === 'object' && parsed !== null && typeof (parsed as { type?: unknown }).type === 'string'
    return isEvent ? (parsed as AriEvent) : undefined
  } catch {
    return undefined
  }
}
