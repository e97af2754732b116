import { resample } from '../lib/resample'
import { serverOnThisMachine, type ModelConnection } from './http'
import { pcmToBase64 } from './realtime'
import { openRealtimeSocket, type RealtimeServerEvent, type RealtimeSocket } from './realtime-socket'
import { createSttClient, STT_SAMPLE_RATE, type SttClientOptions, type SttSettings } from './stt'
import { ModelServerError, type SttClient } from './types'

/**
 * Speech to text over a realtime transcription socket (OpenAI Realtime API, `<base URL>/realtime?intent=transcription`):
 * `transcription_session.update` (pcm16, the model, no server turn detection), the utterance as
 * `input_audio_buffer.append` events, `input_audio_buffer.commit`, then the text of
 * `conversation.item.input_audio_transcription.completed` (its `.delta` events are joined when the completed event
 * carries no transcript). The socket is the one realtime.ts uses (frame cap, event-rate cap, connect timeout).
 *
 * When the socket cannot be opened, fails, or gives no transcript within the idle timeout after the commit, the utterance is
 * uploaded instead (stt.ts) and so is every later one of the run: the fallback is told once to the transcription's
 * `warn`. A failing upload then fails as it always does (the run's model-failure handling).
 */

/** The realtime API's pcm16 rate. */
const STREAM_RATE = 24_000
/** 100 ms of audio per append: about 6.4 KB of base64, far under the socket's frame cap. */
const APPEND_SAMPLES = STREAM_RATE / 10
/** The longest utterance sent over the socket (the turn detector ends utterances long before). */
const MAX_STREAMED_SECONDS = 120

export function createStreamingSttClient(
  connection: ModelConnection,
  settings: SttSettings,
  options: SttClientOptions = {},
): SttClient {
  const upload = createSttClient(connection, settings, options)
  const connectMs = options.timeouts?.firstByteMs ?? 15_000
  const transcriptMs = options.timeouts?.idleMs ?? 15_000
  let streamFailed = false
  return {
    ref: upload.ref,
    async transcribe(pcm16k, transcribeOptions = {}) {
      const { signal, warn } = transcribeOptions
      if (!streamFailed && pcm16k.length <= MAX_STREAMED_SECONDS * STT_SAMPLE_RATE) {
        try {
          return await streamTranscription(connection, settings, pcm16k, { connectMs, transcriptMs, signal })
        } catch (error) {
          if (signal?.aborted) throw error
          streamFailed = true
          warn?.(await fallbackWarning(connection, upload.ref.model, error as Error))
        }
      }
      return upload.transcribe(pcm16k, transcribeOptions)
    },
  }
}

async function fallbackWarning(connection: ModelConnection, model: string, error: Error): Promise<string> {
  const rule = connection.thisMachine
  const hidden = rule ? await serverOnThisMachine(connection.baseUrl, rule.resolveHost) : false
  if (hidden) rule!.log.warn({ reason: error.message }, 'streaming transcription failed')
  const reason = hidden ? 'the model server on this machine gave no usable answer' : error.message
  return `Streaming speech recognition failed (${connection.provider}/${model}): ${reason}; the rest of the call uploads each utterance`
}

type StreamLimits = { connectMs: number; transcriptMs: number; signal?: AbortSignal }

/** One utterance over its own socket: appended, committed, and its transcript awaited (at most `transcriptMs`). */
async function streamTranscription(
  connection: ModelConnection,
  settings: SttSettings,
  pcm16k: Int16Array,
  limits: StreamLimits,
): Promise<string> {
  let settle: { resolve(text: string): void; reject(error: Error): void } = { resolve() {}, reject() {} }
  const transcript = new Promise<string>((resolve, reject) => (settle = { resolve, reject }))
  const deltas: string[] = []
  const onEvent = (event: RealtimeServerEvent) => {
    if (event.type === 'conversation.item.input_audio_transcription.delta' && typeof event.delta === 'string')
      deltas.push(event.delta)
    else if (event.type === 'conversation.item.input_audio_transcription.completed')
      settle.resolve(typeof event.transcript === 'string' ? event.transcript : deltas.join(''))
    else if (event.type === 'conversation.item.input_audio_transcription.failed' || event.type === 'error')
      settle.reject(new ModelServerError(`transcription failed: ${describeError(event)}`, null, 'bad_answer'))
  }
  const socket = await openRealtimeSocket(connection, { intent: 'transcription' }, limits.connectMs, {
    onEvent,
    onFailure: (error) => settle.reject(error),
  })
  const onAbort = () => settle.reject(new ModelServerError('transcription aborted'))
  limits.signal?.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(
    () => settle.reject(new ModelServerError('transcription failed: no transcript in time', null, 'stalled')),
    limits.transcriptMs,
  )
  try {
    sendUtterance(socket, settings, pcm16k)
    return (await transcript).trim()
  } finally {
    clearTimeout(timer)
    limits.signal?.removeEventListener('abort', onAbort)
    socket.close()
  }
}

function sendUtterance(socket: RealtimeSocket, settings: SttSettings, pcm16k: Int16Array): void {
  socket.send({
    type: 'transcription_session.update',
    session: {
      input_audio_format: 'pcm16',
      input_audio_transcription: {
        model: settings.model,
        ...(settings.language ? { language: settings.language } : {}),
      },
      turn_detection: null,
    },
  })
  const pcm = resample(pcm16k, STT_SAMPLE_RATE, STREAM_RATE)
  for (let offset = 0; offset < pcm.length; offset += APPEND_SAMPLES)
    socket.send({
      type: 'input_audio_buffer.append',
      audio: pcmToBase64(pcm.subarray(offset, offset + APPEND_SAMPLES)),
    })
  socket.send({ type: 'input_audio_buffer.commit' })
}

function describeError(event: RealtimeServerEvent): string {
  const message = event.error?.message
  return typeof message === 'string' ? message.slice(0, 200) : event.type
}
