import { createResampler } from '../lib/resample'
import { serverOnThisMachine, type ModelConnection } from './http'
import { pcmToBase64 } from './realtime'
import { openRealtimeSocket, type RealtimeServerEvent, type RealtimeSocket } from './realtime-socket'
import { createSttClient, STT_SAMPLE_RATE, type SttClientOptions, type SttSettings } from './stt'
import type { StreamDialect } from './stt-stream-dialects'
import { ModelServerError, type SttClient, type SttStream } from './types'

/**
 * Speech to text over a realtime transcription socket, one socket for a whole call (`openStream`), in the server's
 * dialect (stt-stream-dialects.ts: the OpenAI Realtime API's transcription mode, or vLLM's): the session set up when
 * it opens, the caller's audio appended while the caller speaks, a segment committed when it ends (the utterance, or a
 * pause of it), then that segment's text. The socket is the one realtime.ts uses (pinned address, frame cap, event-rate
 * cap, connect timeout).
 *
 * A socket that drops (or gives no transcript within the idle timeout after a commit) is opened again once; the
 * segments it held fail (their audio is uploaded instead, by the caller). When it cannot be opened, drops again, or the
 * server reports an error, the stream gives up and the rest of the call uploads (`transcribe`, stt.ts): the fallback is
 * told once to `warn`. A failing upload then fails as it always does (the run's model-failure handling).
 */

/** 100 ms of audio per append: at 24 kHz about 6.4 KB of base64, far under the socket's frame cap. */
const APPENDS_PER_SECOND = 10

type StreamLimits = { connectMs: number; transcriptMs: number }

export function createStreamingSttClient(
  connection: ModelConnection,
  settings: SttSettings,
  dialect: StreamDialect,
  options: SttClientOptions = {},
): SttClient {
  const upload = createSttClient(connection, settings, options)
  const limits = {
    connectMs: options.timeouts?.firstByteMs ?? 15_000,
    transcriptMs: options.timeouts?.idleMs ?? 15_000,
  }
  return {
    ref: upload.ref,
    transcribe: upload.transcribe,
    openStream: ({ warn }) => openTranscriptionStream(connection, { settings, dialect, limits }, warn),
  }
}

async function fallbackWarning(connection: ModelConnection, model: string, error: Error): Promise<string> {
  const rule = connection.thisMachine
  const hidden = rule ? await serverOnThisMachine(connection.baseUrl, rule.resolveHost) : false
  if (hidden) rule!.log.warn({ reason: error.message }, 'streaming transcription failed')
  const reason = hidden ? 'the model server on this machine gave no usable answer' : error.message
  return `Streaming speech recognition failed (${connection.provider}/${model}): ${reason}; the rest of the call uploads each utterance`
}

/** A committed segment waiting for its text. */
type PendingSegment = {
  itemId: string | null
  deltas: string[]
  timer: ReturnType<typeof setTimeout>
  resolve(text: string): void
  reject(error: Error): void
}

/**
 * The committed segments waiting for their text, in order; the server's events settle them (matched by item id when
 * the dialect has them, else the oldest), and `onSettled` hears each.
 */
function pendingSegments(
  names: StreamDialect['events'],
  timing: { transcriptMs: number; onStalled(): void; onSettled(): void },
) {
  const pending: PendingSegment[] = []
  const settle = (entry: PendingSegment) => {
    clearTimeout(entry.timer)
    pending.splice(pending.indexOf(entry), 1)
    timing.onSettled()
  }
  return {
    add(): Promise<string> {
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(timing.onStalled, timing.transcriptMs)
        pending.push({ itemId: null, deltas: [], resolve, reject, timer })
      })
    },
    failAll(error: Error): void {
      for (const entry of pending.splice(0)) {
        clearTimeout(entry.timer)
        entry.reject(error)
      }
    },
    /** A transcription event; false when it is not one. */
    hear(event: RealtimeServerEvent): boolean {
      const itemId = typeof event.item_id === 'string' ? event.item_id : null
      const entry = pending.find((candidate) => itemId !== null && candidate.itemId === itemId) ?? pending[0]
      if (event.type === names.committed) {
        const unnamed = pending.find((candidate) => candidate.itemId === null)
        if (unnamed) unnamed.itemId = itemId
      } else if (event.type === names.delta) {
        if (entry && typeof event.delta === 'string') entry.deltas.push(event.delta)
      } else if (event.type === names.done) {
        if (!entry) return true
        settle(entry)
        const text = event[names.doneText]
        entry.resolve((typeof text === 'string' ? text : entry.deltas.join('')).trim())
      } else if (event.type === names.failed) {
        if (!entry) return true
        settle(entry)
        entry.reject(new ModelServerError(`transcription failed: ${describeError(event)}`, null, 'bad_answer'))
      } else return false
      return true
    },
  }
}

/** Audio gathered into appends of `appendSamples` (the rest goes with `flush`). */
function appendBatches(appendSamples: number, send: (event: Record<string, unknown>) => void) {
  let unsent: Int16Array[] = []
  let samples = 0
  const flush = () => {
    if (samples === 0) return
    const pcm = new Int16Array(samples)
    let offset = 0
    for (const chunk of unsent) {
      pcm.set(chunk, offset)
      offset += chunk.length
    }
    unsent = []
    samples = 0
    send({ type: 'input_audio_buffer.append', audio: pcmToBase64(pcm) })
  }
  return {
    add(pcm: Int16Array): void {
      unsent.push(pcm)
      samples += pcm.length
      if (samples >= appendSamples) flush()
    },
    flush,
    drop(): void {
      unsent = []
      samples = 0
    },
  }
}

/** The socket's outbox: events wait for it to open, and with a one-at-a-time dialect for the last segment's text. */
function outbox(oneAtATime: boolean) {
  let socket: RealtimeSocket | null = null
  let waiting: Record<string, unknown>[] = []
  let gated: { event: Record<string, unknown>; endsSegment: boolean }[] = []
  let awaitingText = false
  const transmit = (event: Record<string, unknown>, endsSegment: boolean) => {
    if (socket) socket.send(event)
    else waiting.push(event)
    if (oneAtATime && endsSegment) awaitingText = true
  }
  return {
    send(event: Record<string, unknown>, endsSegment = false): void {
      if (awaitingText) gated.push({ event, endsSegment })
      else transmit(event, endsSegment)
    },
    opened(given: RealtimeSocket, first: Record<string, unknown>): void {
      socket = given
      given.send(first)
      for (const event of waiting.splice(0)) given.send(event)
    },
    textCame(): void {
      awaitingText = false
      while (gated.length > 0 && !awaitingText) {
        const { event, endsSegment } = gated.shift()!
        transmit(event, endsSegment)
      }
    },
    /** The connection is gone: nothing it was to carry is sent. */
    clear(): void {
      socket?.close()
      socket = null
      waiting = []
      gated = []
      awaitingText = false
    },
  }
}

function openTranscriptionStream(
  connection: ModelConnection,
  { settings, dialect, limits }: { settings: SttSettings; dialect: StreamDialect; limits: StreamLimits },
  warn: (message: string) => void,
): SttStream {
  const resampler = dialect.rate === STT_SAMPLE_RATE ? null : createResampler(STT_SAMPLE_RATE, dialect.rate)
  let state: 'connecting' | 'open' | 'failed' | 'closed' = 'connecting'
  let reopened = false
  /** The segment being appended (16 kHz samples); `lost` once some of it went to a socket that dropped. */
  const segment = { samples: 0, lost: false, started: false }
  const ended = () => state === 'failed' || state === 'closed'
  const out = outbox(dialect.oneAtATime)
  const pending = pendingSegments(dialect.events, {
    transcriptMs: limits.transcriptMs,
    onStalled: () => dropped(new ModelServerError('transcription failed: no transcript in time', null, 'stalled')),
    onSettled: () => out.textCame(),
  })
  const batches = appendBatches(dialect.rate / APPENDS_PER_SECOND, (event) => {
    if (!segment.started && dialect.segmentStart) out.send(dialect.segmentStart)
    segment.started = true
    out.send(event)
  })

  function connect(): void {
    state = 'connecting'
    const handlers = {
      onEvent(event: RealtimeServerEvent) {
        if (!pending.hear(event) && event.type === 'error')
          giveUp(new ModelServerError(`transcription failed: ${describeError(event)}`, null, 'bad_answer'))
      },
      onFailure: dropped,
    }
    openRealtimeSocket(connection, dialect.query, limits.connectMs, handlers).then(
      (opened) => {
        if (state !== 'connecting') return opened.close()
        state = 'open'
        out.opened(opened, dialect.session(settings))
      },
      (error: Error) => giveUp(error),
    )
  }

  /** The connection is over: what it held is lost. */
  function disconnect(error: Error): void {
    out.clear()
    batches.drop()
    pending.failAll(error)
  }

  /** The socket dropped (or stalled): it is opened again once, else the stream gives up. */
  function dropped(error: Error): void {
    if (ended()) return
    disconnect(error)
    segment.lost = segment.samples > 0
    segment.started = false
    if (reopened) return giveUp(error)
    reopened = true
    connect()
  }

  function giveUp(error: Error): void {
    if (ended()) return
    state = 'failed'
    disconnect(error)
    void fallbackWarning(connection, settings.model, error).then(warn)
  }

  connect()
  return {
    append(pcm16k) {
      if (ended()) return
      segment.samples += pcm16k.length
      // A segment that lost audio in a dropped socket is not sent on: its commit fails, the caller uploads it.
      if (!segment.lost) batches.add(resampler ? resampler.process(pcm16k) : pcm16k)
    },
    commit() {
      const { samples, lost } = segment
      if (ended()) return Promise.reject(new ModelServerError('streaming transcription is off'))
      if (lost || samples < dialect.minSamples) {
        Object.assign(segment, { samples: 0, lost: false })
        batches.drop()
        return Promise.reject(new ModelServerError('the segment cannot be transcribed on the stream'))
      }
      batches.flush()
      out.send(dialect.segmentEnd, true)
      Object.assign(segment, { samples: 0, lost: false, started: false })
      return pending.add()
    },
    get usable() {
      return !ended()
    },
    close() {
      if (state === 'closed') return
      state = 'closed'
      disconnect(new ModelServerError('the call is over'))
    },
  }
}

/** The error's message: OpenAI's `error.message`, vLLM's `error` string. */
function describeError(event: RealtimeServerEvent): string {
  const message = typeof event.error === 'string' ? event.error : event.error?.message
  return typeof message === 'string' ? message.slice(0, 200) : event.type
}
