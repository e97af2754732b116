/**
 * An uploaded recording turned into call audio once, at upload: 8 kHz G.711 µ-law, what ARI and every carrier stream
 * carries, and 16 kHz 16-bit PCM, what the browser web call carries, so playing it on a call costs no decoding.
 * Accepted: WAV (16-bit PCM, G.711 µ-law or A-law, any rate, any channel count, mixed down) and MP3 (minimp3, mp3.ts).
 *
 * Hostile input is bounded: the caller caps the file's size; decoding stops as soon as the audio passes
 * MAX_RECORDING_SECONDS, and the work is cut into slices with a turn of the event loop between them, so a large
 * upload never holds up the calls' audio.
 */
import { joinPcm, startsLikeWav, wavData, WavFormatError, pcm16FromBytes } from '../lib/wav'
import { decodeMp3, mixDown, Mp3Error, startsLikeMp3 } from './mp3'
import { alawToPcm16, pcm16ToUlaw, ulawToPcm16 } from '../voice/g711'
import { createResampler } from '../lib/resample'
import type { SourceFormat } from '../db/schema'
import { nextTurn } from '../lib/next-turn'

export const LINE_RATE = 8000
/** The browser web call's rate. */
export const WIDE_RATE = 16_000
export const MAX_RECORDING_SECONDS = 300

/** Audio this code cannot use; the message is safe to show. */
export class AudioImportError extends Error {}

/** The same clip twice: `ulaw` at 8 kHz, `pcm16k` at 16 kHz, trimmed alike. */
export type LineAudio = { ulaw: Uint8Array; pcm16k: Int16Array; durationMs: number; source: SourceFormat }

/** Samples handled between two turns of the event loop (~30 ms of work at most). */
const SLICE_SAMPLES = 48_000
/** A 10 ms frame is speech when a sample passes this (pipecat's threshold); silence around the clip is trimmed. */
const SILENCE_THRESHOLD = 20

const tooLong = () => new AudioImportError(`The recording is longer than ${MAX_RECORDING_SECONDS} seconds`)

export async function decodeToLineAudio(bytes: Uint8Array): Promise<LineAudio> {
  if (bytes.length === 0) throw new AudioImportError('The file is empty')
  const decoded = startsLikeWav(bytes) ? decodeWavFile(bytes) : await decodeMp3File(bytes)
  const line = await resampled(decoded.mono, decoded.source.sample_rate, LINE_RATE)
  const wide = await resampled(decoded.mono, decoded.source.sample_rate, WIDE_RATE)
  const [first, end] = soundBounds(line)
  if (end <= first) throw new AudioImportError('The file holds no audio')
  const widePerLine = WIDE_RATE / LINE_RATE
  return {
    ulaw: pcm16ToUlaw(line.subarray(first, end)),
    pcm16k: wide.slice(first * widePerLine, Math.min(wide.length, end * widePerLine)),
    durationMs: Math.round(((end - first) * 1000) / LINE_RATE),
    source: decoded.source,
  }
}

async function decodeMp3File(bytes: Uint8Array): Promise<Decoded> {
  if (!startsLikeMp3(bytes)) throw new AudioImportError('Not a WAV or MP3 file')
  try {
    const { mono, sampleRate, channels } = await decodeMp3(bytes, MAX_RECORDING_SECONDS)
    return { mono, source: { container: 'mp3', encoding: 'mp3', sample_rate: sampleRate, channels } }
  } catch (error) {
    if (error instanceof Mp3Error) throw new AudioImportError(error.message)
    // A trap inside the decoder's sandbox: the file is broken in a way its checks missed.
    if (error instanceof WebAssembly.RuntimeError) throw new AudioImportError('Unreadable MP3')
    throw error
  }
}

type Decoded = { mono: Int16Array; source: SourceFormat }

function decodeWavFile(bytes: Uint8Array): Decoded {
  let wav: ReturnType<typeof wavData>
  try {
    wav = wavData(bytes, { g711: true })
  } catch (error) {
    if (error instanceof WavFormatError) throw new AudioImportError(`Unreadable WAV: ${error.message}`)
    throw error
  }
  const { format, encoding, data } = wav
  if (format.sampleRate < 4000 || format.sampleRate > 192_000)
    throw new AudioImportError(`A WAV at ${format.sampleRate} Hz is not supported`)
  const frames = data.length / (format.channels * (format.bitsPerSample / 8))
  if (frames > MAX_RECORDING_SECONDS * format.sampleRate) throw tooLong()
  const interleaved =
    encoding === 'ulaw' ? ulawToPcm16(data) : encoding === 'alaw' ? alawToPcm16(data) : pcm16FromBytes(data)
  const mono = mixDown(interleaved, format.channels)
  return { mono, source: { container: 'wav', encoding, sample_rate: format.sampleRate, channels: format.channels } }
}

/** Resampled in slices, with a turn of the event loop between them. */
async function resampled(mono: Int16Array, fromRate: number, toRate: number): Promise<Int16Array> {
  if (fromRate === toRate) return mono
  const resampler = createResampler(fromRate, toRate)
  const pieces: Int16Array[] = []
  for (let offset = 0; offset < mono.length; offset += SLICE_SAMPLES) {
    pieces.push(resampler.process(mono.subarray(offset, offset + SLICE_SAMPLES)))
    await nextTurn()
  }
  return joinPcm(pieces)
}

/**
 * From the first to the end of the last 10 ms frame holding sound, in samples of `pcm` (at the line rate); an
 * all-silent clip is kept whole.
 */
function soundBounds(pcm: Int16Array): [number, number] {
  const frame = LINE_RATE / 100
  const loud = (start: number) => {
    for (let i = start; i < Math.min(start + frame, pcm.length); i++)
      if (Math.abs(pcm[i]) > SILENCE_THRESHOLD) return true
    return false
  }
  let first = 0
  while (first < pcm.length && !loud(first)) first += frame
  if (first >= pcm.length) return [0, pcm.length]
  let last = Math.floor((pcm.length - 1) / frame) * frame
  while (last > first && !loud(last)) last -= frame
  return [first, Math.min(pcm.length, last + frame)]
}
