import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

/** A key for one purpose derived from the master key, so a signature for one use can never be replayed in another. */
export const deriveKey = (masterKey: Buffer, purpose: string): Buffer =>
  Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), `ringbase:${purpose}`, 32))

export const sign = (key: Buffer, message: string): string =>
  createHmac('sha256', key).update(message).digest('base64url')

export function signatureMatches(key: Buffer, message: string, signature: string): boolean {
  const expected = Buffer.from(sign(key, message))
  const given = Buffer.from(signature)
  return expected.length === given.length && timingSafeEqual(expected, given)
}
