import { concatBytes } from './bytes'

/**
 * RIFF/WAVE with signed 16-bit little-endian PCM, the only kind Ringbase writes or reads: STT uploads, TTS answers
 * (whole or still arriving), the built-in voice's output and call recordings. Samples are copied as bytes, which is
 * right on the little-endian machines Bun runs on.
 */

export type WavFormat = { sampleRate: number; channels: number; bitsPerSample: number }

/** How a WAV's samples are coded: 16-bit PCM, or 8-bit G.711 (read only when asked for, by recording uploads). */
export type WavEncoding = 'pcm16' | 'ulaw' | 'alaw'

export type WavReadOptions = { g711?: boolean }

/** A WAV this code cannot read; `message` says why and is safe to show. */
export class WavFormatError extends Error {}

const HEADER_BYTES = 44
const FORMAT_PCM = 1
const FORMAT_ALAW = 6
const FORMAT_ULAW = 7
/** WAVE_FORMAT_EXTENSIBLE, which servers use for plain PCM too; the sub-format GUID says what it holds. */
const FORMAT_EXTENSIBLE = 0xfffe

/** A complete WAV of one mono track, or of several tracks of equal length interleaved (stereo: `[left, right]`). */
export function encodeWav(tracks: Int16Array | Int16Array[], sampleRate: number): Uint8Array {
  const channels = Array.isArray(tracks) ? tracks : [tracks]
  const frames = channels[0].length
  if (channels.some((track) => track.length !== frames)) throw new Error('WAV tracks must have the same length')
  const bytes = new Uint8Array(HEADER_BYTES + frames * channels.length * 2)
  bytes.set(wavHeader(frames, sampleRate, channels.length))
  interleave(channels, 0, new Int16Array(bytes.buffer, HEADER_BYTES, frames * channels.length))
  return bytes
}

/**
 * A WAV of `frames` frames of `channels` interleaved channels, streamed as its pieces are read, so no copy of the whole
 * file is ever held (a call's recording is three WAVs of up to an hour each). The pieces must hold `frames` in all.
 */
export function wavStream(
  pieces: AsyncIterable<Int16Array> | Iterable<Int16Array>,
  frames: number,
  sampleRate: number,
  channels: number,
): ReadableStream<Uint8Array> {
  const iterator =
    Symbol.asyncIterator in pieces
      ? pieces[Symbol.asyncIterator]()
      : (pieces as Iterable<Int16Array>)[Symbol.iterator]()
  let headerSent = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true
        return controller.enqueue(wavHeader(frames, sampleRate, channels))
      }
      const next = await iterator.next()
      if (next.done) controller.close()
      else controller.enqueue(pcmBytes(next.value))
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}

/**
 * The tracks' frames `[fromFrame, toFrame)` interleaved, `framesPerPiece` at a time; a track shorter than that is
 * silent past its end.
 */
export function* interleavedPieces(
  tracks: Int16Array[],
  fromFrame: number,
  toFrame: number,
  framesPerPiece: number,
): Generator<Int16Array> {
  for (let at = fromFrame; at < toFrame; at += framesPerPiece) {
    const piece = new Int16Array(Math.min(framesPerPiece, toFrame - at) * tracks.length)
    interleave(tracks, at, piece)
    yield piece
  }
}

/** Fills `out` with the tracks' frames from `fromFrame` on, interleaved; past a track's end its channel stays 0. */
function interleave(tracks: Int16Array[], fromFrame: number, out: Int16Array): void {
  const channels = tracks.length
  const frames = out.length / channels
  for (let c = 0; c < channels; c++) {
    const track = tracks[c].subarray(fromFrame, fromFrame + frames)
    if (channels === 1) out.set(track)
    else for (let i = 0, o = c; i < track.length; i++, o += channels) out[o] = track[i]
  }
}

/** One channel of interleaved frames. */
export function channelOf(interleaved: Int16Array, channel: number, channels: number): Int16Array {
  const out = new Int16Array(interleaved.length / channels)
  for (let i = 0, at = channel; i < out.length; i++, at += channels) out[i] = interleaved[at]
  return out
}

/** The 44-byte header of a WAV of `frames` 16-bit frames: what precedes the samples' bytes (`pcmBytes`). */
export function wavHeader(frames: number, sampleRate: number, channels = 1): Uint8Array {
  const dataBytes = frames * channels * 2
  const bytes = new Uint8Array(HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  writeAscii(bytes, 0, 'RIFF')
  view.setUint32(4, 36 + dataBytes, true)
  writeAscii(bytes, 8, 'WAVE')
  writeAscii(bytes, 12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, FORMAT_PCM, true)
  view.setUint16(22, channels, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * channels * 2, true)
  view.setUint16(32, channels * 2, true)
  view.setUint16(34, 16, true)
  writeAscii(bytes, 36, 'data')
  view.setUint32(40, dataBytes, true)
  return bytes
}

/** The samples' bytes as they are (little-endian), without a copy. */
export const pcmBytes = (pcm: Int16Array) => new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength)

/** Tracks of PCM one after the other, in one array. */
export function joinPcm(pieces: Int16Array[]): Int16Array {
  const joined = new Int16Array(pieces.reduce((sum, piece) => sum + piece.length, 0))
  let at = 0
  for (const piece of pieces) {
    joined.set(piece, at)
    at += piece.length
  }
  return joined
}

export const startsLikeWav = (bytes: Uint8Array) =>
  bytes.length >= 4 && bytes[0] === 0x52 && bytes[1] === 0x49 && bytes[2] === 0x46 && bytes[3] === 0x46

/**
 * Reads the header of a WAV that may still be arriving: null while `bytes` does not yet reach the `data` chunk, else
 * the format, where the samples start and the data size declared (0 or 0xFFFFFFFF from streaming writers that cannot
 * seek back). Chunks before `fmt ` and `data` are skipped. Throws WavFormatError on anything but 16-bit PCM.
 */
export function readWavHeader(bytes: Uint8Array, options: WavReadOptions = {}): WavHeader | null {
  if (bytes.length < 12) return null
  if (readAscii(bytes, 0) !== 'RIFF' || readAscii(bytes, 8) !== 'WAVE') throw new WavFormatError('not a RIFF/WAVE file')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let format: { format: WavFormat; encoding: WavEncoding } | null = null
  let offset = 12
  while (offset + 8 <= bytes.length) {
    const id = readAscii(bytes, offset)
    const size = view.getUint32(offset + 4, true)
    if (id === 'data') {
      if (!format) throw new WavFormatError('WAV data chunk comes before its fmt chunk')
      return { ...format, dataOffset: offset + 8, declaredDataBytes: size }
    }
    if (offset + 8 + size > bytes.length) return null
    if (id === 'fmt ') format = readFormat(view, offset + 8, size, options)
    offset += 8 + size + (size & 1)
  }
  return null
}

/** Where a stream's samples start and how they are laid out; `dataOffset` is 0 for headerless PCM. */
export type PcmStreamHeader = { format: WavFormat; dataOffset: number }

export type PcmStreamOptions = {
  /** Bytes that do not start like a WAV are headerless PCM of this format; without it they are a WavFormatError. */
  raw?: WavFormat
  /** A header still incomplete past this many bytes is a WavFormatError (it is kept whole until complete). */
  maxHeaderBytes?: number
}

/**
 * Reads 16-bit PCM arriving in pieces of any length (a TTS answer, a stored recording): a WAV's header may span pieces
 * and a sample may be split between two. `push` answers each piece's whole samples, or null while the header is
 * incomplete or no whole sample arrived; once the header is behind, each byte is copied once, straight into its
 * samples (a piece may be a whole sentence, and 100 calls' replies arrive at the same moment). `final` says no more
 * bytes follow. Throws WavFormatError on a WAV it cannot read.
 */
export function pcmStreamReader(options: PcmStreamOptions = {}) {
  const maxHeaderBytes = options.maxHeaderBytes ?? 64 * 1024
  /** Until the header is read: every byte so far; after: the odd byte of a sample split between pieces. */
  let pending: Uint8Array = new Uint8Array(0)
  let header: PcmStreamHeader | null = null

  function readHeader(final: boolean): PcmStreamHeader | null {
    if (pending.length < 4 && !final) return null
    if (options.raw && !startsLikeWav(pending)) return { format: options.raw, dataOffset: 0 }
    const read = readWavHeader(pending)
    if (read) return { format: read.format, dataOffset: read.dataOffset }
    if (final) throw new WavFormatError(pending.length < 12 ? 'not a RIFF/WAVE file' : 'the WAV ends inside its header')
    if (pending.length > maxHeaderBytes)
      throw new WavFormatError(`the WAV header is longer than ${maxHeaderBytes} bytes`)
    return null
  }

  function push(bytes: Uint8Array, final = false): Int16Array | null {
    if (!header) {
      pending = pending.length === 0 ? bytes : concatBytes(pending, bytes)
      header = readHeader(final)
      if (!header) return null
      bytes = pending.subarray(header.dataOffset)
      pending = new Uint8Array(0)
    }
    const count = (pending.length + bytes.length) >> 1
    if (count === 0) {
      pending = concatBytes(pending, bytes)
      return null
    }
    const samples = new Int16Array(count)
    const sampleBytes = new Uint8Array(samples.buffer)
    const fromPiece = count * 2 - pending.length
    sampleBytes.set(pending)
    sampleBytes.set(bytes.subarray(0, fromPiece), pending.length)
    pending = bytes.slice(fromPiece)
    return samples
  }

  return { push, header: () => header }
}

/** Samples of 16-bit little-endian PCM bytes (a trailing odd byte is ignored). */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const samples = new Int16Array(bytes.length >> 1)
  new Uint8Array(samples.buffer).set(bytes.subarray(0, samples.length * 2))
  return samples
}

/**
 * A whole WAV file's format and the bytes of its whole sample frames. The declared data size is honoured unless it
 * is 0, 0xFFFFFFFF or past the end of the file (a header that lies), which mean "to the end of the file".
 */
export function wavData(
  bytes: Uint8Array,
  options: WavReadOptions = {},
): { format: WavFormat; encoding: WavEncoding; data: Uint8Array } {
  const header = readWavHeader(bytes, options)
  if (!header) throw new WavFormatError(bytes.length < 12 ? 'not a RIFF/WAVE file' : 'WAV has no data chunk')
  const { format, encoding, dataOffset, declaredDataBytes } = header
  const toEnd =
    declaredDataBytes === 0 || declaredDataBytes === 0xffffffff || dataOffset + declaredDataBytes > bytes.length
  const end = toEnd ? bytes.length : dataOffset + declaredDataBytes
  const frameBytes = format.channels * (format.bitsPerSample / 8)
  const usable = end - dataOffset - ((end - dataOffset) % frameBytes)
  return { format, encoding, data: bytes.subarray(dataOffset, dataOffset + usable) }
}

/** A whole 16-bit PCM WAV file: its format and its samples (interleaved when it has several channels). */
export function decodeWav(bytes: Uint8Array): { format: WavFormat; pcm: Int16Array } {
  const { format, data } = wavData(bytes)
  return { format, pcm: pcm16FromBytes(data) }
}

export type WavHeader = { format: WavFormat; encoding: WavEncoding; dataOffset: number; declaredDataBytes: number }

function readFormat(
  view: DataView,
  at: number,
  size: number,
  options: WavReadOptions,
): { format: WavFormat; encoding: WavEncoding } {
  if (size < 16) throw new WavFormatError('WAV fmt chunk is too short')
  let formatTag = view.getUint16(at, true)
  const channels = view.getUint16(at + 2, true)
  const sampleRate = view.getUint32(at + 4, true)
  const bitsPerSample = view.getUint16(at + 14, true)
  if (formatTag === FORMAT_EXTENSIBLE) {
    if (size < 40) throw new WavFormatError('WAV extensible fmt chunk is too short')
    formatTag = view.getUint16(at + 24, true) // first two bytes of the sub-format GUID
  }
  if (channels < 1 || sampleRate < 1) throw new WavFormatError('WAV declares no channels or no sample rate')
  const format = { sampleRate, channels, bitsPerSample }
  if (options.g711 && (formatTag === FORMAT_ULAW || formatTag === FORMAT_ALAW)) {
    if (bitsPerSample !== 8)
      throw new WavFormatError(`G.711 WAV with ${bitsPerSample}-bit samples is not supported (8-bit only)`)
    return { format, encoding: formatTag === FORMAT_ULAW ? 'ulaw' : 'alaw' }
  }
  const accepted = options.g711 ? '16-bit PCM, G.711 µ-law or A-law only' : '16-bit PCM only'
  if (formatTag !== FORMAT_PCM) throw new WavFormatError(`WAV format ${formatTag} is not supported (${accepted})`)
  if (bitsPerSample !== 16)
    throw new WavFormatError(`WAV with ${bitsPerSample}-bit samples is not supported (${accepted})`)
  return { format, encoding: 'pcm16' }
}

function writeAscii(bytes: Uint8Array, at: number, text: string): void {
  for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i)
}

function readAscii(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3])
}
