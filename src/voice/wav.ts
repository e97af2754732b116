/** RIFF/WAVE with signed 16-bit little-endian PCM: what STT servers take, TTS servers may send, and recordings are. */

export type DecodedWav = {
  sampleRate: number
  channelCount: number
  /** Interleaved samples (`channelCount` per frame). */
  samples: Int16Array
}

/** A WAV this code cannot read; `message` says why and is safe to show. */
export class WavFormatError extends Error {}

const HEADER_BYTES = 44
const FORMAT_PCM = 1
const FORMAT_EXTENSIBLE = 0xfffe

/** Encodes one mono track, or several tracks of equal length interleaved (stereo: `[left, right]`). */
export function encodeWav(tracks: Int16Array | Int16Array[], sampleRate: number): Uint8Array {
  const channels = Array.isArray(tracks) ? tracks : [tracks]
  const frames = channels[0].length
  if (channels.some((track) => track.length !== frames)) throw new Error('WAV tracks must have the same length')
  const dataBytes = frames * channels.length * 2
  const bytes = new Uint8Array(HEADER_BYTES + dataBytes)
  const view = new DataView(bytes.buffer)
  writeAscii(bytes, 0, 'RIFF')
  view.setUint32(4, 36 + dataBytes, true)
  writeAscii(bytes, 8, 'WAVE')
  writeAscii(bytes, 12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, FORMAT_PCM, true)
  view.setUint16(22, channels.length, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * channels.length * 2, true)
  view.setUint16(32, channels.length * 2, true)
  view.setUint16(34, 16, true)
  writeAscii(bytes, 36, 'data')
  view.setUint32(40, dataBytes, true)
  if (channels.length === 1) {
    new Uint8Array(bytes.buffer, HEADER_BYTES).set(new Uint8Array(channels[0].buffer, channels[0].byteOffset, dataBytes))
    return bytes
  }
  const interleaved = new Int16Array(bytes.buffer, HEADER_BYTES, frames * channels.length)
  for (let c = 0; c < channels.length; c++) {
    const track = channels[c]
    for (let i = 0, o = c; i < frames; i++, o += channels.length) interleaved[o] = track[i]
  }
  return bytes
}

/**
 * Decodes 16-bit PCM WAV: plain `fmt ` (format 1) or WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, any chunk
 * order, extra chunks skipped. A data size of 0 or 0xFFFFFFFF (streaming writers that cannot seek back) means
 * "to the end of the file". Anything else (float, 8/24/32-bit, compressed) is rejected with a WavFormatError.
 */
export function decodeWav(bytes: Uint8Array): DecodedWav {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (bytes.length < 12 || readAscii(bytes, 0) !== 'RIFF' || readAscii(bytes, 8) !== 'WAVE') {
    throw new WavFormatError('not a RIFF/WAVE file')
  }
  let format: { sampleRate: number; channelCount: number } | null = null
  let offset = 12
  while (offset + 8 <= bytes.length) {
    const id = readAscii(bytes, offset)
    const size = view.getUint32(offset + 4, true)
    const body = offset + 8
    if (id === 'fmt ') format = readFormat(view, body, size)
    else if (id === 'data') {
      if (!format) throw new WavFormatError('WAV data chunk comes before its fmt chunk')
      const toEnd = size === 0 || size === 0xffffffff || body + size > bytes.length
      const end = toEnd ? bytes.length : body + size
      const frameBytes = format.channelCount * 2
      const usable = end - body - ((end - body) % frameBytes)
      const samples = new Int16Array(usable / 2)
      new Uint8Array(samples.buffer).set(bytes.subarray(body, body + usable))
      return { ...format, samples }
    }
    offset = body + size + (size & 1)
  }
  throw new WavFormatError(format ? 'WAV has no data chunk' : 'WAV has no fmt chunk')
}

function readFormat(view: DataView, at: number, size: number): { sampleRate: number; channelCount: number } {
  if (size < 16) throw new WavFormatError('WAV fmt chunk is too short')
  let formatTag = view.getUint16(at, true)
  const channelCount = view.getUint16(at + 2, true)
  const sampleRate = view.getUint32(at + 4, true)
  const bitsPerSample = view.getUint16(at + 14, true)
  if (formatTag === FORMAT_EXTENSIBLE) {
    if (size < 40) throw new WavFormatError('WAV extensible fmt chunk is too short')
    formatTag = view.getUint16(at + 24, true) // first two bytes of the sub-format GUID
  }
  if (formatTag !== FORMAT_PCM) throw new WavFormatError(`WAV format ${formatTag} is not supported (16-bit PCM only)`)
  if (bitsPerSample !== 16) throw new WavFormatError(`WAV with ${bitsPerSample}-bit samples is not supported (16-bit only)`)
  if (channelCount < 1 || sampleRate < 1) throw new WavFormatError('WAV declares no channels or no sample rate')
  return { sampleRate, channelCount }
}

function writeAscii(bytes: Uint8Array, at: number, text: string): void {
  for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i)
}

function readAscii(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3])
}
