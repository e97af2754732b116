import { createResampler } from '../lib/resample'
import { serverOnThisMachine, type ModelConnection } from './http'
import { pcmToBase64 } from './realtime'
import { openRealtimeSocket, type RealtimeServerEvent, type RealtimeSocket } from './realtime-socket'
import { createSttClient, STT_SAMPLE_RATE, type SttClientOptions, type SttSettings } from './stt'
import { ModelServerError, type SttClient, type SttStream } from './types'

/**
 * Speech to text over a realtime transcription socket (OpenAI Realtime API, `<base URL>/realtime?intent=transcription`),
 * one socket for a whole call (`openStream`): `transcription_session.update` (pcm16, the model, no server turn
 * detection) when it opens, the caller's audio as `input_audio_buffer.append` events while the caller speaks,
 * `input_audio_buffer.commit` when a segment ends (the utterance, or a pause of it), then the text of
 * `conversation.item.input_audio_transcription.completed` for that commit's item (its `.delta` events joined when the
 * completed event carries no transcript). The socket is the one realtime.ts uses (frame cap, event-rate cap, connect
 * timeout).
 *
 * A socket that drops (or gives no transcript within the idle timeout after a commit) is opened again once; the
 * segments it held fail (their audio is uploaded instead, by the caller). When it cannot be opened, drops again, or the
 * server reports an error, the stream gives up and the rest of the call uploads (`transcribe`, stt.ts): the fallback is
 * told once to `warn`. A failing upload then fails as it always does (the run's model-failure handling).
 */

/** The realtime API's pcm16 rate. */
const STREAM_RATE = 24_000
/** 100 ms of audio per append: about 6.4 KB of base64, far under the socket's frame cap. */
const APPEND_SAMPLES = STREAM_RATE / 10
/** The server refuses to commit less than 100 ms of audio. */
const MIN_SEGMENT_SAMPLES = STT_SAMPLE_RATE / 10

type StreamLimits = { connectMs: number; transcriptMs: number }

export function createStreamingSttClient(
  connection: ModelConnection,
  settings: SttSettings,
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
    openStream: ({ warn }) => openTranscriptionStream(connection, settings, limits, warn),
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

/** The committed segments waiting for their text, in order; the server's events settle them. */
function pendingSegments(onStalled: () => void, transcriptMs: number) {
  const pending: PendingSegment[] = []
  const settle = (entry: PendingSegment) => {
    clearTimeout(entry.timer)
    pending.splice(pending.indexOf(entry), 1)
  }
  return {
    add(): Promise<string> {
      return new Promise<string>((resolve, reject) => {
        pending.push({ itemId: null, deltas: [], resolve, reject, timer: setTimeout(onStalled, transcriptMs) })
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
      if (event.type === 'input_audio_buffer.committed') {
        const unnamed = pending.find((candidate) => candidate.itemId === null)
        if (unnamed) unnamed.itemId = itemId
      } else if (event.type === 'conversation.item.input_audio_transcription.delta') {
        if (entry && typeof event.delta === 'string') entry.deltas.push(event.delta)
      } else if (event.type === 'conversation.item.input_audio_transcription.completed') {
        if (!entry) return true
        settle(entry)
        entry.resolve((typeof event.transcript === 'string' ? event.transcript : entry.deltas.join('')).trim())
      } else if (event.type === 'conversation.item.input_audio_transcription.failed') {
        if (!entry) return true
        settle(entry)
        entry.reject(new ModelServerError(`transcription failed: ${describeError(event)}`, null, 'bad_answer'))
      } else return false
      return true
    },
  }
}

/** 24 kHz audio gathered into appends of `APPEND_SAMPLES` (the rest goes with `flush`). */
function appendBatches(send: (event: Record<string, unknown>) => void) {
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
      if (samples >= APPEND_SAMPLES) flush()
    },
    flush,
    drop(): void {
      unsent = []
      samples = 0
    },
  }
}

function openTranscriptionStream(
  connection: ModelConnection,
  settings: SttSettings,
  limits: StreamLimits,
  warn: (message: string) => void,
): SttStream {
  const resampler = createResampler(STT_SAMPLE_RATE, STREAM_RATE)
  let state: 'connecting' | 'open' | 'failed' | 'closed' = 'connecting'
  let socket: RealtimeSocket | null = null
  let reopened = false
  /** Events for a socket still opening, sent once it is open. */
  let waiting: Record<string, unknown>[] = []
  /** Audio of the segment being appended (16 kHz samples); `lost` once some of it went to a socket that dropped. */
  const segment = { samples: 0, lost: false }
  const ended = () => state === 'failed' || state === 'closed'
  const pending = pendingSegments(
    () => dropped(new ModelServerError('transcription failed: no transcript in time', null, 'stalled')),
    limits.transcriptMs,
  )
  const batches = appendBatches((event) => send(event))

  function send(event: Record<string, unknown>): void {
    if (state === 'open') socket!.send(event)
    else if (state === 'connecting') waiting.push(event)
  }

  function connect(): void {
    state = 'connecting'
    const handlers = {
      onEvent(event: RealtimeServerEvent) {
        if (!pending.hear(event) && event.type === 'error')
          giveUp(new ModelServerError(`transcription failed: ${describeError(event)}`, null, 'bad_answer'))
      },
      onFailure: dropped,
    }
    openRealtimeSocket(connection, { intent: 'transcription' }, limits.connectMs, handlers).then(
      (opened) => {
        if (state !== 'connecting') return opened.close()
        socket = opened
        state = 'open'
        opened.send(sessionUpdate(settings))
        for (const event of waiting.splice(0)) opened.send(event)
      },
      (error: Error) => giveUp(error),
    )
  }

  /** The connection is over: what it held is lost. */
  function disconnect(error: Error): void {
    socket?.close()
    socket = null
    waiting = []
    batches.drop()
    pending.failAll(error)
  }

  /** The socket dropped (or stalled): it is opened again once, else the stream gives up. */
  function dropped(error: Error): void {
    if (ended()) return
    disconnect(error)
    segment.lost = segment.samples > 0
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
      if (!segment.lost) batches.add(resampler.process(pcm16k))
    },
    commit() {
      const { samples, lost } = segment
      Object.assign(segment, { samples: 0, lost: false })
      if (ended()) return Promise.reject(new ModelServerError('streaming transcription is off'))
      if (lost || samples < MIN_SEGMENT_SAMPLES) {
        batches.drop()
        return Promise.reject(new ModelServerError('the segment cannot be transcribed on the stream'))
      }
      batches.flush()
      send({ type: 'input_audio_buffer.commit' })
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

function sessionUpdate(settings: SttSettings): Record<string, unknown> {
  return {
    type: 'transcription_session.update',
    session: {
      input_audio_format: 'pcm16',
      input_audio_transcription: {
        model: settings.model,
        ...(settings.language ? { language: settings.language } : {}),
      },
      turn_detection: null,
    },
  }
}

function describeError(event: RealtimeServerEvent): string {
  const message = event.error?.message
  return typeof message === 'string' ? message.slice(0, 200) : event.type
}
