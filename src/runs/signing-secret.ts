import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { webhookSigningSecrets } from '../db/schema'
import { isoNow } from '../lib/clock'
import { decryptSecret, encryptSecret } from '../lib/encryption'
import type { CreatedSigningSecret, SigningSecretStatus } from './schemas'

/**
 * Each organization's webhook signing secret: deliveries carry `X-Ringbase-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret,
 * "<t>.<body>")>`. It is shown once, when created; creating another rotates it (deliveries sign with the new one from
 * the next attempt on). Without one, deliveries go unsigned.
 */

export function signingSecretStatus(ctx: AppContext, organizationId: number): Static<typeof SigningSecretStatus> {
  const row = ctx.db
    .select()
    .from(webhookSigningSecrets)
    .where(eq(webhookSigningSecrets.organizationId, organizationId))
    .get()
  return { configured: Boolean(row), hint: row?.hint ?? null, created_at: row?.createdAt ?? null }
}

export function createSigningSecret(ctx: AppContext, organizationId: number): Static<typeof CreatedSigningSecret> {
  const secret = `whsec_${randomBytes(32).toString('base64url')}`
  const values = {
    sealedSecret: encryptSecret(ctx.masterKey, secret),
    hint: secret.slice(-4),
    createdAt: isoNow(ctx.clock),
  }
  ctx.db
    .insert(webhookSigningSecrets)
    .values({ organizationId, ...values })
    .onConflictDoUpdate({ target: webhookSigningSecrets.organizationId, set: values })
    .run()
  ctx.log.info({ organizationId, hint: values.hint }, 'webhook signing secret created')
  return { secret, hint: values.hint, created_at: values.createdAt }
}

export function readSigningSecret(ctx: AppContext, organizationId: number): string | null {
  const row = ctx.db
    .select()
    .from(webhookSigningSecrets)
    .where(eq(webhookSigningSecrets.organizationId, organizationId))
    .get()
  return row ? decryptSecret(ctx.masterKey, row.sealedSecret) : null
}
