import WebSocket from 'ws'
import { pinnedTargets, type ModelConnection, type PinnedTarget } from './http'
import { ModelServerError } from './types'
import { within } from '../lib/within'

/**
 * The WebSocket to a realtime speech-to-speech server (OpenAI Realtime API, `<base URL>/realtime?model=…`), bounded
 * against a server that misbehaves: a frame over `MAX_FRAME_BYTES` (the socket refuses it), more than
 * `MAX_EVENTS_PER_SECOND` events in a second, a connection that is not open within `connectMs` (the name's lookup
 * included), an event that is not JSON. Each ends the socket with one failure; events are JSON objects with a string
 * `type`.
 *
 * The socket is pinned as HTTP requests to model servers are (`pinnedTargets`, http.ts): it connects to an address the
 * name was resolved to and checked at, with the name as its Host header and TLS server name.
 */

export type RealtimeServerEvent = { type: string } & Record<string, any>

export type RealtimeSocket = {
  send(event: Record<string, unknown>): void
  close(): void
  readonly open: boolean
}

export type RealtimeSocketHandlers = {
  onEvent(event: RealtimeServerEvent): void
  /** Once, when the socket fails or the server closes it; never after `close()`. */
  onFailure(error: ModelServerError): void
}

/** Far above one audio chunk (a second of 24 kHz PCM is 64 KB of base64). */
export const MAX_FRAME_BYTES = 2 * 1024 * 1024
/** A real server sends a few hundred events a second at most (audio deltas every 20-100 ms, transcript pieces). */
export const MAX_EVENTS_PER_SECOND = 2_000

/** `ws(s)://…/realtime?<query>` from the connection's HTTP base URL (`model=…`, or `intent=transcription`). */
export function realtimeUrl(baseUrl: string, query: Record<string, string>): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/realtime`)
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
  return url.toString()
}

/** Resolves what `work` resolves, or rejects (timeout) after `ms`. */
const connectedWithin = <T>(work: Promise<T>, ms: number): Promise<T> =>
  within(work, ms, () => {
    throw new ModelServerError('The realtime model did not accept the connection in time', null, 'timeout')
  })

/**
 * Opens the socket; resolves once it is open, rejects (ModelServerError) when it cannot be within `connectMs`. An
 * address that refuses the connection (`localhost` resolving to `::1` first, the server on 127.0.0.1) passes to the next.
 */
export async function openRealtimeSocket(
  connection: ModelConnection,
  query: Record<string, string>,
  connectMs: number,
  handlers: RealtimeSocketHandlers,
): Promise<RealtimeSocket> {
  const deadline = Date.now() + connectMs
  const targets = await connectedWithin(
    pinnedTargets(connection, realtimeUrl(connection.baseUrl, query)).catch((error: ModelServerError) => {
      throw new ModelServerError(`The realtime model cannot be reached: ${error.message}`, null, error.kind)
    }),
    connectMs,
  )
  for (let index = 0; ; index++) {
    try {
      return await connectSocket(connection, targets[index], Math.max(1, deadline - Date.now()), handlers)
    } catch (error) {
      const unreachable = error instanceof ModelServerError && error.kind === 'unreachable'
      if (!unreachable || index + 1 === targets.length || Date.now() >= deadline) throw error
    }
  }
}

function connectSocket(
  connection: ModelConnection,
  target: PinnedTarget,
  connectMs: number,
  handlers: RealtimeSocketHandlers,
): Promise<RealtimeSocket> {
  const socket = new WebSocket(target.url, {
    headers: {
      ...(target.host ? { Host: target.host } : {}),
      ...(connection.apiKey ? { Authorization: `Bearer ${connection.apiKey}` } : {}),
      'OpenAI-Beta': 'realtime=v1',
    },
    ...(target.servername ? { servername: target.servername } : {}),
    maxPayload: MAX_FRAME_BYTES,
    handshakeTimeout: connectMs,
  })
  let closedByUs = false
  let failed = false
  let opened = false
  const fail = (error: ModelServerError) => {
    if (failed || closedByUs) return
    failed = true
    socket.removeAllListeners('message')
    socket.terminate()
    handlers.onFailure(error)
  }
  const rate = { windowStart: Date.now(), count: 0 }
  socket.on('message', (data) => {
    const now = Date.now()
    if (now - rate.windowStart >= 1_000) Object.assign(rate, { windowStart: now, count: 0 })
    if (++rate.count > MAX_EVENTS_PER_SECOND)
      return fail(new ModelServerError('The realtime model flooded the connection with events', null, 'bad_answer'))
    const event = parseEvent(data)
    if (!event)
      return fail(new ModelServerError('The realtime model sent an event that is not JSON', null, 'bad_answer'))
    handlers.onEvent(event)
  })
  socket.on('error', (error) => {
    if (!opened) return
    const tooBig = /payload|too (big|large)/i.test(error.message)
    fail(
      new ModelServerError(
        tooBig
          ? 'The realtime model sent a frame too large to accept'
          : `The realtime model's connection failed: ${error.message}`,
        null,
        tooBig ? 'bad_answer' : 'stalled',
      ),
    )
  })
  socket.on('close', (code) => {
    if (opened) fail(new ModelServerError(`The realtime model closed the connection (code ${code})`, null, 'stalled'))
  })
  const api: RealtimeSocket = {
    send(event) {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(event))
    },
    close() {
      closedByUs = true
      socket.removeAllListeners('message')
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.terminate()
    },
    get open() {
      return socket.readyState === WebSocket.OPEN && !failed
    },
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      api.close()
      reject(new ModelServerError('The realtime model did not accept the connection in time', null, 'timeout'))
    }, connectMs)
    socket.once('open', () => {
      clearTimeout(timer)
      opened = true
      resolve(api)
    })
    socket.once('error', (error) => {
      clearTimeout(timer)
      reject(new ModelServerError(`The realtime model cannot be reached: ${error.message}`, null, 'unreachable'))
    })
  })
}

function parseEvent(data: WebSocket.RawData): RealtimeServerEvent | null {
  try {
    const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString()
    const event = JSON.parse(text)
    return event !== null && typeof event === 'object' && typeof event.type === 'string' ? event : null
  } catch {
    return null
  }
}
