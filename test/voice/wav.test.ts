import { describe, expect, test } from 'bun:test'
import { decodeWav, encodeWav, WavFormatError } from '../../src/voice/wav.ts'
import { sine } from '../support/audio.ts'

/** A hand-built WAV: `fmt` body bytes and data bytes, with extra chunks where asked. */
function buildWav(fmt: number[], data: Uint8Array, options: { dataSize?: number; before?: Uint8Array } = {}): Uint8Array {
  const parts: number[] = [...'RIFF'].map((c) => c.charCodeAt(0))
  parts.push(0, 0, 0, 0, ...[...'WAVE'].map((c) => c.charCodeAt(0)))
  if (options.before) parts.push(...options.before)
  parts.push(...[...'fmt '].map((c) => c.charCodeAt(0)), fmt.length, 0, 0, 0, ...fmt)
  const size = options.dataSize ?? data.length
  parts.push(...[...'data'].map((c) => c.charCodeAt(0)), size & 0xff, (size >> 8) & 0xff, (size >> 16) & 0xff, (size >>> 24) & 0xff)
  return Uint8Array.from([...parts, ...data])
}

function le16(value: number): number[] {
  return [value & 0xff, (value >> 8) & 0xff]
}
function le32(value: number): number[] {
  return [...le16(value & 0xffff), ...le16(value >>> 16)]
}
function pcmFmt(channels: number, rate: number, bits = 16, tag = 1): number[] {
  return [...le16(tag), ...le16(channels), ...le32(rate), ...le32((rate * channels * bits) / 8), ...le16((channels * bits) / 8), ...le16(bits)]
}
const PCM_GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]

describe('WAV', () => {
  test('mono round trip keeps rate and samples; header is the canonical 44 bytes', () => {
    const tone = sine(440, 16000, 100)
    const wav = encodeWav(tone, 16000)
    expect(wav.length).toBe(44 + tone.length * 2)
    expect(new TextDecoder().decode(wav.subarray(0, 4))).toBe('RIFF')
    const decoded = decodeWav(wav)
    expect(decoded.sampleRate).toBe(16000)
    expect(decoded.channelCount).toBe(1)
    expect(decoded.samples).toEqual(tone)
  })

  test('stereo round trip interleaves left then right', () => {
    const left = Int16Array.from([1, 2, 3])
    const right = Int16Array.from([-1, -2, -3])
    const decoded = decodeWav(encodeWav([left, right], 8000))
    expect(decoded.channelCount).toBe(2)
    expect([...decoded.samples]).toEqual([1, -1, 2, -2, 3, -3])
  })

  test('tracks of different lengths are refused', () => {
    expect(() => encodeWav([new Int16Array(2), new Int16Array(3)], 8000)).toThrow('same length')
  })

  test('reads WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, after an extra LIST chunk', () => {
    const fmt = [...pcmFmt(1, 24000, 16, 0xfffe), ...le16(22), ...le16(16), ...le32(4), ...le16(1), ...PCM_GUID_TAIL]
    const list = Uint8Array.from([...[...'LIST'].map((c) => c.charCodeAt(0)), 3, 0, 0, 0, 1, 2, 3, 0])
    const decoded = decodeWav(buildWav(fmt, Uint8Array.from([0x10, 0x00, 0xff, 0xff]), { before: list }))
    expect(decoded.sampleRate).toBe(24000)
    expect([...decoded.samples]).toEqual([16, -1])
  })

  test('a streaming header (data size 0xFFFFFFFF) reads to the end of the file', () => {
    const decoded = decodeWav(buildWav(pcmFmt(1, 24000), Uint8Array.from([1, 0, 2, 0, 3, 0]), { dataSize: 0xffffffff }))
    expect([...decoded.samples]).toEqual([1, 2, 3])
  })

  test('rejects what is not 16-bit PCM, saying why', () => {
    expect(() => decodeWav(new TextEncoder().encode('ID3 not a wav at all'))).toThrow(WavFormatError)
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 32, 3), new Uint8Array(8)))).toThrow('WAV format 3 is not supported')
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 8), new Uint8Array(8)))).toThrow('8-bit samples')
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 8, 7), new Uint8Array(8)))).toThrow('WAV format 7')
    expect(() => decodeWav(encodeWav(new Int16Array(4), 8000).subarray(0, 36))).toThrow('no data chunk')
  })
})
