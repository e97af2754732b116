import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export const API_KEY_PREFIX = 'rb_'

/** `rb_` + 32 random bytes, base64url: 46 characters. */
export const mintApiKey = () => API_KEY_PREFIX + randomBytes(32).toString('base64url')

export const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex')

/** Hex digests of equal length compared without leaking where they differ. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex')
  const right = Buffer.from(b, 'hex')
  return left.length === right.length && timingSafeEqual(left, right)
}
