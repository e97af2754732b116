import { readCappedText } from '../../lib/capped-body'
import type { AriConnectionSettings, AsteriskInfo, AsteriskPing, Bridge, Channel, Playback } from './types'

/**
 * A failed ARI request. `status` is the HTTP status, or null when no response came (refused, DNS, timeout).
 * `message` is Asterisk's own (`{"message": …}` or, for some 500s, `{"error": …}`); never a credential.
 */
export class AriError extends Error {
  override readonly name = 'AriError'

  constructor(
    readonly status: number | null,
    message: string,
    /** e.g. `DELETE /channels/{id}` with the real id: safe to log. */
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** The most an ARI answer may hold (a channel list of a busy Asterisk is well under 1 MB); of an error, 64 KiB are read. */
const ARI_ANSWER_MAX_BYTES = 4 * 1024 * 1024
const ARI_ERROR_BODY_MAX_BYTES = 64 * 1024

export type AriRestOptions = {
  fetch?: typeof fetch
  /** Time allowed until the response headers arrive. */
  timeoutMs?: number
}

export type OriginateParams = {
  /** Chosen by us so events that race the response can be correlated (the `;2` Local half gets `<id>;2`). */
  channelId: string
  /** Dial string, e.g. `PJSIP/1001` or `Local/100@test`. */
  endpoint: string
  /** Asterisk splits appArgs on commas, so each element must be comma-free. */
  appArgs?: string[]
  /** e.g. `"Sales" <+15551000>` */
  callerId?: string
  /** Seconds to wait for an answer; ARI's default is 30. */
  timeoutSeconds?: number
  variables?: Record<string, string>
  otherChannelId?: string
}

export type ExternalMediaParams = {
  channelId: string
  format: string
  externalHost?: string
  encapsulation?: 'rtp' | 'audiosocket' | 'none'
  transport?: 'udp' | 'tcp' | 'websocket'
  connectionType?: 'client' | 'server'
  direction?: 'both'
  data?: string
  transportData?: string
  variables?: Record<string, string>
}

export type AriRest = {
  /** POST /channels with our channelId, into the settings' Stasis app. */
  originate(params: OriginateParams): Promise<Channel>
  /** DELETE /channels/{id}; a channel that is already gone throws AriError with status 404. */
  hangup(channelId: string, reasonCode?: number): Promise<void>
  answer(channelId: string): Promise<void>
  getChannel(channelId: string): Promise<Channel>
  /** Every channel Asterisk has (both halves of Local pairs), for reconciliation after a reconnect. */
  listChannels(): Promise<Channel[]>
  createBridge(params?: { bridgeId?: string; name?: string }): Promise<Bridge>
  /** Every bridge Asterisk has, ours and others'. */
  listBridges(): Promise<Bridge[]>
  addChannelToBridge(bridgeId: string, channelIds: readonly string[]): Promise<void>
  destroyBridge(bridgeId: string): Promise<void>
  removeChannelFromBridge(bridgeId: string, channelIds: readonly string[]): Promise<void>
  /** Plays to everyone in the bridge; `media` such as `tone:ring` or `sound:hello-world`. */
  playOnBridge(bridgeId: string, params: { media: string; playbackId: string }): Promise<Playback>
  /** DELETE /playbacks/{id}; one already finished throws AriError with status 404. */
  stopPlayback(playbackId: string): Promise<void>
  externalMedia(params: ExternalMediaParams): Promise<Channel>
  /**
   * POST /applications/{app}/subscription: the settings' app also gets the events of these sources (`channel:<id>`,
   * `bridge:<id>`) until they are destroyed, even outside Stasis. Asterisk refuses all (422) if one does not exist.
   */
  subscribe(eventSources: readonly string[]): Promise<void>
  /** GET /asterisk/ping: cheap, checks reachability and credentials. */
  ping(): Promise<AsteriskPing>
  asteriskInfo(): Promise<AsteriskInfo>
}

type QueryValue = string | number | boolean | undefined

const DEFAULT_TIMEOUT_MS = 10_000

/** `http://h:8088`, `http://h:8088/`, `http://h:8088/ari/` → `http://h:8088/ari` (a path prefix is kept). */
export function ariBaseUrl(endpoint: string): string {
  const url = new URL(endpoint)
  url.username = ''
  url.password = ''
  url.search = ''
  url.hash = ''
  const path = url.pathname.replace(/\/+$/, '').replace(/\/ari$/, '')
  return `${url.origin}${path}/ari`
}

export function basicAuthorization(settings: AriConnectionSettings): string {
  return `Basic ${Buffer.from(`${settings.username}:${settings.password}`, 'utf8').toString('base64')}`
}

/**
 * The HTTP requests of an ARI client: authenticated, errors as AriError, JSON answers capped, and bounded in time up to
 * the answer's last byte (a PBX that sends its headers and then nothing would otherwise hold the call's step for ever).
 */
function ariRequests(settings: AriConnectionSettings, opts: AriRestOptions) {
  const baseUrl = ariBaseUrl(settings.endpoint)
  const authorization = basicAuthorization(settings)
  const fetchImpl = opts.fetch ?? fetch
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS

  /** Sends the request and reads its answer with `read`, both within `timeoutMs`. */
  async function request<T>(
    method: string,
    path: string,
    query: Record<string, QueryValue>,
    body: unknown,
    read: (response: Response, operation: string) => Promise<T>,
  ): Promise<T> {
    const url = new URL(baseUrl + path)
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value))
    }
    const operation = `${method} ${path}`
    const headers: Record<string, string> = { authorization, accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(), timeoutMs)
    let response: Response | undefined
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: abort.signal,
      })
      if (!response.ok) throw new AriError(response.status, await errorMessage(response), operation)
      return await read(response, operation)
    } catch (cause) {
      if (cause instanceof AriError && !abort.signal.aborted) throw cause
      const late = response ? `no complete answer within ${timeoutMs} ms` : `no response within ${timeoutMs} ms`
      throw new AriError(response?.status ?? null, abort.signal.aborted ? late : describeCause(cause), operation, {
        cause,
      })
    } finally {
      clearTimeout(timer)
    }
  }

  const json = <T>(method: string, path: string, query: Record<string, QueryValue> = {}, body?: unknown) =>
    request(method, path, query, body, async (response, operation) => {
      const { text, truncated } = await readCappedText(response.body, ARI_ANSWER_MAX_BYTES)
      if (truncated)
        throw new AriError(response.status, `an answer larger than ${ARI_ANSWER_MAX_BYTES} bytes`, operation)
      try {
        return JSON.parse(text) as T
      } catch (cause) {
        throw new AriError(response.status, 'an answer that is not JSON', operation, { cause })
      }
    })

  const noContent = (method: string, path: string, query: Record<string, QueryValue> = {}) =>
    request(method, path, query, undefined, async (response) => {
      await response.body?.cancel()
    })

  return { json, noContent }
}

export function createAriRest(settings: AriConnectionSettings, opts: AriRestOptions = {}): AriRest {
  const { json, noContent } = ariRequests(settings, opts)
  const variablesBody = (variables?: Record<string, string>) => (variables ? { variables } : undefined)
  const segment = encodeURIComponent

  return {
    originate: (params) =>
      json<Channel>(
        'POST',
        '/channels',
        {
          endpoint: params.endpoint,
          app: settings.app,
          appArgs: params.appArgs?.join(','),
          callerId: params.callerId,
          timeout: params.timeoutSeconds,
          channelId: params.channelId,
          otherChannelId: params.otherChannelId,
        },
        variablesBody(params.variables),
      ),
    hangup: (channelId, reasonCode) =>
      noContent('DELETE', `/channels/${segment(channelId)}`, { reason_code: reasonCode }),
    answer: (channelId) => noContent('POST', `/channels/${segment(channelId)}/answer`),
    getChannel: (channelId) => json<Channel>('GET', `/channels/${segment(channelId)}`),
    listChannels: () => json<Channel[]>('GET', '/channels'),
    createBridge: (params = {}) =>
      json<Bridge>('POST', '/bridges', { type: 'mixing', bridgeId: params.bridgeId, name: params.name }),
    listBridges: () => json<Bridge[]>('GET', '/bridges'),
    addChannelToBridge: (bridgeId, channelIds) =>
      noContent('POST', `/bridges/${segment(bridgeId)}/addChannel`, { channel: channelIds.join(',') }),
    destroyBridge: (bridgeId) => noContent('DELETE', `/bridges/${segment(bridgeId)}`),
    removeChannelFromBridge: (bridgeId, channelIds) =>
      noContent('POST', `/bridges/${segment(bridgeId)}/removeChannel`, { channel: channelIds.join(',') }),
    playOnBridge: (bridgeId, params) =>
      json<Playback>('POST', `/bridges/${segment(bridgeId)}/play`, {
        media: params.media,
        playbackId: params.playbackId,
      }),
    stopPlayback: (playbackId) => noContent('DELETE', `/playbacks/${segment(playbackId)}`),
    externalMedia: (params) =>
      json<Channel>(
        'POST',
        '/channels/externalMedia',
        {
          channelId: params.channelId,
          app: settings.app,
          external_host: params.externalHost,
          encapsulation: params.encapsulation,
          transport: params.transport,
          connection_type: params.connectionType,
          format: params.format,
          direction: params.direction,
          data: params.data,
          transport_data: params.transportData,
        },
        variablesBody(params.variables),
      ),
    subscribe: (eventSources) =>
      noContent('POST', `/applications/${segment(settings.app)}/subscription`, {
        eventSource: eventSources.join(','),
      }),
    ping: () => json<AsteriskPing>('GET', '/asterisk/ping'),
    asteriskInfo: () => json<AsteriskInfo>('GET', '/asterisk/info'),
  }
}

/** Asterisk answers errors as `{"message": …}`, except e.g. an unknown channel technology: 500 `{"error": …}`. */
async function errorMessage(response: Response): Promise<string> {
  const { text } = await readCappedText(response.body, ARI_ERROR_BODY_MAX_BYTES).catch(() => ({ text: '' }))
  try {
    const body: unknown = JSON.parse(text)
    if (typeof body === 'object' && body !== null) {
      const { message, error } = body as { message?: unknown; error?: unknown }
      if (typeof message === 'string') return message
      if (typeof error === 'string') return error
    }
  } catch {
    // not JSON (e.g. a proxy's HTML page): fall through to the status line
  }
  return `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`
}

function describeCause(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause)
}
