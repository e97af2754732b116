import { describe, expect, test } from 'bun:test'
import {
  decodeWav,
  encodeWav,
  pcm16FromBytes,
  pcmStreamReader,
  readWavHeader,
  startsLikeWav,
  WavFormatError,
  interleavedPieces,
  wavStream,
} from '../../src/lib/wav'
import { sine } from '../support/audio'

const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0))
const le16 = (value: number) => [value & 0xff, (value >> 8) & 0xff]
const le32 = (value: number) => [...le16(value & 0xffff), ...le16(value >>> 16)]

/** A hand-built WAV: `fmt` body bytes and data bytes, with extra chunks where asked. */
function buildWav(
  fmt: number[],
  data: Uint8Array,
  options: { dataSize?: number; before?: Uint8Array } = {},
): Uint8Array {
  const parts = [...ascii('RIFF'), 0, 0, 0, 0, ...ascii('WAVE')]
  if (options.before) parts.push(...options.before)
  parts.push(...ascii('fmt '), fmt.length, 0, 0, 0, ...fmt)
  parts.push(...ascii('data'), ...le32(options.dataSize ?? data.length))
  return Uint8Array.from([...parts, ...data])
}

function pcmFmt(channels: number, rate: number, bits = 16, tag = 1): number[] {
  return [
    ...le16(tag),
    ...le16(channels),
    ...le32(rate),
    ...le32((rate * channels * bits) / 8),
    ...le16((channels * bits) / 8),
    ...le16(bits),
  ]
}
const PCM_GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]
const LIST_CHUNK = Uint8Array.from([...ascii('LIST'), 3, 0, 0, 0, 1, 2, 3, 0])

describe('WAV', () => {
  const pcm = Int16Array.from([0, 1, -1, 32767, -32768, 1234])

  test('mono round trip keeps format and samples; the header is the canonical 44 bytes', () => {
    const tone = sine(440, 16000, 100)
    const wav = encodeWav(tone, 16000)
    expect(wav.length).toBe(44 + tone.length * 2)
    expect(startsLikeWav(wav)).toBe(true)
    const decoded = decodeWav(wav)
    expect(decoded.format).toEqual({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 })
    expect(decoded.pcm).toEqual(tone)
    expect([...decodeWav(encodeWav(pcm, 8000)).pcm]).toEqual([...pcm])
  })

  test('stereo round trip interleaves left then right; tracks of different lengths are refused', () => {
    const decoded = decodeWav(encodeWav([Int16Array.from([1, 2, 3]), Int16Array.from([-1, -2, -3])], 8000))
    expect(decoded.format.channels).toBe(2)
    expect([...decoded.pcm]).toEqual([1, -1, 2, -2, 3, -3])
    expect(() => encodeWav([new Int16Array(2), new Int16Array(3)], 8000)).toThrow('same length')
  })

  test('a streamed WAV is the header, then a piece at a time, the same bytes as the whole file; a short track is silent past its end', async () => {
    const left = Int16Array.from([1, 2, 3, 4, 5])
    const right = Int16Array.from([-1, -2])
    const pieces: Uint8Array[] = []
    for await (const piece of wavStream(interleavedPieces([left, right], 0, 5, 2), 5, 8000, 2)) pieces.push(piece)
    expect(pieces.map((piece) => piece.length)).toEqual([44, 8, 8, 4])
    const whole = encodeWav([left, Int16Array.from([-1, -2, 0, 0, 0])], 8000)
    expect(await new Response(new Blob(pieces)).bytes()).toEqual(whole)
    const mono = await new Response(
      wavStream(interleavedPieces([left.subarray(0, 3)], 0, 4, 16000), 4, 16000, 1),
    ).bytes()
    expect(decodeWav(mono).format).toMatchObject({ channels: 1, sampleRate: 16000 })
    expect([...decodeWav(mono).pcm]).toEqual([1, 2, 3, 0])
  })

  test('a header still arriving reads as null until the data chunk starts', () => {
    const bytes = encodeWav(pcm, 8_000)
    for (let length = 0; length < 44; length++) expect(readWavHeader(bytes.subarray(0, length))).toBeNull()
    expect(readWavHeader(bytes.subarray(0, 44))?.dataOffset).toBe(44)
  })

  test('reads WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, after an extra LIST chunk', () => {
    const fmt = [...pcmFmt(1, 24000, 16, 0xfffe), ...le16(22), ...le16(16), ...le32(4), ...le16(1), ...PCM_GUID_TAIL]
    const decoded = decodeWav(buildWav(fmt, Uint8Array.from([0x10, 0x00, 0xff, 0xff]), { before: LIST_CHUNK }))
    expect(decoded.format.sampleRate).toBe(24000)
    expect([...decoded.pcm]).toEqual([16, -1])
  })

  test('a streaming header (data size 0xFFFFFFFF or 0) reads to the end; a true size stops before trailing chunks', () => {
    const data = Uint8Array.from([1, 0, 2, 0, 3, 0])
    expect([...decodeWav(buildWav(pcmFmt(1, 24000), data, { dataSize: 0xffffffff })).pcm]).toEqual([1, 2, 3])
    expect([...decodeWav(buildWav(pcmFmt(1, 24000), data, { dataSize: 0 })).pcm]).toEqual([1, 2, 3])
    expect([...decodeWav(buildWav(pcmFmt(1, 24000), data, { dataSize: 4 })).pcm]).toEqual([1, 2])
  })

  test('rejects what is not 16-bit PCM, saying why', () => {
    expect(() => decodeWav(new TextEncoder().encode('ID3 not a wav at all'))).toThrow(WavFormatError)
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 32, 3), new Uint8Array(8)))).toThrow(
      'WAV format 3 is not supported',
    )
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 8), new Uint8Array(8)))).toThrow('8-bit samples')
    expect(() => decodeWav(buildWav(pcmFmt(1, 8000, 8, 7), new Uint8Array(8)))).toThrow('WAV format 7')
    expect(() => decodeWav(encodeWav(new Int16Array(4), 8000).subarray(0, 36))).toThrow('no data chunk')
  })

  test('PCM bytes of any alignment become samples; an odd last byte is ignored', () => {
    const bytes = Uint8Array.from([9, 0x10, 0x00, 0xff, 0xff, 0x05])
    expect([...pcm16FromBytes(bytes.subarray(1))]).toEqual([16, -1])
  })

  /** Every sample `reader` answers for `bytes` cut into pieces of `size`, then a final empty push. */
  function readInPieces(reader: ReturnType<typeof pcmStreamReader>, bytes: Uint8Array, size: number): number[] {
    const samples: number[] = []
    for (let at = 0; at < bytes.length; at += size) samples.push(...(reader.push(bytes.subarray(at, at + size)) ?? []))
    samples.push(...(reader.push(new Uint8Array(0), true) ?? []))
    return samples
  }

  test("a stream read in pieces of any size, header and samples split anywhere, gives the whole file's samples", () => {
    const wav = buildWav(pcmFmt(2, 16000), new Uint8Array(pcm.buffer), { before: LIST_CHUNK })
    for (const size of [1, 2, 3, 5, 7, 13, 44, 1000]) {
      const reader = pcmStreamReader()
      expect(readInPieces(reader, wav, size)).toEqual([...pcm])
      expect(reader.header()).toEqual({ format: { sampleRate: 16000, channels: 2, bitsPerSample: 16 }, dataOffset: 56 })
    }
  })

  test('bytes not starting like a WAV are headerless PCM when a raw format is given, and refused otherwise', () => {
    const raw = { sampleRate: 22050, channels: 1, bitsPerSample: 16 }
    const bytes = new Uint8Array(pcm.buffer)
    const reader = pcmStreamReader({ raw })
    expect(readInPieces(reader, bytes, 3)).toEqual([...pcm])
    expect(reader.header()).toEqual({ format: raw, dataOffset: 0 })
    expect(() => readInPieces(pcmStreamReader(), new TextEncoder().encode('ID3 not a wav at all'), 4)).toThrow(
      'not a RIFF/WAVE file',
    )
  })

  test('a header that never ends is refused once past the limit; a stream ending inside its header is refused', () => {
    const endless = Uint8Array.from([...ascii('RIFF'), 0, 0, 0, 0, ...ascii('WAVE'), ...ascii('junk'), 255, 255, 0, 0])
    const reader = pcmStreamReader({ maxHeaderBytes: 100 })
    expect(reader.push(endless)).toBeNull()
    expect(() => reader.push(new Uint8Array(100))).toThrow('the WAV header is longer than 100 bytes')
    const cut = encodeWav(new Int16Array(4), 8000).subarray(0, 30)
    expect(() => readInPieces(pcmStreamReader(), cut, 8)).toThrow('the WAV ends inside its header')
  })
})
