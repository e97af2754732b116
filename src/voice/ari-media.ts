/**
 * The media leg of an ARI call: Asterisk's WebSocket channel driver (chan_websocket, externalMedia with
 * `transport=websocket`, `connection_type=server`, `encapsulation=none`, `format=ulaw`). Ringbase connects to
 * `<ari origin>/media/<MEDIA_WEBSOCKET_CONNECTION_ID>` with subprotocol `media`; the random connection id admits it.
 *
 * Facts from Asterisk 22.10.1 traces (shared/reference/ari): MEDIA_START is the first text frame (JSON with
 * `transport_data=f(json)`, else `MEDIA_START key:value …`); caller frames are 160 bytes every 20 ms but only while
 * the bridge carries sound; audio we send may be any length and Asterisk paces it; its queue sends MEDIA_XOFF at 900
 * frames (18 s) and MEDIA_XON at 800, and may drop audio sent in between. So this transport keeps at most
 * `maxQueuedMs` at Asterisk by its own estimate of the playout, holds the rest locally, and stops while XOFF.
 */
import type { MarkOutcome, MediaClose, MediaTransport } from './media-transport.ts'

export type MediaStart = {
  connectionId: string
  channel: string
  channelId: string
  format: string
  optimalFrameSize: number
  ptimeMs: number
  /** The form MEDIA_START came in; commands are sent in the same form. */
  controlFormat: 'json' | 'plain'
}

export type AriMediaTransport = MediaTransport & {
  readonly start: MediaStart
  /** True between MEDIA_XOFF and MEDIA_XON: audio is held locally. */
  readonly flowPaused: boolean
}

export type AriMediaOptions = {
  /** The ARI endpoint as configured (`http://pbx:8088`, `https://pbx/ari`, or already ws/wss). */
  endpoint: string
  connectionId: string
  /** Milliseconds, monotonic; arrival times and the playout estimate use it. */
  now?: () => number
  /** Audio kept queued at Asterisk at most (its own limit is 18 s; past it audio may be lost). */
  maxQueuedMs?: number
  /** How long to wait for the socket to open and MEDIA_START to arrive. */
  startTimeoutMs?: number
  logger?: { warn(context: object, message: string): void }
}

/** A control message from Asterisk in either form: `fields` from JSON or `key:value` words, `words` the others. */
export type MediaControl = { event: string; fields: Record<string, unknown>; words: string[] }

const ULAW_BYTES_PER_MS = 8
const DEFAULTS = { maxQueuedMs: 3_000, startTimeoutMs: 5_000 }
/** Local audio is topped up in blocks of this much (at most half the limit), so a long reply costs a few timers, not one per frame. */
const REFILL_MS = 1_000

/** `ws(s)://host[:port][/prefix]/media/<connectionId>`: the prefix before `/ari` is kept, credentials dropped. */
export function ariMediaUrl(endpoint: string, connectionId: string): string {
  const url = new URL(endpoint)
  const secure = url.protocol === 'https:' || url.protocol === 'wss:'
  const prefix = url.pathname.replace(/\/+$/, '').replace(/\/ari$/, '')
  return `${secure ? 'wss' : 'ws'}://${url.host}${prefix}/media/${encodeURIComponent(connectionId)}`
}

export function parseMediaControl(text: string): MediaControl | null {
  const trimmed = text.trim()
  if (trimmed.startsWith('{')) {
    try {
      const fields = JSON.parse(trimmed) as Record<string, unknown>
      return typeof fields.event === 'string' ? { event: fields.event, fields, words: [] } : null
    } catch {
      return null
    }
  }
  const [event, ...rest] = trimmed.split(/\s+/)
  if (!event) return null
  const fields: Record<string, unknown> = {}
  const words: string[] = []
  for (const word of rest) {
    const colon = word.indexOf(':')
    if (colon > 0) fields[word.slice(0, colon)] = word.slice(colon + 1)
    else words.push(word)
  }
  return { event, fields, words }
}

function readMediaStart(control: MediaControl, controlFormat: MediaStart['controlFormat']): MediaStart {
  const text = (key: string) => String(control.fields[key] ?? '')
  return {
    connectionId: text('connection_id'),
    channel: text('channel'),
    channelId: text('channel_id'),
    format: text('format'),
    optimalFrameSize: Number(control.fields.optimal_frame_size ?? 160),
    ptimeMs: Number(control.fields.ptime ?? 20),
    controlFormat,
  }
}

export class MediaConnectError extends Error {}

type Outgoing = { kind: 'audio'; ulaw: Uint8Array } | { kind: 'mark'; id: string }

type Marks = Map<string, (outcome: MarkOutcome) => void>

function settleMarks(marks: Marks, outcome: MarkOutcome): void {
  for (const resolve of marks.values()) resolve(outcome)
  marks.clear()
}

/**
 * Agent audio paced to Asterisk: at most `maxQueuedMs` of audio queued at the far end (our estimate of its playout),
 * refilled as it plays; marks go out in order with the audio; MEDIA_XOFF pauses the pump until MEDIA_XON.
 */
function createPlayout(options: {
  now: () => number
  maxQueuedMs: number
  sendAudio(piece: Uint8Array): void
  sendCommand(command: 'MARK_MEDIA' | 'FLUSH_MEDIA', correlationId?: string): void
}) {
  const { now, maxQueuedMs } = options
  const refillMs = Math.min(REFILL_MS, maxQueuedMs / 2)
  const outgoing: Outgoing[] = []
  const sentMarks: Marks = new Map()
  const queuedMarks: Marks = new Map()
  let markCount = 0
  /** When Asterisk's queue will have played everything sent so far (our estimate). */
  let playoutEndMs = 0
  let xoff = false
  let stopped = false
  let pumpTimer: ReturnType<typeof setTimeout> | undefined

  function pump(): void {
    clearTimeout(pumpTimer)
    pumpTimer = undefined
    if (stopped || xoff) return
    const at = now()
    while (outgoing.length > 0) {
      const head = outgoing[0]
      if (head.kind === 'mark') {
        outgoing.shift()
        sentMarks.set(head.id, queuedMarks.get(head.id)!)
        queuedMarks.delete(head.id)
        options.sendCommand('MARK_MEDIA', head.id)
        continue
      }
      const queuedMs = Math.max(0, playoutEndMs - at)
      const room = Math.floor(((maxQueuedMs - queuedMs) * ULAW_BYTES_PER_MS) / 160) * 160
      if (room <= 0) break
      const piece = head.ulaw.length <= room ? head.ulaw : head.ulaw.subarray(0, room)
      options.sendAudio(piece)
      playoutEndMs = Math.max(playoutEndMs, at) + piece.length / ULAW_BYTES_PER_MS
      if (piece === head.ulaw) outgoing.shift()
      else head.ulaw = head.ulaw.subarray(room)
    }
    if (outgoing.length > 0) pumpTimer = setTimeout(pump, Math.max(0, playoutEndMs - at - (maxQueuedMs - refillMs)))
  }

  const queue = (item: Outgoing) => {
    outgoing.push(item)
    if (pumpTimer === undefined) pump()
  }

  return {
    get xoff() {
      return xoff
    },
    send: (ulaw: Uint8Array) => queue({ kind: 'audio', ulaw }),
    mark: (): Promise<MarkOutcome> => {
      const id = `m${++markCount}`
      return new Promise((resolve) => {
        queuedMarks.set(id, resolve)
        queue({ kind: 'mark', id })
      })
    },
    played(id: string) {
      sentMarks.get(id)?.('played')
      sentMarks.delete(id)
    },
    pause() {
      xoff = true
      clearTimeout(pumpTimer)
    },
    resume() {
      xoff = false
      pump()
    },
    flush() {
      clearTimeout(pumpTimer)
      pumpTimer = undefined
      outgoing.length = 0
      options.sendCommand('FLUSH_MEDIA')
      playoutEndMs = now()
      xoff = false // the queue at Asterisk is empty now, far below its XON level
      settleMarks(queuedMarks, 'flushed')
      settleMarks(sentMarks, 'flushed')
    },
    /** The socket is gone: nothing more is sent, pending marks resolve as closed. */
    stop() {
      stopped = true
      clearTimeout(pumpTimer)
      outgoing.length = 0
      settleMarks(queuedMarks, 'closed')
      settleMarks(sentMarks, 'closed')
    },
  }
}

/** Opens the media socket and resolves once Asterisk's MEDIA_START has arrived. */
export function connectAriMedia(options: AriMediaOptions): Promise<AriMediaTransport> {
  const now = options.now ?? (() => performance.now())
  const url = ariMediaUrl(options.endpoint, options.connectionId)
  const socket = new WebSocket(url, 'media')
  socket.binaryType = 'arraybuffer'

  const audioListeners: ((ulaw: Uint8Array, atMs: number) => void)[] = []
  const closeListeners: ((close: MediaClose) => void)[] = []
  let closingByApp = false
  let closed = false
  let start: MediaStart | undefined
  const playout = createPlayout({
    now,
    maxQueuedMs: options.maxQueuedMs ?? DEFAULTS.maxQueuedMs,
    sendAudio: (piece) => socket.send(piece),
    sendCommand(command, correlationId) {
      if (start!.controlFormat === 'json')
        socket.send(JSON.stringify(correlationId ? { command, correlation_id: correlationId } : { command }))
      else socket.send(correlationId ? `${command} ${correlationId}` : command)
    },
  })

  function onControl(control: MediaControl): void {
    switch (control.event) {
      case 'MEDIA_MARK_PROCESSED':
        return playout.played(String(control.fields.correlation_id ?? control.words[0] ?? ''))
      case 'MEDIA_XOFF':
        return playout.pause()
      case 'MEDIA_XON':
        return playout.resume()
      case 'ERROR':
        options.logger?.warn(
          { channelId: start?.channelId, error: control.fields.error_text ?? control.words.join(' ') },
          'asterisk rejected a media command',
        )
        return
    }
  }

  const transport: Omit<AriMediaTransport, 'start'> = {
    get closed() {
      return closed
    },
    get flowPaused() {
      return playout.xoff
    },
    onAudio(listener) {
      audioListeners.push(listener)
    },
    onClose(listener) {
      closeListeners.push(listener)
    },
    send(ulaw) {
      if (closed || ulaw.length === 0) return
      playout.send(ulaw)
    },
    mark() {
      if (closed) return Promise.resolve('closed')
      return playout.mark()
    },
    flush() {
      if (!closed) playout.flush()
    },
    close() {
      if (closed || closingByApp) return
      closingByApp = true
      socket.close(1000, 'call media finished')
    },
  }

  return new Promise((resolve, reject) => {
    const startTimer = setTimeout(() => {
      reject(
        new MediaConnectError(
          `no MEDIA_START from ${url} within ${options.startTimeoutMs ?? DEFAULTS.startTimeoutMs} ms`,
        ),
      )
      socket.close()
    }, options.startTimeoutMs ?? DEFAULTS.startTimeoutMs)

    socket.onmessage = (message) => {
      if (typeof message.data !== 'string') {
        if (!start) return
        const atMs = now()
        const frame = new Uint8Array(message.data as ArrayBuffer)
        for (const listener of audioListeners) listener(frame, atMs)
        return
      }
      const control = parseMediaControl(message.data)
      if (!control) return
      if (!start && control.event === 'MEDIA_START') {
        clearTimeout(startTimer)
        start = readMediaStart(control, message.data.trim().startsWith('{') ? 'json' : 'plain')
        resolve(Object.assign(transport, { start }) as AriMediaTransport)
        return
      }
      if (start) onControl(control)
    }

    socket.onclose = (event) => {
      closed = true
      playout.stop()
      if (!start) {
        clearTimeout(startTimer)
        reject(new MediaConnectError(`media socket ${url} closed before MEDIA_START (code ${event.code})`))
        return
      }
      const close: MediaClose = { code: event.code, reason: event.reason, initiatedBy: closingByApp ? 'app' : 'remote' }
      for (const listener of closeListeners) listener(close)
    }
  })
}
