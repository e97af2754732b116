/**
 * A fake of Asterisk's WebSocket media driver (chan_websocket, externalMedia in server mode) behaving like the
 * Asterisk 22.10.1 traces in shared/reference/ari/media-traces.json:
 * - the app connects to `/media/<connection id>` with subprotocol `media`; MEDIA_START is the first text frame
 *   (JSON form, or the plain `MEDIA_START key:value …` form);
 * - caller frames are 160 bytes of µ-law every 20 ms, and ONLY while the test makes the caller speak;
 * - audio from the app (any length) is queued and played in real time, 160 bytes per 20 ms, each frame recorded
 *   with its time; MARK_MEDIA → MEDIA_MARK_PROCESSED once everything queued before it has played;
 *   FLUSH_MEDIA drops the queue at once (queued marks are dropped with it);
 * - MEDIA_XOFF when the queue reaches 900 frames, MEDIA_XON when it drains to 800; audio arriving in between is
 *   dropped (counted in `droppedBytes`), as Asterisk may do;
 * - GET_STATUS → STATUS; a non-JSON text frame in JSON mode → `{"event":"ERROR",…}`; unknown commands: no answer.
 * Times are `performance.now()` milliseconds.
 */
import type { Server, ServerWebSocket } from 'bun'
import { pcm16ToUlaw } from '../../src/voice/g711.ts'

const FRAME_BYTES = 160
const FRAME_MS = 20
const XOFF_FRAMES = 900
const XON_FRAMES = 800
const ULAW_SILENCE = 0xff

export type PlayedFrame = { atMs: number; ulaw: Uint8Array }

export type FakeMediaChannel = {
  readonly connectionId: string
  readonly channelId: string
  /** Resolves when the app has connected (after MEDIA_START was sent). */
  readonly connected: Promise<void>
  /** Resolves when the socket ended, with the close code the server saw. */
  readonly closed: Promise<{ code: number; reason: string }>
  /** The caller speaks: 8 kHz PCM16 or µ-law, sent as 160-byte frames every 20 ms until it is all sent. */
  speak(audio: Int16Array | Uint8Array): void
  /** Whether caller audio is still waiting to be sent (the caller is still speaking). */
  callerSpeaking(): boolean
  /** Every agent frame played, oldest first. */
  readonly played: PlayedFrame[]
  /** Every text frame received from the app, with its arrival time. */
  readonly received: { atMs: number; text: string }[]
  /** Every text frame sent to the app, with its time. */
  readonly sent: { atMs: number; text: string }[]
  /** Times at which FLUSH_MEDIA arrived. */
  readonly flushes: number[]
  /** Agent audio received (dropped or not). */
  readonly receivedAudioBytes: number
  /** Agent audio dropped because it arrived while XOFF was in force. */
  readonly droppedBytes: number
  /** The most agent audio ever queued at once, in frames. */
  readonly peakQueuedFrames: number
  /** Agent audio waiting to be played, in frames. */
  queuedFrames(): number
  /** Sends a raw text frame to the app (e.g. an unsolicited MEDIA_XOFF). */
  sendText(text: string): void
  /** Cuts the TCP connection with no close frame (a crashed PBX or a dead link). */
  drop(): void
  /** Closes normally, as Asterisk does when the channel hangs up (code 1000). */
  hangup(): void
}

export type FakeMediaChannelOptions = {
  controlFormat?: 'json' | 'plain'
  channelId?: string
  /** Lower Asterisk's queue limits (900/800) so a test need not queue 18 s of audio. */
  xoffFrames?: number
  xonFrames?: number
  /** The channel name MEDIA_START reports (default `WebSocket/INCOMING/0x<n>`). */
  channelName?: string
}

export type FakeAriMedia = {
  /** `http://127.0.0.1:<port>`: what an ARI endpoint setting would hold. */
  readonly url: string
  addChannel(options?: FakeMediaChannelOptions): FakeMediaChannel
  stop(): Promise<void>
}

export type MediaSocketData = { connectionId: string }

/** The media endpoint without a server of its own, for a fake that serves it beside other paths (the fake ARI). */
export type FakeMediaHub = {
  addChannel(options?: FakeMediaChannelOptions): FakeMediaChannel
  /** Upgrades `/media/<connection id>` requests; null when the path is not a media path. */
  upgrade(request: Request, server: Server<MediaSocketData>): Response | undefined | null
  websocket: {
    open(socket: ServerWebSocket<MediaSocketData>): void
    message(socket: ServerWebSocket<MediaSocketData>, message: string | Buffer): void
    close(socket: ServerWebSocket<MediaSocketData>, code: number, reason: string): void
  }
  /** Stops every channel's media clock. */
  stop(): void
}

type QueueItem = { kind: 'audio'; ulaw: Uint8Array } | { kind: 'mark'; id: string }

type ChannelState = {
  channel: FakeMediaChannel
  controlFormat: 'json' | 'plain'
  channelName: string
  socket: ServerWebSocket<MediaSocketData> | null
  callerAudio: Uint8Array[]
  queue: QueueItem[]
  queuedBytes: number
  xoff: boolean
  xoffFrames: number
  xonFrames: number
  receivedAudioBytes: number
  droppedBytes: number
  peakQueuedFrames: number
  onConnected: () => void
  onClosed: (close: { code: number; reason: string }) => void
  clock: ReturnType<typeof setInterval> | undefined
  framesDone: number
  clockStartMs: number
}

export function startFakeAriMedia(): FakeAriMedia {
  const hub = createFakeMediaHub()
  const server: Server<MediaSocketData> = Bun.serve<MediaSocketData>({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request, server) => hub.upgrade(request, server) ?? new Response('Not found', { status: 404 }),
    websocket: hub.websocket,
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    addChannel: hub.addChannel,
    async stop() {
      hub.stop()
      await server.stop(true)
    },
  }
}

export function createFakeMediaHub(): FakeMediaHub {
  const channels = new Map<string, ChannelState>()
  let channelCount = 0

  function sendEvent(state: ChannelState, event: string, fields: Record<string, string | number | boolean> = {}): void {
    const text =
      state.controlFormat === 'json'
        ? JSON.stringify({ event, channel_id: state.channel.channelId, ...fields })
        : [
            event,
            ...Object.entries(fields).map(([key, value]) =>
              key === 'correlation_id' ? String(value) : `${key}:${value}`,
            ),
          ].join(' ')
    state.channel.sent.push({ atMs: performance.now(), text })
    state.socket?.send(text)
  }

  function queuedFrames(state: ChannelState): number {
    return Math.ceil(state.queuedBytes / FRAME_BYTES)
  }

  /** Marks at the head of the queue are processed: all audio before them has played. */
  function processHeadMarks(state: ChannelState): void {
    while (state.queue[0]?.kind === 'mark') {
      const mark = state.queue.shift() as { kind: 'mark'; id: string }
      sendEvent(state, 'MEDIA_MARK_PROCESSED', { correlation_id: mark.id })
    }
  }

  function playOneFrame(state: ChannelState, atMs: number): void {
    if (state.queuedBytes === 0) return
    const frame = new Uint8Array(FRAME_BYTES).fill(ULAW_SILENCE)
    let filled = 0
    while (filled < FRAME_BYTES && state.queue[0]?.kind === 'audio') {
      const head = state.queue[0]
      const take = Math.min(FRAME_BYTES - filled, head.ulaw.length)
      frame.set(head.ulaw.subarray(0, take), filled)
      filled += take
      state.queuedBytes -= take
      if (take === head.ulaw.length) state.queue.shift()
      else head.ulaw = head.ulaw.subarray(take)
    }
    state.channel.played.push({ atMs, ulaw: frame })
    processHeadMarks(state)
    if (state.xoff && queuedFrames(state) <= state.xonFrames) {
      state.xoff = false
      sendEvent(state, 'MEDIA_XON')
    }
  }

  function sendCallerFrame(state: ChannelState): void {
    const head = state.callerAudio[0]
    if (!head) return
    const frame = new Uint8Array(FRAME_BYTES).fill(ULAW_SILENCE)
    frame.set(head.subarray(0, FRAME_BYTES))
    if (head.length <= FRAME_BYTES) state.callerAudio.shift()
    else state.callerAudio[0] = head.subarray(FRAME_BYTES)
    state.socket?.sendBinary(frame)
  }

  /** The media clock: every 20 ms of real time, one agent frame plays and one caller frame (if any) goes out. */
  function onClock(state: ChannelState): void {
    const due = Math.floor((performance.now() - state.clockStartMs) / FRAME_MS)
    while (state.framesDone < due) {
      state.framesDone++
      const atMs = state.clockStartMs + state.framesDone * FRAME_MS
      playOneFrame(state, atMs)
      sendCallerFrame(state)
    }
  }

  function onText(state: ChannelState, text: string): void {
    state.channel.received.push({ atMs: performance.now(), text })
    let command: string
    let correlationId: string | undefined
    if (state.controlFormat === 'json') {
      let parsed: { command?: unknown; correlation_id?: unknown }
      try {
        parsed = JSON.parse(text)
      } catch {
        sendEvent(state, 'ERROR', { error_text: 'Unable to parse JSON command' })
        return
      }
      command = String(parsed.command ?? '')
      correlationId = parsed.correlation_id === undefined ? undefined : String(parsed.correlation_id)
    } else {
      ;[command, correlationId] = text.trim().split(/\s+/)
    }
    switch (command) {
      case 'MARK_MEDIA': {
        const id = correlationId ?? ''
        if (state.queuedBytes === 0) sendEvent(state, 'MEDIA_MARK_PROCESSED', { correlation_id: id })
        else state.queue.push({ kind: 'mark', id })
        return
      }
      case 'FLUSH_MEDIA':
        state.channel.flushes.push(performance.now())
        state.queue = []
        state.queuedBytes = 0
        if (state.xoff) {
          // not seen in the traces (assumed): an emptied queue is below the XON level at once
          state.xoff = false
          sendEvent(state, 'MEDIA_XON')
        }
        return
      case 'GET_STATUS':
        sendEvent(state, 'STATUS', {
          queue_length: queuedFrames(state),
          xon_level: state.xonFrames,
          xoff_level: state.xoffFrames,
          queue_full: state.xoff,
          bulk_media: false,
          media_paused: false,
        })
        return
    }
  }

  function onBinary(state: ChannelState, ulaw: Uint8Array): void {
    state.receivedAudioBytes += ulaw.length
    if (state.xoff) {
      state.droppedBytes += ulaw.length
      return
    }
    state.queue.push({ kind: 'audio', ulaw: ulaw.slice() })
    state.queuedBytes += ulaw.length
    state.peakQueuedFrames = Math.max(state.peakQueuedFrames, queuedFrames(state))
    if (queuedFrames(state) >= state.xoffFrames) {
      state.xoff = true
      sendEvent(state, 'MEDIA_XOFF')
    }
  }

  return {
    upgrade(request, server) {
      const match = /^\/media\/([^/]+)$/.exec(new URL(request.url).pathname)
      if (!match) return null
      const state = channels.get(decodeURIComponent(match[1]))
      if (!state || state.socket) return new Response('Not found', { status: 404 })
      const upgraded = server.upgrade(request, {
        data: { connectionId: state.channel.connectionId },
        headers: { 'Sec-WebSocket-Protocol': 'media' },
      })
      return upgraded ? undefined : new Response('Upgrade required', { status: 426 })
    },
    websocket: {
      open(socket) {
        const state = channels.get(socket.data.connectionId)!
        state.socket = socket
        const start = {
          connection_id: state.channel.connectionId,
          channel: state.channelName,
          format: 'ulaw',
          optimal_frame_size: FRAME_BYTES,
          ptime: FRAME_MS,
        }
        if (state.controlFormat === 'json') {
          const text = JSON.stringify({
            event: 'MEDIA_START',
            ...start,
            channel_id: state.channel.channelId,
            channel_variables: {
              MEDIA_WEBSOCKET_CONNECTION_ID: state.channel.connectionId,
              MEDIA_WEBSOCKET_OPTIMAL_FRAME_SIZE: String(FRAME_BYTES),
            },
          })
          state.channel.sent.push({ atMs: performance.now(), text })
          socket.send(text)
        } else {
          sendEvent(state, 'MEDIA_START', { ...start, channel_id: state.channel.channelId })
        }
        state.clockStartMs = performance.now()
        state.clock = setInterval(() => onClock(state), FRAME_MS / 2)
        state.onConnected()
      },
      message(socket, message) {
        const state = channels.get(socket.data.connectionId)!
        if (typeof message === 'string') onText(state, message)
        else onBinary(state, new Uint8Array(message))
      },
      close(socket, code, reason) {
        const state = channels.get(socket.data.connectionId)!
        clearInterval(state.clock)
        state.socket = null
        state.onClosed({ code, reason })
      },
    },
    addChannel(options = {}) {
      channelCount++
      const controlFormat = options.controlFormat ?? 'json'
      const connectionId = crypto.randomUUID()
      let onConnected = () => {}
      let onClosed: ChannelState['onClosed'] = () => {}
      const connected = new Promise<void>((resolve) => (onConnected = resolve))
      const closed = new Promise<{ code: number; reason: string }>((resolve) => (onClosed = resolve))
      const state: ChannelState = {
        controlFormat,
        channelName: options.channelName ?? `WebSocket/INCOMING/0x${channelCount.toString(16)}`,
        socket: null,
        callerAudio: [],
        queue: [],
        queuedBytes: 0,
        xoff: false,
        xoffFrames: options.xoffFrames ?? XOFF_FRAMES,
        xonFrames: options.xonFrames ?? XON_FRAMES,
        receivedAudioBytes: 0,
        droppedBytes: 0,
        peakQueuedFrames: 0,
        onConnected,
        onClosed,
        clock: undefined,
        framesDone: 0,
        clockStartMs: 0,
        channel: {
          connectionId,
          channelId: options.channelId ?? `media-${channelCount}`,
          connected,
          closed,
          speak(audio) {
            state.callerAudio.push(audio instanceof Int16Array ? pcm16ToUlaw(audio) : audio)
          },
          callerSpeaking: () => state.callerAudio.length > 0,
          played: [],
          received: [],
          sent: [],
          flushes: [],
          get receivedAudioBytes() {
            return state.receivedAudioBytes
          },
          get droppedBytes() {
            return state.droppedBytes
          },
          get peakQueuedFrames() {
            return state.peakQueuedFrames
          },
          queuedFrames: () => queuedFrames(state),
          sendText(text) {
            state.channel.sent.push({ atMs: performance.now(), text })
            state.socket?.send(text)
          },
          drop() {
            state.socket?.terminate()
          },
          hangup() {
            state.socket?.close(1000, '')
          },
        },
      }
      channels.set(connectionId, state)
      return state.channel
    },
    stop() {
      for (const state of channels.values()) clearInterval(state.clock)
    },
  }
}
