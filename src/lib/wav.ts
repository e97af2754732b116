/** RIFF/WAVE with 16-bit little-endian PCM, the only kind Ringbase writes or reads. */

export type WavFormat = { sampleRate: number; channels: number; bitsPerSample: number }

const HEADER_BYTES = 44

/** A complete WAV file holding `pcm` (interleaved when `channels` > 1). */
export function encodeWav(pcm: Int16Array, sampleRate: number, channels = 1): Uint8Array {
  const dataBytes = pcm.length * 2
  const bytes = new Uint8Array(HEADER_BYTES + dataBytes)
  const view = new DataView(bytes.buffer)
  const ascii = (offset: number, text: string) => {
    for (let index = 0; index < text.length; index++) bytes[offset + index] = text.charCodeAt(index)
  }
  ascii(0, 'RIFF')
  view.setUint32(4, 36 + dataBytes, true)
  ascii(8, 'WAVE')
  ascii(12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, channels, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * channels * 2, true)
  view.setUint16(32, channels * 2, true)
  view.setUint16(34, 16, true)
  ascii(36, 'data')
  view.setUint32(40, dataBytes, true)
  for (let index = 0; index < pcm.length; index++) view.setInt16(HEADER_BYTES + index * 2, pcm[index], true)
  return bytes
}

export const startsLikeWav = (bytes: Uint8Array) =>
  bytes.length >= 4 && bytes[0] === 0x52 && bytes[1] === 0x49 && bytes[2] === 0x46 && bytes[3] === 0x46

/**
 * Reads the header of a WAV that may still be arriving: null while `bytes` does not yet reach the `data` chunk,
 * else the format and where the samples start. The data chunk's declared size is ignored (streaming servers write
 * 0 or 0xFFFFFFFF there): the samples run to the end of the stream. Throws on anything but PCM WAV.
 */
export function readWavHeader(bytes: Uint8Array): { format: WavFormat; dataOffset: number } | null {
  if (bytes.length < 12) return null
  const tag = (offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4))
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a WAV file')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let format: WavFormat | null = null
  let offset = 12
  while (offset + 8 <= bytes.length) {
    const id = tag(offset)
    const size = view.getUint32(offset + 4, true)
    if (id === 'data') {
      if (!format) throw new Error('WAV data before its fmt chunk')
      return { format, dataOffset: offset + 8 }
    }
    if (offset + 8 + size > bytes.length) return null
    if (id === 'fmt ') {
      const encoding = view.getUint16(offset + 8, true)
      // 0xFFFE is WAVE_FORMAT_EXTENSIBLE, which servers use for plain PCM too.
      if (encoding !== 1 && encoding !== 0xfffe) throw new Error(`WAV encoding ${encoding} is not PCM`)
      format = {
        channels: view.getUint16(offset + 10, true),
        sampleRate: view.getUint32(offset + 12, true),
        bitsPerSample: view.getUint16(offset + 22, true),
      }
      if (format.bitsPerSample !== 16) throw new Error(`WAV with ${format.bitsPerSample}-bit samples is not supported`)
    }
    offset += 8 + size + (size % 2)
  }
  return null
}

/** Samples of 16-bit little-endian PCM bytes (an even count). */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const samples = new Int16Array(bytes.length >> 1)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let index = 0; index < samples.length; index++) samples[index] = view.getInt16(index * 2, true)
  return samples
}

/** A whole WAV file back into its format and samples. */
export function decodeWav(bytes: Uint8Array): { format: WavFormat; pcm: Int16Array } {
  const header = readWavHeader(bytes)
  if (!header) throw new Error('WAV file ends before its data')
  const data = bytes.subarray(header.dataOffset)
  return { format: header.format, pcm: pcm16FromBytes(data.subarray(0, data.length - (data.length % 2))) }
}
