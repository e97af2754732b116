/**
 * A browser's microphone and speaker as a MediaTransport: the WebSocket of a web call (api/web-calls). The page speaks
 * 16-bit linear PCM (little-endian, mono) at a sample rate it declares once; the transport converts to and from the
 * 8 kHz µ-law every MediaTransport carries, so the call runs through the same pipeline as a phone call.
 *
 * Page → server: first a text `{"type":"start","sample_rate":R}` (R one of WEB_CALL_SAMPLE_RATES), then binary frames
 * of PCM at R, each at most WEB_FRAME_MAX_MS long; `{"type":"played","mark":ID}` once the audio before mark ID has
 * played; `{"type":"hangup"}`.
 * Server → page: `{"type":"ready","sample_rate":R}`, binary agent audio at R, `{"type":"mark","mark":ID}` after the
 * audio it follows, `{"type":"clear"}` on a barge-in (drop every queued sample), and the caller's `notify` messages
 * (transcript lines).
 *
 * Anything else closes the socket with 1008 (policy): binary before `start`, a rate outside the set, a frame of odd
 * length or longer than the limit, text that is not one of the messages, or audio arriving faster than real time
 * (more than WEB_AUDIO_AHEAD_MS ahead of the clock): nothing the page sends is buffered without bound.
 */
import { pcm16ToUlaw, ulawToPcm16 } from './g711'
import type { MarkOutcome, MediaClose, MediaTransport } from './media-transport'
import { createResampler } from '../lib/resample'
import { pcmBytes } from '../lib/wav'

export const WEB_CALL_SAMPLE_RATES = [8000, 16000, 24000, 44100, 48000] as const
/** The longest audio frame the page may send. */
export const WEB_FRAME_MAX_MS = 100
/** How far ahead of real time the page's audio may run (network bursts) before the call is closed. */
export const WEB_AUDIO_AHEAD_MS = 2000
/** WebSocket close code for a page that broke the protocol. */
export const POLICY_VIOLATION = 1008

const LINE_RATE = 8000

export type WebMediaSocket = {
  send(data: string | Uint8Array): void
  close(code?: number, reason?: string): void
}

export type WebMediaTransport = MediaTransport & {
  /** Feed every message the page sends. */
  receive(message: string | Uint8Array): void
  /** The socket closed, whoever closed it. */
  socketClosed(code: number, reason: string): void
  /** A JSON message for the page (transcript lines, errors). */
  notify(message: Record<string, unknown>): void
  /** Closes with a code and reason of our choosing (policy, sign-out). */
  closeWith(code: number, reason: string): void
  /** Resolves once the page has declared its sample rate (audio flows from then on); never if the socket closes first. */
  readonly ready: Promise<number>
}

function parseMessage(text: string): Record<string, unknown> | null {
  try {
    const parsed = JSON.parse(text)
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : null
  } catch {
    return null
  }
}

/** The page's audio at `rate`, checked frame by frame, as line µ-law; or why it breaks the protocol. */
function pageAudio(rate: number, now: () => number) {
  const down = rate === LINE_RATE ? null : createResampler(rate, LINE_RATE)
  const maxBytes = ((rate * WEB_FRAME_MAX_MS) / 1000) * 2
  const startedAtMs = now()
  let receivedMs = 0
  return {
    read(bytes: Uint8Array): { ulaw: Uint8Array; atMs: number } | { violation: string } {
      if (bytes.byteLength % 2 !== 0) return { violation: 'audio frames are 16-bit PCM: an even number of bytes' }
      if (bytes.byteLength > maxBytes) return { violation: `audio frames are at most ${WEB_FRAME_MAX_MS} ms` }
      const atMs = now()
      receivedMs += (bytes.byteLength / 2 / rate) * 1000
      if (receivedMs > atMs - startedAtMs + WEB_AUDIO_AHEAD_MS)
        return { violation: 'audio arrives faster than real time' }
      const pcm = new Int16Array(bytes.slice().buffer)
      return { ulaw: pcm16ToUlaw(down ? down.process(pcm) : pcm), atMs }
    },
  }
}

/** Line µ-law as the page's PCM at `rate` (bytes, little-endian). */
function agentAudio(rate: number) {
  const up = rate === LINE_RATE ? null : createResampler(LINE_RATE, rate)
  return (ulaw: Uint8Array) => {
    const pcm = ulawToPcm16(ulaw)
    return pcmBytes(up ? up.process(pcm) : pcm)
  }
}

/** Marks sent to the page, pending until it says they played; it plays in order, so one played means the earlier did. */
function pageMarks(socket: WebMediaSocket) {
  const pending = new Map<string, (outcome: MarkOutcome) => void>()
  let count = 0
  return {
    send: () =>
      new Promise<MarkOutcome>((resolve) => {
        const id = `m${++count}`
        pending.set(id, resolve)
        socket.send(JSON.stringify({ type: 'mark', mark: id }))
      }),
    played(id: string) {
      if (!pending.has(id)) return
      for (const [earlier, resolve] of pending) {
        pending.delete(earlier)
        resolve('played')
        if (earlier === id) break
      }
    },
    settle(outcome: MarkOutcome) {
      for (const resolve of pending.values()) resolve(outcome)
      pending.clear()
    },
  }
}

export function createWebMediaTransport(
  socket: WebMediaSocket,
  options: { now?: () => number } = {},
): WebMediaTransport {
  const now = options.now ?? (() => performance.now())
  const audioListeners: ((ulaw: Uint8Array, atMs: number) => void)[] = []
  const closeListeners: ((close: MediaClose) => void)[] = []
  const marks = pageMarks(socket)
  let inbound: ReturnType<typeof pageAudio> | null = null
  let encode: ((ulaw: Uint8Array) => Uint8Array) | null = null
  let closed = false
  let closingByApp = false
  let becameReady: (rate: number) => void = () => {}
  const ready = new Promise<number>((resolve) => {
    becameReady = resolve
  })

  function finish(code: number, reason: string) {
    if (closed) return
    closed = true
    marks.settle('closed')
    const close: MediaClose = { code, reason, initiatedBy: closingByApp ? 'app' : 'remote' }
    for (const listener of closeListeners) listener(close)
  }

  function closeWith(code: number, reason: string) {
    if (closed) return
    closingByApp = true
    socket.close(code, reason)
    finish(code, reason)
  }

  const violation = (reason: string) => closeWith(POLICY_VIOLATION, reason)

  function start(sampleRate: unknown) {
    if (!(WEB_CALL_SAMPLE_RATES as readonly unknown[]).includes(sampleRate))
      return violation(`sample_rate must be one of ${WEB_CALL_SAMPLE_RATES.join(', ')}`)
    const rate = sampleRate as number
    inbound = pageAudio(rate, now)
    encode = agentAudio(rate)
    socket.send(JSON.stringify({ type: 'ready', sample_rate: rate }))
    becameReady(rate)
  }

  function audio(bytes: Uint8Array) {
    if (!inbound) return violation('send {"type":"start"} before audio')
    const frame = inbound.read(bytes)
    if ('violation' in frame) return violation(frame.violation)
    if (frame.ulaw.length === 0) return
    for (const listener of audioListeners) listener(frame.ulaw, frame.atMs)
  }

  function control(text: string) {
    const message = parseMessage(text)
    switch (message?.type) {
      case 'start':
        return inbound ? violation('start was already sent') : start(message.sample_rate)
      case 'played':
        return marks.played(String(message.mark))
      case 'hangup':
        socket.close(1000, 'hung up')
        return finish(1000, 'hung up')
      default:
        return violation('unknown message')
    }
  }

  return {
    ready,
    get closed() {
      return closed
    },
    onAudio(listener) {
      audioListeners.push(listener)
    },
    onClose(listener) {
      closeListeners.push(listener)
    },
    send(ulaw) {
      if (closed || !encode || ulaw.length === 0) return
      socket.send(encode(ulaw))
    },
    mark() {
      return closed ? Promise.resolve('closed') : marks.send()
    },
    flush() {
      if (closed) return
      marks.settle('flushed')
      socket.send(JSON.stringify({ type: 'clear' }))
    },
    close() {
      closeWith(1000, 'call ended')
    },
    closeWith,
    notify(message) {
      if (!closed) socket.send(JSON.stringify(message))
    },
    receive(message) {
      if (closed) return
      if (typeof message === 'string') control(message)
      else audio(message)
    },
    socketClosed(code, reason) {
      finish(code, reason)
    },
  }
}
