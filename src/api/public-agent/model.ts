import { t } from 'elysia'
import { MAX_NAME_LENGTH, MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  ModelOverrides,
  TriggerCallBody,
  TriggerCallResponse,
} from '../../calls/schemas'

/**
 * The key is checked after validation, so it is declared here rather than by the auth plugin. It may be left out by a
 * signed-in browser (the console's test call), which sends its session cookie and `X-CSRF-Token` instead; without
 * either, the missing key is a 422 like any missing field (see `missingKeyItems` in ../errors.ts).
 */
export const TriggerHeaders = t.Object({
  'x-api-key': t.Optional(
    t.String({
      maxLength: MAX_NAME_LENGTH,
      description:
        'An admin or trigger key. A signed-in browser may instead send its session cookie (`ringbase_session`) with `X-CSRF-Token`; the session has the scope of the key it was made from.',
    }),
  ),
})

export const TriggerParams = t.Object({ uuid: t.String({ maxLength: MAX_NAME_LENGTH }) })

export const WorkflowUuidParams = t.Object({ workflow_uuid: t.String({ maxLength: MAX_TOKEN_LENGTH }) })
