import { t } from 'elysia'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  CreateCredentialBody,
  UpdateCredentialBody,
  CredentialView,
  DeletedCredential,
} from '../../credentials/schemas'

export const CredentialParams = t.Object({ credential_uuid: t.String({ maxLength: MAX_TOKEN_LENGTH }) })
