/**
 * Carrier media streams as MediaTransports: the WebSocket a carrier opens to us for a call, in each carrier's framing.
 * The transport speaks 8 kHz µ-law both ways like every MediaTransport; the framing converts.
 *
 * - `twilio` (Twilio, Cloudonix): JSON text frames, base64 µ-law 8 kHz in `media.payload`; `mark` comes back when the
 *   audio before it was played (and when `clear` dropped it); outbound frames carry the `streamSid` of `start`.
 * - `exotel`: the same events with snake_case ids, but the payload is base64 16-bit linear PCM (little-endian) 8 kHz.
 * - `telnyx`: JSON, base64 RTP payloads (PCMU) in `media.payload`, with `mark` / `clear` like Twilio, no stream id needed.
 * - `plivo` (Plivo, Vobiz): inbound like Twilio (`streamId`); outbound `playAudio`, `checkpoint` (answered by
 *   `playedStream`) and `clearAudio`.
 * - `vonage`: binary frames of 16-bit linear PCM at 16 kHz, 640 bytes (20 ms) each, both ways; JSON text for control
 *   (`notify` answered by `websocket:notify`, `clear`).
 *
 * The carriers queue and pace what we send, so audio goes out as soon as it is given.
 */
import { pcm16ToUlaw, ulawToPcm16 } from './g711'
import type { MarkOutcome, MediaClose, MediaTransport } from './media-transport'
import { createResampler } from '../lib/resample'
import { pcmBytes } from '../lib/wav'

export type MediaFraming = 'twilio' | 'exotel' | 'telnyx' | 'plivo' | 'vonage'

/** What the transport needs of the socket the carrier connected with. */
export type MediaSocket = {
  send(data: string | Uint8Array): void
  close(code?: number, reason?: string): void
}

export type CarrierMediaTransport = MediaTransport & {
  /** Keys the caller presses, as the carrier reports them on the stream. */
  onDtmf(listener: (digit: string) => void): void
  /** Feed every message the carrier sends. */
  receive(message: string | Uint8Array): void
  /** The socket closed, whoever closed it. */
  socketClosed(code: number, reason: string): void
  /** The carrier's id of the stream (`start`), null before it (or for carriers without one). */
  readonly streamId: string | null
}

type Inbound =
  | { type: 'start'; streamId: string | null }
  | { type: 'audio'; ulaw: Uint8Array }
  | { type: 'mark'; name: string }
  | { type: 'dtmf'; digit: string }
  | { type: 'stop' }

type Framing = {
  /** Outbound messages need the stream id from `start` (held until it comes). */
  needsStreamId: boolean
  /** Agent audio is sent in whole frames of this many carrier bytes; the last partial one is padded at a mark. */
  frameBytes?: number
  read(message: string | Uint8Array): Inbound[]
  /** Carrier-format audio bytes for µ-law agent audio. */
  encode(ulaw: Uint8Array): Uint8Array
  audio(bytes: Uint8Array, streamId: string | null): string | Uint8Array
  mark(name: string, streamId: string | null): string
  clear(streamId: string | null): string
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'))
const identity = (ulaw: Uint8Array) => ulaw
/** Little-endian 16-bit samples from bytes (every platform Bun runs on is little-endian; `pcmBytes` goes the other way). */
const pcmSamples = (bytes: Uint8Array) => {
  const aligned = new Uint8Array(bytes.byteLength - (bytes.byteLength % 2))
  aligned.set(bytes.subarray(0, aligned.byteLength))
  return new Int16Array(aligned.buffer)
}

type JsonMessage = Record<string, any>

function parseJson(message: string | Uint8Array): JsonMessage | null {
  if (typeof message !== 'string') return null
  try {
    const parsed = JSON.parse(message)
    return parsed && typeof parsed === 'object' ? parsed : null
  } catch {
    return null
  }
}

/** The inbound side shared by the JSON framings; `streamIdOf` reads the id from `start`, `decode` the payload bytes. */
function readJson(
  message: string | Uint8Array,
  streamIdOf: (start: JsonMessage) => unknown,
  decode: (bytes: Uint8Array) => Uint8Array,
  markEvent = 'mark',
): Inbound[] {
  const event = parseJson(message)
  if (!event) return []
  switch (event.event) {
    case 'start': {
      const id = streamIdOf(event)
      return [{ type: 'start', streamId: typeof id === 'string' ? id : null }]
    }
    case 'media': {
      const payload = event.media?.payload
      const track = event.media?.track
      if (typeof payload !== 'string' || (track !== undefined && !String(track).startsWith('inbound'))) return []
      return [{ type: 'audio', ulaw: decode(fromBase64(payload)) }]
    }
    case markEvent: {
      const name = event.mark?.name ?? event.name
      return typeof name === 'string' ? [{ type: 'mark', name }] : []
    }
    case 'dtmf': {
      const digit = event.dtmf?.digit
      return typeof digit === 'string' ? [{ type: 'dtmf', digit }] : []
    }
    case 'stop':
      return [{ type: 'stop' }]
    default:
      return []
  }
}

const twilioFraming: Framing = {
  needsStreamId: true,
  read: (message) => readJson(message, (event) => event.start?.streamSid ?? event.streamSid, identity),
  encode: identity,
  audio: (bytes, streamSid) => JSON.stringify({ event: 'media', streamSid, media: { payload: base64(bytes) } }),
  mark: (name, streamSid) => JSON.stringify({ event: 'mark', streamSid, mark: { name } }),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid }),
}

/** 20 ms of 16-bit PCM at 8 kHz: Exotel takes audio in multiples of it. */
const EXOTEL_FRAME_BYTES = 320

const exotelFraming: Framing = {
  needsStreamId: true,
  frameBytes: EXOTEL_FRAME_BYTES,
  read: (message) =>
    readJson(
      message,
      (event) => event.start?.stream_sid ?? event.stream_sid,
      (bytes) => pcm16ToUlaw(pcmSamples(bytes)),
    ),
  encode: (ulaw) => pcmBytes(ulawToPcm16(ulaw)),
  audio: (bytes, streamSid) =>
    JSON.stringify({ event: 'media', stream_sid: streamSid, media: { payload: base64(bytes) } }),
  mark: (name, streamSid) => JSON.stringify({ event: 'mark', stream_sid: streamSid, mark: { name } }),
  clear: (streamSid) => JSON.stringify({ event: 'clear', stream_sid: streamSid }),
}

const telnyxFraming: Framing = {
  needsStreamId: false,
  read: (message) => readJson(message, (event) => event.stream_id, identity),
  encode: identity,
  audio: (bytes) => JSON.stringify({ event: 'media', media: { payload: base64(bytes) } }),
  mark: (name) => JSON.stringify({ event: 'mark', mark: { name } }),
  clear: () => JSON.stringify({ event: 'clear' }),
}

const plivoFraming: Framing = {
  needsStreamId: true,
  read: (message) => readJson(message, (event) => event.start?.streamId ?? event.streamId, identity, 'playedStream'),
  encode: identity,
  audio: (bytes) =>
    JSON.stringify({
      event: 'playAudio',
      media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: base64(bytes) },
    }),
  mark: (name, streamId) => JSON.stringify({ event: 'checkpoint', streamId, name }),
  clear: (streamId) => JSON.stringify({ event: 'clearAudio', streamId }),
}

/** 20 ms of 16-bit PCM at 16 kHz: Vonage's frame, both ways. */
const VONAGE_FRAME_BYTES = 640

function vonageFraming(): Framing {
  // One resampler per direction and stream: they keep filter history across frames.
  const down = createResampler(16_000, 8_000)
  const up = createResampler(8_000, 16_000)
  return {
    needsStreamId: false,
    frameBytes: VONAGE_FRAME_BYTES,
    read(message) {
      if (typeof message !== 'string') return [{ type: 'audio', ulaw: pcm16ToUlaw(down.process(pcmSamples(message))) }]
      const event = parseJson(message)
      if (event?.event === 'websocket:connected') return [{ type: 'start', streamId: null }]
      if (event?.event === 'websocket:notify' && typeof event.payload?.name === 'string')
        return [{ type: 'mark', name: event.payload.name }]
      if (event?.event === 'websocket:dtmf' && typeof event.digit === 'string')
        return [{ type: 'dtmf', digit: event.digit }]
      return []
    },
    encode: (ulaw) => pcmBytes(up.process(ulawToPcm16(ulaw))),
    audio: (bytes) => bytes,
    mark: (name) => JSON.stringify({ action: 'notify', payload: { name } }),
    clear: () => JSON.stringify({ action: 'clear' }),
  }
}

function framingOf(kind: MediaFraming): Framing {
  switch (kind) {
    case 'twilio':
      return twilioFraming
    case 'exotel':
      return exotelFraming
    case 'telnyx':
      return telnyxFraming
    case 'plivo':
      return plivoFraming
    case 'vonage':
      return vonageFraming()
  }
}

export type CarrierMediaOptions = {
  /** Milliseconds; arrival times of caller audio. */
  now?: () => number
}

/**
 * Agent audio cut into the carrier's frames when it has a fixed frame size (what does not fill one waits for more, or is
 * padded with silence before a mark); sent as it comes otherwise.
 */
function frameWriter(kind: MediaFraming, framing: Framing, socket: MediaSocket) {
  let partialFrame = new Uint8Array(0)
  return {
    write(bytes: Uint8Array, padLast: boolean, streamId: string | null) {
      const frameBytes = framing.frameBytes
      if (!frameBytes) {
        if (bytes.byteLength > 0) socket.send(framing.audio(bytes, streamId))
        return
      }
      const joined = new Uint8Array(partialFrame.byteLength + bytes.byteLength)
      joined.set(partialFrame)
      joined.set(bytes, partialFrame.byteLength)
      let whole = joined.byteLength - (joined.byteLength % frameBytes)
      if (padLast && whole < joined.byteLength) whole += frameBytes
      const padded = whole > joined.byteLength ? new Uint8Array(whole) : joined
      if (padded !== joined) padded.set(joined)
      // Vonage wants one frame per message; Exotel takes any multiple of its frame.
      const perMessage = kind === 'vonage' ? frameBytes : whole
      for (let offset = 0; offset < whole; offset += perMessage)
        socket.send(framing.audio(padded.subarray(offset, offset + perMessage), streamId))
      partialFrame = joined.byteLength > whole ? joined.slice(whole) : new Uint8Array(0)
    },
    reset() {
      partialFrame = new Uint8Array(0)
    },
  }
}

export function createCarrierMediaTransport(
  kind: MediaFraming,
  socket: MediaSocket,
  options: CarrierMediaOptions = {},
): CarrierMediaTransport {
  const framing = framingOf(kind)
  const now = options.now ?? (() => performance.now())
  const audioListeners: ((ulaw: Uint8Array, atMs: number) => void)[] = []
  const closeListeners: ((close: MediaClose) => void)[] = []
  const dtmfListeners: ((digit: string) => void)[] = []
  /** Pending marks in the order sent; a carrier plays in order, so one mark played means every earlier one was too. */
  const marks: { name: string; resolve: (outcome: MarkOutcome) => void }[] = []
  /** Messages held until `start` gives the stream id. */
  const held: (() => void)[] = []
  let streamId: string | null = null
  let started = !framing.needsStreamId
  const frames = frameWriter(kind, framing, socket)
  let markCount = 0
  let closed = false
  let closingByApp = false

  const deliver = (send: () => void) => {
    if (closed) return
    if (started) send()
    else held.push(send)
  }

  const sendFrames = (bytes: Uint8Array, padLast: boolean) => frames.write(bytes, padLast, streamId)

  function settleMarks(outcome: MarkOutcome, upTo = marks.length) {
    for (const mark of marks.splice(0, upTo)) mark.resolve(outcome)
  }

  function finish(code: number, reason: string) {
    if (closed) return
    closed = true
    held.length = 0
    settleMarks('closed')
    const close: MediaClose = { code, reason, initiatedBy: closingByApp ? 'app' : 'remote' }
    for (const listener of closeListeners) listener(close)
  }

  function handle(event: Inbound) {
    switch (event.type) {
      case 'start':
        streamId = event.streamId
        started = true
        for (const send of held.splice(0)) send()
        break
      case 'audio': {
        const at = now()
        for (const listener of audioListeners) listener(event.ulaw, at)
        break
      }
      case 'mark': {
        const index = marks.findIndex((mark) => mark.name === event.name)
        if (index >= 0) settleMarks('played', index + 1)
        break
      }
      case 'dtmf':
        for (const listener of dtmfListeners) listener(event.digit)
        break
      case 'stop':
        socket.close(1000, 'stream stopped')
        finish(1000, 'stream stopped')
        break
    }
  }

  return {
    get closed() {
      return closed
    },
    get streamId() {
      return streamId
    },
    onAudio(listener) {
      audioListeners.push(listener)
    },
    onClose(listener) {
      closeListeners.push(listener)
    },
    onDtmf(listener) {
      dtmfListeners.push(listener)
    },
    send(ulaw) {
      deliver(() => sendFrames(framing.encode(ulaw), false))
    },
    mark() {
      if (closed) return Promise.resolve('closed')
      const name = `ringbase-${++markCount}`
      return new Promise<MarkOutcome>((resolve) => {
        marks.push({ name, resolve })
        deliver(() => {
          sendFrames(new Uint8Array(0), true)
          socket.send(framing.mark(name, streamId))
        })
      })
    },
    flush() {
      if (closed) return
      frames.reset()
      held.length = 0
      settleMarks('flushed')
      if (started) socket.send(framing.clear(streamId))
    },
    close() {
      if (closed) return
      closingByApp = true
      socket.close(1000, 'closed by the application')
      finish(1000, 'closed by the application')
    },
    receive(message) {
      if (closed) return
      for (const event of framing.read(message)) handle(event)
    },
    socketClosed(code, reason) {
      finish(code, reason)
    },
  }
}
