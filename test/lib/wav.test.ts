import { describe, expect, test } from 'bun:test'
import { decodeWav, encodeWav, readWavHeader } from '../../src/lib/wav'

describe('wav', () => {
  const pcm = Int16Array.from([0, 1, -1, 32767, -32768, 1234])

  test('a file encoded is decoded to the same samples and format', () => {
    const { format, pcm: decoded } = decodeWav(encodeWav(pcm, 16_000))
    expect(format).toEqual({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 })
    expect([...decoded]).toEqual([...pcm])
  })

  test('a header still arriving reads as null until the data chunk starts', () => {
    const bytes = encodeWav(pcm, 8_000)
    for (let length = 0; length < 44; length++) expect(readWavHeader(bytes.subarray(0, length))).toBeNull()
    expect(readWavHeader(bytes.subarray(0, 44))?.dataOffset).toBe(44)
  })

  test('chunks before fmt and data are skipped; non-PCM is refused', () => {
    const plain = encodeWav(pcm, 22_050)
    const list = new Uint8Array([...new TextEncoder().encode('LIST'), 3, 0, 0, 0, 1, 2, 3, 0])
    const withList = new Uint8Array([...plain.subarray(0, 12), ...list, ...plain.subarray(12)])
    expect(decodeWav(withList).format.sampleRate).toBe(22_050)
    expect([...decodeWav(withList).pcm]).toEqual([...pcm])
    const float = plain.slice()
    float[20] = 3
    expect(() => readWavHeader(float)).toThrow('not PCM')
  })
})
