import type { CredentialType } from '../db/schema/credentials'

/** What a credential is, shared by the store and the header builder (its types are the db schema's). */

/** The secret part of each type, as stored (encrypted) and as `readCredential` returns it. */
export type CredentialDataOf = {
  bearer_token: { token: string }
  /** `header_name` defaults to `X-API-Key`. */
  api_key: { api_key: string; header_name?: string }
  basic_auth: { username: string; password: string }
  custom_header: { header_name: string; header_value: string }
}

export type CredentialData = CredentialDataOf[CredentialType]

/** A decrypted credential, for building requests; never sent to a client or logged. */
export type Credential = {
  [Type in CredentialType]: {
    uuid: string
    name: string
    credential_type: Type
    credential_data: CredentialDataOf[Type]
  }
}[CredentialType]
