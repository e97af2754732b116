import { describe, expect, test } from 'bun:test'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711.ts'
import { sine } from '../support/audio.ts'

describe('G.711 µ-law', () => {
  test('known code points decode to the standard values', () => {
    const decoded = ulawToPcm16(Uint8Array.from([0xff, 0x7f, 0x80, 0x00, 0xf0, 0x70]))
    expect([...decoded]).toEqual([0, 0, 32124, -32124, 120, -120])
  })

  test('every code decodes and re-encodes to itself (except the two zeros, which both become 0xff)', () => {
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i)
    const again = pcm16ToUlaw(ulawToPcm16(codes))
    for (let code = 0; code < 256; code++) expect(again[code]).toBe(code === 0x7f ? 0xff : code)
  })

  test('a round trip keeps a signal within µ-law quantisation (≤ 1/16 of the magnitude + 8)', () => {
    const tone = sine(440, 8000, 100, 30_000)
    const back = ulawToPcm16(pcm16ToUlaw(tone))
    for (let i = 0; i < tone.length; i++)
      expect(Math.abs(back[i] - tone[i])).toBeLessThanOrEqual(Math.abs(tone[i]) / 16 + 8)
  })

  test('full-scale samples clip instead of wrapping around', () => {
    const back = ulawToPcm16(pcm16ToUlaw(Int16Array.from([32767, -32768])))
    expect(back[0]).toBe(32124)
    expect(back[1]).toBe(-32124)
  })

  test('writes into a given buffer', () => {
    const out = new Int16Array(2)
    expect(ulawToPcm16(Uint8Array.from([0x80, 0x00]), out)).toBe(out)
    expect([...out]).toEqual([32124, -32124])
  })
})
