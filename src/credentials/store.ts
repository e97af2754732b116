import { randomUUID } from 'node:crypto'
import { and, asc, eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { credentials, type CredentialRow } from '../db/schema'
import { translateUniqueViolations } from '../db/tables'
import { transaction } from '../db/transaction'
import { isoNow } from '../lib/clock'
import { decryptSecret, encryptSecret } from '../lib/encryption'
import { conflict, notFound } from '../lib/errors'
import { validCreateBody, validUpdateBody } from './data'
import type { CredentialView } from './schemas'
import type { Credential, CredentialData } from './types'

/**
 * The organization's credentials. `credential_data` is sealed with the master key as one JSON value and leaves this
 * module only through `readCredential`, for the code that builds outgoing requests; views never carry it.
 */

const CREDENTIAL_NOT_FOUND = 'Credential not found'

const credentialView = (row: CredentialRow): CredentialView => ({
  uuid: row.uuid,
  name: row.name,
  description: row.description,
  credential_type: row.credentialType,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
})

const seal = (ctx: AppContext, data: CredentialData) => encryptSecret(ctx.masterKey, JSON.stringify(data))

function findRow(ctx: AppContext, organizationId: number, credentialUuid: string): CredentialRow | undefined {
  return ctx.db
    .select()
    .from(credentials)
    .where(and(eq(credentials.organizationId, organizationId), eq(credentials.uuid, credentialUuid)))
    .get()
}

function requireRow(ctx: AppContext, organizationId: number, credentialUuid: string): CredentialRow {
  const row = findRow(ctx, organizationId, credentialUuid)
  if (!row) throw notFound(CREDENTIAL_NOT_FOUND)
  return row
}

const writeCredential = <T>(name: string, write: () => T): T =>
  translateUniqueViolations(
    'credentials',
    [
      [
        ['organization_id', 'name'],
        () => conflict(`A credential named '${name}' already exists in this organization.`),
      ],
    ],
    write,
  )

export function listCredentials(ctx: AppContext, organizationId: number): CredentialView[] {
  return ctx.db
    .select()
    .from(credentials)
    .where(eq(credentials.organizationId, organizationId))
    .orderBy(asc(credentials.createdAt), asc(credentials.id))
    .all()
    .map(credentialView)
}

export function getCredential(ctx: AppContext, organizationId: number, credentialUuid: string): CredentialView {
  return credentialView(requireRow(ctx, organizationId, credentialUuid))
}

/** `body` as sent (checked here: 422 per field, secrets never echoed); a name already used → 409. */
export function createCredential(ctx: AppContext, organizationId: number, body: unknown): CredentialView {
  const valid = validCreateBody(body)
  const now = isoNow(ctx.clock)
  const row = writeCredential(valid.name, () =>
    ctx.db
      .insert(credentials)
      .values({
        uuid: randomUUID(),
        organizationId,
        name: valid.name,
        description: valid.description ?? null,
        credentialType: valid.credential_type,
        sealedData: seal(ctx, valid.credential_data),
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get(),
  )
  return credentialView(row)
}

/** Partial update: what `body` leaves out stays, the stored secret included. */
export function updateCredential(
  ctx: AppContext,
  organizationId: number,
  credentialUuid: string,
  body: unknown,
): CredentialView {
  return transaction(ctx, () => {
    const stored = requireRow(ctx, organizationId, credentialUuid)
    const valid = validUpdateBody(body, stored.credentialType)
    const name = valid.name ?? stored.name
    const row = writeCredential(name, () =>
      ctx.db
        .update(credentials)
        .set({
          name,
          description: valid.description === undefined ? stored.description : valid.description,
          credentialType: valid.credential_type ?? stored.credentialType,
          sealedData: valid.credential_data ? seal(ctx, valid.credential_data) : stored.sealedData,
          updatedAt: isoNow(ctx.clock),
        })
        .where(eq(credentials.id, stored.id))
        .returning()
        .get(),
    )
    return credentialView(row)
  })
}

/** Deletes the credential, named or not (tools/credential-users.ts refuses one that is named). */
export function deleteCredential(ctx: AppContext, organizationId: number, credentialUuid: string): void {
  const row = requireRow(ctx, organizationId, credentialUuid)
  ctx.db.delete(credentials).where(eq(credentials.id, row.id)).run()
}

/** The decrypted credential, for building an outgoing request; null when the organization has no such credential. */
export function readCredential(ctx: AppContext, organizationId: number, credentialUuid: string): Credential | null {
  const row = findRow(ctx, organizationId, credentialUuid)
  if (!row) return null
  return {
    uuid: row.uuid,
    name: row.name,
    credential_type: row.credentialType,
    credential_data: JSON.parse(decryptSecret(ctx.masterKey, row.sealedData)),
  } as Credential
}
