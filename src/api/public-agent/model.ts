import { t } from 'elysia'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  ModelOverrides,
  TriggerCallBody,
  TriggerCallResponse,
} from '../../calls/schemas'

/** The key is checked after validation, so it is declared (and required) here rather than by the auth plugin. */
export const TriggerHeaders = t.Object({ 'x-api-key': t.String() })

export const TriggerParams = t.Object({ uuid: t.String() })

export const WorkflowUuidParams = t.Object({ workflow_uuid: t.String() })
