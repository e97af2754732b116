import { readWavHeader, startsLikeWav } from '../lib/wav'
import { requestModel, type ModelConnection, type ModelTimeouts } from './http'
import { ModelServerError, type TtsClient } from './types'
import { concatBytes } from '../lib/bytes'

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

const WAV_HEADER_MAX_BYTES = 64 * 1024

const COMPRESSED_AUDIO = /mpeg|mp3|ogg|opus|aac|flac|webm/i

type Chunk = { pcm: Int16Array; sampleRate: number }

/**
 * Turns the bytes of a speech answer into sample chunks: raw PCM (rate from a `rate=` content-type parameter, else
 * 24 kHz), or a WAV recognised by its header whatever the content type said. Chunks may split a sample or the header.
 * Once the header is behind, each piece is copied once, straight into its samples (a piece may be a whole sentence,
 * and 100 calls' replies arrive at the same moment).
 */
function speechDecoder(contentType: string, what: string) {
  const fail = (detail: string) => new ModelServerError(`${what} failed: ${detail}`)
  const declaredRate = Number(/rate=(\d+)/.exec(contentType)?.[1] ?? TTS_PCM_SAMPLE_RATE)
  /** Until the format is known: everything so far; after: the odd byte of a sample split between pieces. */
  let pending: Uint8Array = new Uint8Array(0)
  let sampleRate: number | null = null

  /** The format from the bytes so far; null while more are needed. Leaves only sample bytes in `pending`. */
  function readFormat(final: boolean): number | null {
    if (pending.length < 4 && !final) return null
    if (!startsLikeWav(pending)) return declaredRate
    let header: ReturnType<typeof readWavHeader>
    try {
      header = readWavHeader(pending)
    } catch (error) {
      throw fail(`the WAV answer is unusable: ${(error as Error).message}`)
    }
    if (!header) {
      if (final) throw fail('the WAV answer ends inside its header')
      // Kept whole until complete: a header that never ends would be copied again with every piece.
      if (pending.length > WAV_HEADER_MAX_BYTES)
        throw fail(`the WAV header is longer than ${WAV_HEADER_MAX_BYTES} bytes`)
      return null
    }
    if (header.format.channels !== 1) throw fail(`a ${header.format.channels}-channel WAV is not supported`)
    pending = pending.subarray(header.dataOffset)
    return header.format.sampleRate
  }

  return (bytes: Uint8Array, final: boolean): Chunk | null => {
    if (sampleRate === null) {
      pending = pending.length === 0 ? bytes : concatBytes(pending, bytes)
      sampleRate = readFormat(final)
      if (sampleRate === null) return null
      bytes = pending
      pending = new Uint8Array(0)
    }
    const count = (pending.length + bytes.length) >> 1
    if (count === 0) {
      pending = concatBytes(pending, bytes)
      return null
    }
    const pcm = new Int16Array(count)
    const pcmBytes = new Uint8Array(pcm.buffer)
    const fromPiece = count * 2 - pending.length
    pcmBytes.set(pending)
    pcmBytes.set(bytes.subarray(0, fromPiece), pending.length)
    pending = bytes.slice(fromPiece)
    return { pcm, sampleRate }
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
