import { t } from 'elysia'
import { MAX_NAME_LENGTH, MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  ModelOverrides,
  TriggerCallBody,
  TriggerCallResponse,
} from '../../calls/schemas'

/** The key is checked after validation, so it is declared (and required) here rather than by the auth plugin. */
export const TriggerHeaders = t.Object({ 'x-api-key': t.String({ maxLength: MAX_NAME_LENGTH }) })

export const TriggerParams = t.Object({ uuid: t.String({ maxLength: MAX_NAME_LENGTH }) })

export const WorkflowUuidParams = t.Object({ workflow_uuid: t.String({ maxLength: MAX_TOKEN_LENGTH }) })
