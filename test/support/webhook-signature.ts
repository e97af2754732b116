import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * What a webhook receiver does with `X-Ringbase-Signature` (`t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
 * "<t>.<body>")>`, docs/models.md): the signature matches the body and is not older (or newer) than
 * `toleranceSeconds`. Written here from the documented scheme, apart from the server's signing code.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string,
  body: string,
  nowUnixSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const parts = new Map(header.split(',').map((part) => part.trim().split('=', 2) as [string, string]))
  const timestamp = Number(parts.get('t'))
  const given = parts.get('v1')
  if (!Number.isInteger(timestamp) || !given || Math.abs(nowUnixSeconds - timestamp) > toleranceSeconds) return false
  const expected = Buffer.from(createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex'))
  const received = Buffer.from(given)
  return expected.length === received.length && timingSafeEqual(expected, received)
}
