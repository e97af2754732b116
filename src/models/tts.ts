import { pcmStreamReader, WavFormatError } from '../lib/wav'
import { requestModel, type ModelConnection, type ModelTimeouts } from './http'
import { ModelServerError, type TtsClient } from './types'

export type TtsSettings = { model: string; voice: string; speed?: number }

export type TtsClientOptions = {
  /** Defaults: 15 s to the response headers, 15 s without a piece of audio, 60 s for the whole audio. */
  timeouts?: Partial<ModelTimeouts>
}

const DEFAULT_TIMEOUTS: ModelTimeouts = { firstByteMs: 15_000, idleMs: 15_000, totalMs: 60_000 }

/** OpenAI's `pcm` format: 24 kHz, signed 16-bit little-endian, mono. */
export const TTS_PCM_SAMPLE_RATE = 24_000

/** The most audio one answer may hold: about 11 minutes of 24 kHz PCM, far more than one reply's sentences. */
export const SPEECH_ANSWER_MAX_BYTES = 32 * 1024 * 1024

const COMPRESSED_AUDIO = /mpeg|mp3|ogg|opus|aac|flac|webm/i

type Chunk = { pcm: Int16Array; sampleRate: number }

/**
 * Turns the bytes of a speech answer into sample chunks: raw PCM (rate from a `rate=` content-type parameter, else
 * 24 kHz), or a WAV recognised by its header whatever the content type said.
 */
function speechDecoder(contentType: string, what: string) {
  const rate = Number(/rate=(\d+)/.exec(contentType)?.[1] ?? TTS_PCM_SAMPLE_RATE)
  const reader = pcmStreamReader({ raw: { sampleRate: rate, channels: 1, bitsPerSample: 16 } })
  return (bytes: Uint8Array, final: boolean): Chunk | null => {
    let pcm: Int16Array | null
    try {
      pcm = reader.push(bytes, final)
    } catch (error) {
      if (!(error instanceof WavFormatError)) throw error
      throw new ModelServerError(`${what} failed: the WAV answer is unusable: ${error.message}`)
    }
    const format = reader.header()?.format
    if (format && format.channels !== 1)
      throw new ModelServerError(`${what} failed: a ${format.channels}-channel WAV is not supported`)
    return pcm && format ? { pcm, sampleRate: format.sampleRate } : null
  }
}

/** Text to speech behind any OpenAI-compatible `/audio/speech` (speaches, kokoro-fastapi, hosted ones). */
export function createTtsClient(
  connection: ModelConnection,
  settings: TtsSettings,
  options: TtsClientOptions = {},
): TtsClient {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  async function* synthesize(text: string, { signal }: { signal?: AbortSignal } = {}): AsyncGenerator<Chunk> {
    const what = 'speech'
    const body: Record<string, unknown> = {
      model: settings.model,
      voice: settings.voice,
      input: text,
      response_format: 'pcm',
    }
    if (settings.speed !== undefined) body.speed = settings.speed
    const exchange = await requestModel(connection, {
      what,
      path: '/audio/speech',
      body,
      timeouts,
      signal,
      maxBytes: SPEECH_ANSWER_MAX_BYTES,
    })
    try {
      const contentType = exchange.response.headers.get('content-type') ?? ''
      if (COMPRESSED_AUDIO.test(contentType)) {
        throw new ModelServerError(`${what} failed: the server answered ${contentType}, not pcm or wav`)
      }
      const decode = speechDecoder(contentType, what)
      for await (const bytes of exchange.chunks()) {
        const chunk = decode(bytes, false)
        if (chunk) yield chunk
      }
      const last = decode(new Uint8Array(0), true)
      if (last) yield last
    } catch (error) {
      throw exchange.failure(error)
    } finally {
      exchange.end()
    }
  }
  return { ref: { service: connection.provider, model: settings.model }, synthesize }
}
