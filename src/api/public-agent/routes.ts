import { Elysia, type Static } from 'elysia'
import type { AppContext } from '../../context'
import { ErrorDetail, ValidationErrorBody } from '../schemas'
import type { AgentSelector } from '../../runs/target'
import { TriggerCallBody, TriggerCallResponse, TriggerHeaders, TriggerParams, WorkflowUuidParams } from './model'
import { startRunByApi, type TriggerMode } from '../../calls/trigger'

const tags = ['Public agent']
const hook = {
  headers: TriggerHeaders,
  body: TriggerCallBody,
  response: {
    200: TriggerCallResponse, 400: ErrorDetail, 401: ErrorDetail, 404: ErrorDetail, 422: ValidationErrorBody, 429: ErrorDetail,
  },
}

type TriggerRequest<P> = { headers: Static<typeof TriggerHeaders>; params: P; body: Static<typeof TriggerCallBody> }

/**
 * Starting outbound runs with an API key (admin or trigger scope). The key is a required header checked after
 * validation, as the reference platform does: a request missing both the key and `phone_number` gets one 422 naming
 * both. `/test/` runs the agent's draft when it has one.
 */
export const publicAgentRoutes = (ctx: AppContext) => {
  const start = <P>(mode: TriggerMode, selectorOf: (params: P) => AgentSelector) =>
    ({ headers, params, body }: TriggerRequest<P>) => startRunByApi(ctx, headers['x-api-key'], selectorOf(params), mode, body)
  const byTriggerPath = (params: Static<typeof TriggerParams>) => ({ triggerPath: params.uuid })
  const byAgentUuid = (params: Static<typeof WorkflowUuidParams>) => ({ workflowUuid: params.workflow_uuid })
  return new Elysia({ prefix: '/api/v1/public/agent' })
    .post('/:uuid', start('production', byTriggerPath), {
      ...hook, params: TriggerParams,
      detail: { tags, summary: 'Call a number with the published version of the agent whose API Trigger node has this trigger path' },
    })
    .post('/test/:uuid', start('test', byTriggerPath), {
      ...hook, params: TriggerParams,
      detail: { tags, summary: 'Call a number with the draft of the agent (else its published version), by trigger path' },
    })
    .post('/workflow/:workflow_uuid', start('production', byAgentUuid), {
      ...hook, params: WorkflowUuidParams,
      detail: { tags, summary: 'Call a number with the published version of the agent with this Agent UUID' },
    })
    .post('/test/workflow/:workflow_uuid', start('test', byAgentUuid), {
      ...hook, params: WorkflowUuidParams,
      detail: { tags, summary: 'Call a number with the draft of the agent (else its published version), by Agent UUID' },
    })
}
