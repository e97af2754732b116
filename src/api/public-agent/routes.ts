import { Elysia, type Static } from 'elysia'
import type { AppContext } from '../../context'
import { ErrorDetail, ValidationErrorBody } from '../schemas'
import type { AgentSelector } from '../../runs/target'
import { TriggerCallBody, TriggerCallResponse, TriggerHeaders, TriggerParams, WorkflowUuidParams } from './model'
import { startRunByApi, type TriggerMode } from '../../calls/trigger'
import { authenticateKey, type Principal } from '../../auth/keys'
import { requireSession, sessionToken } from '../auth'
import { invalid, unauthenticated } from '../../lib/errors'

export const INVALID_API_KEY = 'Invalid API key'

const tags = ['Public agent']
const hook = {
  headers: TriggerHeaders,
  body: TriggerCallBody,
  response: {
    200: TriggerCallResponse,
    400: ErrorDetail,
    401: ErrorDetail,
    403: ErrorDetail,
    404: ErrorDetail,
    422: ValidationErrorBody,
    429: ErrorDetail,
  },
}

type TriggerRequest<P> = {
  request: Request
  headers: Static<typeof TriggerHeaders>
  params: P
  body: Static<typeof TriggerCallBody>
}

/**
 * Who the trigger acts for: the key's, else (no key) the signed-in browser session's, whose writes need
 * `X-CSRF-Token` (403 without). Neither is the missing header's 422, as for any missing field.
 */
function caller(ctx: AppContext, request: Request, rawKey: string | undefined): Principal {
  if (rawKey !== undefined) {
    const principal = authenticateKey(ctx, rawKey)
    if (!principal) throw unauthenticated(INVALID_API_KEY)
    return principal
  }
  if (!sessionToken(request))
    throw invalid([{ type: 'missing', loc: ['header', 'X-API-Key'], msg: 'Field required', input: null }])
  return requireSession(ctx, request).principal
}

/**
 * Starting outbound runs with an API key (admin or trigger scope) or a browser session made from one. The key is a
 * header checked after validation, as the reference platform does: a request missing both the key and `phone_number`
 * gets one 422 naming both. `/test/` runs the agent's draft when it has one.
 */
export const publicAgentRoutes = (ctx: AppContext) => {
  const start =
    <P>(mode: TriggerMode, selectorOf: (params: P) => AgentSelector) =>
    ({ request, headers, params, body }: TriggerRequest<P>) =>
      startRunByApi(ctx, caller(ctx, request, headers['x-api-key']), selectorOf(params), mode, body)
  const byTriggerPath = (params: Static<typeof TriggerParams>) => ({ triggerPath: params.uuid })
  const byAgentUuid = (params: Static<typeof WorkflowUuidParams>) => ({ agentUuid: params.workflow_uuid })
  return new Elysia({ prefix: '/api/v1/public/agent' })
    .post('/:uuid', start('production', byTriggerPath), {
      ...hook,
      params: TriggerParams,
      detail: {
        tags,
        summary: 'Call a number with the published version of the agent whose API Trigger node has this trigger path',
      },
    })
    .post('/test/:uuid', start('test', byTriggerPath), {
      ...hook,
      params: TriggerParams,
      detail: {
        tags,
        summary: 'Call a number with the draft of the agent (else its published version), by trigger path',
      },
    })
    .post('/workflow/:workflow_uuid', start('production', byAgentUuid), {
      ...hook,
      params: WorkflowUuidParams,
      detail: { tags, summary: 'Call a number with the published version of the agent with this Agent UUID' },
    })
    .post('/test/workflow/:workflow_uuid', start('test', byAgentUuid), {
      ...hook,
      params: WorkflowUuidParams,
      detail: {
        tags,
        summary: 'Call a number with the draft of the agent (else its published version), by Agent UUID',
      },
    })
}
