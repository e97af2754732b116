/**
 * G.711 µ-law ↔ signed 16-bit PCM (and A-law → PCM), table-driven: one lookup per sample each way.
 * Encoding indexes a 16 Ki table by the sample's top 14 bits (µ-law only keeps 14 bits of magnitude anyway).
 */

const BIAS = 0x84
const CLIP = 32635

function decodeUlawByte(byte: number): number {
  const u = ~byte & 0xff
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << ((u & 0x70) >> 4)) - BIAS
  return u & 0x80 ? -magnitude : magnitude
}

function encodeUlawSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0
  let magnitude = Math.min(sign ? -sample : sample, CLIP) + BIAS
  let exponent = 7
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f
  return ~(sign | (exponent << 4) | mantissa) & 0xff
}

const DECODE = new Int16Array(256)
for (let byte = 0; byte < 256; byte++) DECODE[byte] = decodeUlawByte(byte)

const ENCODE = new Uint8Array(1 << 14)
for (let index = 0; index < ENCODE.length; index++) ENCODE[index] = encodeUlawSample((index << 18) >> 16)

/** Decodes µ-law bytes; writes into `out` when given (it must hold `ulaw.length` samples). */
export function ulawToPcm16(ulaw: Uint8Array, out = new Int16Array(ulaw.length)): Int16Array {
  for (let i = 0; i < ulaw.length; i++) out[i] = DECODE[ulaw[i]]
  return out
}

/** Encodes PCM16 samples to µ-law; writes into `out` when given (it must hold `pcm.length` bytes). */
export function pcm16ToUlaw(pcm: Int16Array, out = new Uint8Array(pcm.length)): Uint8Array {
  for (let i = 0; i < pcm.length; i++) out[i] = ENCODE[(pcm[i] >> 2) & 0x3fff]
  return out
}

function decodeAlawByte(byte: number): number {
  const a = byte ^ 0x55
  const exponent = (a & 0x70) >> 4
  let magnitude = ((a & 0x0f) << 4) + 8
  if (exponent > 0) magnitude = (magnitude + 0x100) << (exponent - 1)
  return a & 0x80 ? magnitude : -magnitude
}

const ALAW_DECODE = new Int16Array(256)
for (let byte = 0; byte < 256; byte++) ALAW_DECODE[byte] = decodeAlawByte(byte)

/** Decodes G.711 A-law bytes (WAV uploads; calls use µ-law). */
export function alawToPcm16(alaw: Uint8Array): Int16Array {
  const out = new Int16Array(alaw.length)
  for (let i = 0; i < alaw.length; i++) out[i] = ALAW_DECODE[alaw[i]]
  return out
}
