/**
 * An uploaded recording turned into line audio once, at upload: 8 kHz G.711 µ-law, what ARI and every carrier
 * stream carries, so playing it on a call costs no decoding. Accepted: WAV (16-bit PCM, G.711 µ-law or A-law, any
 * rate, any channel count, mixed down). MP3 is refused with a clear message: the maintained WebAssembly decoders
 * (mpg123, LAME) are LGPL, which a single executable cannot carry; convert MP3 to WAV before uploading.
 *
 * Hostile input is bounded: the caller caps the file's size; decoding stops as soon as the audio passes
 * MAX_RECORDING_SECONDS, and the work is cut into slices with a turn of the event loop between them, so a large
 * upload never holds up the calls' audio.
 */
import { startsLikeWav, wavData, WavFormatError, pcm16FromBytes } from '../lib/wav'
import { alawToPcm16, pcm16ToUlaw, ulawToPcm16 } from '../voice/g711'
import { createResampler } from '../voice/resample'
import type { SourceFormat } from '../db/schema'

export const LINE_RATE = 8000
export const MAX_RECORDING_SECONDS = 300

/** Audio this code cannot use; the message is safe to show. */
export class AudioImportError extends Error {}

export type LineAudio = { ulaw: Uint8Array; durationMs: number; source: SourceFormat }

/** Samples handled between two turns of the event loop (~30 ms of work at most). */
const SLICE_SAMPLES = 48_000
/** A 10 ms frame is speech when a sample passes this (pipecat's threshold); silence around the clip is trimmed. */
const SILENCE_THRESHOLD = 20

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

const tooLong = () => new AudioImportError(`The recording is longer than ${MAX_RECORDING_SECONDS} seconds`)

export async function decodeToLineAudio(bytes: Uint8Array): Promise<LineAudio> {
  if (bytes.length === 0) throw new AudioImportError('The file is empty')
  if (startsLikeMpeg(bytes)) throw new AudioImportError(MP3_REFUSED)
  if (!startsLikeWav(bytes)) throw new AudioImportError('Not a WAV file')
  const decoded = decodeWavFile(bytes)
  const ulaw = await toLine(decoded.mono, decoded.source.sample_rate)
  if (ulaw.length === 0) throw new AudioImportError('The file holds no audio')
  return { ulaw, durationMs: Math.round((ulaw.length * 1000) / LINE_RATE), source: decoded.source }
}

export const MP3_REFUSED =
  'MP3 is not accepted: convert it to WAV first (e.g. `ffmpeg -i in.mp3 -ac 1 -ar 8000 out.wav`)'

/** An ID3v2 tag, or an MPEG audio frame's sync word, at the start. */
const startsLikeMpeg = (bytes: Uint8Array) =>
  (bytes.length >= 3 && bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) ||
  (bytes.length >= 2 && bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)

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

function mixDown(interleaved: Int16Array, channels: number): Int16Array {
  if (channels === 1) return interleaved
  const mono = new Int16Array(Math.floor(interleaved.length / channels))
  for (let frame = 0, at = 0; frame < mono.length; frame++) {
    let sum = 0
    for (let channel = 0; channel < channels; channel++) sum += interleaved[at++]
    mono[frame] = Math.round(sum / channels)
  }
  return mono
}

/** Resampled to the line rate in slices, trimmed of leading and trailing silence, encoded to µ-law. */
async function toLine(mono: Int16Array, sampleRate: number): Promise<Uint8Array> {
  let line = mono
  if (sampleRate !== LINE_RATE) {
    const resampler = createResampler(sampleRate, LINE_RATE)
    const pieces: Int16Array[] = []
    for (let offset = 0; offset < mono.length; offset += SLICE_SAMPLES) {
      pieces.push(resampler.process(mono.subarray(offset, offset + SLICE_SAMPLES)))
      await nextTurn()
    }
    line = new Int16Array(pieces.reduce((sum, piece) => sum + piece.length, 0))
    let at = 0
    for (const piece of pieces) {
      line.set(piece, at)
      at += piece.length
    }
  }
  return pcm16ToUlaw(trimSilence(line))
}

/** From the first to the last 10 ms frame holding sound; an all-silent clip is kept whole. */
function trimSilence(pcm: Int16Array): Int16Array {
  const frame = LINE_RATE / 100
  const loud = (start: number) => {
    for (let i = start; i < Math.min(start + frame, pcm.length); i++)
      if (Math.abs(pcm[i]) > SILENCE_THRESHOLD) return true
    return false
  }
  let first = 0
  while (first < pcm.length && !loud(first)) first += frame
  if (first >= pcm.length) return pcm
  let last = Math.floor((pcm.length - 1) / frame) * frame
  while (last > first && !loud(last)) last -= frame
  return pcm.subarray(first, Math.min(pcm.length, last + frame))
}
