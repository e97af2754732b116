import type { AppContext } from '../context'
import { forbidden } from '../lib/errors'
import { deriveKey, sign, signatureMatches } from '../lib/hmac'

/**
 * Short-lived links to the object store on this server, signed with HMAC: an upload link binds key, content type,
 * maximum size and expiry; a download link binds key and expiry. The signature is the only credential, so links can be
 * handed to tools that know nothing about API keys.
 */

export type SignedPurpose = 'upload' | 'download'

/** The signed fields of a link, as they travel in its query string. */
export type SignedFields = { key: string; expires: string; content_type?: string; size?: string }

const OBJECTS_PATH = '/api/v1/s3'

const signingKey = (ctx: AppContext, purpose: SignedPurpose) => deriveKey(ctx.masterKey, `object-url:${purpose}`)
const message = (fields: SignedFields) =>
  [fields.key, fields.content_type ?? '', fields.size ?? '', fields.expires].join('\n')

export function signedObjectUrl(
  ctx: AppContext,
  purpose: SignedPurpose,
  fields: Omit<SignedFields, 'expires'>,
  ttlSeconds: number,
): string {
  const signed: SignedFields = { ...fields, expires: String(Math.floor(ctx.clock.now() / 1000) + ttlSeconds) }
  const query = new URLSearchParams({ ...signed, signature: sign(signingKey(ctx, purpose), message(signed)) })
  return `${ctx.config.publicUrl}${OBJECTS_PATH}/${purpose}?${query}`
}

/** Throws 403 unless the link was signed by this server for this purpose and has not expired. */
export function verifySignedFields(
  ctx: AppContext,
  purpose: SignedPurpose,
  fields: SignedFields,
  signature: string,
): void {
  if (!signatureMatches(signingKey(ctx, purpose), message(fields), signature)) throw forbidden('Invalid signature')
  if (Number(fields.expires) * 1000 < ctx.clock.now()) throw forbidden('This link has expired')
}

export const DOWNLOAD_LINK_TTL_SECONDS = 3600

/** A link that downloads one object for the next hour. */
export const downloadLink = (ctx: AppContext, key: string) => ({
  download_url: signedObjectUrl(ctx, 'download', { key }, DOWNLOAD_LINK_TTL_SECONDS),
  expires_in: DOWNLOAD_LINK_TTL_SECONDS,
})
