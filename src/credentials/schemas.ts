import { Type as t, type Static } from '@sinclair/typebox'

/** Request and response shapes of credentials; `credential_data` appears in requests only. */

/** The CREDENTIAL_TYPES of ./types (the store's views fail to typecheck if one is missing here). */
export const CredentialTypeSchema = t.Union([
  t.Literal('bearer_token'),
  t.Literal('api_key'),
  t.Literal('basic_auth'),
  t.Literal('custom_header'),
])

export const CredentialName = t.String({ minLength: 1, maxLength: 255 })

export const CredentialDescription = t.Union([t.String({ maxLength: 2000 }), t.Null()])

export const CredentialDataSchema = t.Record(t.String(), t.Unknown(), {
  description:
    'The secret, by credential_type: bearer_token `{token}`; api_key `{api_key, header_name?}` (header ' +
    'X-API-Key unless named); basic_auth `{username, password}`; custom_header `{header_name, header_value}`. ' +
    'Values up to 4096 characters without line breaks; header names are HTTP tokens. Stored encrypted, never returned.',
})

export const CreateCredentialBody = t.Object({
  name: CredentialName,
  description: t.Optional(CredentialDescription),
  credential_type: CredentialTypeSchema,
  credential_data: CredentialDataSchema,
})

/** Partial: what is left out stays. A new credential_type needs its credential_data; credential_data replaces the secret whole. */
export const UpdateCredentialBody = t.Object({
  name: t.Optional(CredentialName),
  description: t.Optional(CredentialDescription),
  credential_type: t.Optional(CredentialTypeSchema),
  credential_data: t.Optional(CredentialDataSchema),
})

export const CredentialView = t.Object({
  uuid: t.String({ format: 'uuid' }),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  credential_type: CredentialTypeSchema,
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const DeletedCredential = t.Object({ message: t.String() })

export type CreateCredentialInput = Static<typeof CreateCredentialBody>
export type UpdateCredentialInput = Static<typeof UpdateCredentialBody>
export type CredentialView = Static<typeof CredentialView>
