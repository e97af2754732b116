import type { Credential } from './types'

export const DEFAULT_API_KEY_HEADER = 'X-API-Key'

/** The request headers a credential adds (one today; a map so callers merge it the same way whatever the type). */
export function credentialHeaders(credential: Credential): Record<string, string> {
  switch (credential.credential_type) {
    case 'bearer_token':
      return { Authorization: `Bearer ${credential.credential_data.token}` }
    case 'api_key':
      return { [credential.credential_data.header_name || DEFAULT_API_KEY_HEADER]: credential.credential_data.api_key }
    case 'basic_auth': {
      const { username, password } = credential.credential_data
      return { Authorization: `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}` }
    }
    case 'custom_header':
      return { [credential.credential_data.header_name]: credential.credential_data.header_value }
  }
}
