import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { jsonText } from '../json-response'
import { authErrors, ErrorDetail, ValidationErrorBody } from '../schemas'
import {
  Agent,
  AgentCount,
  AgentListItem,
  AgentVersion,
  CreateWorkflowBody,
  DefinitionErrorsBody,
  UpdateWorkflowBody,
  UpdateWorkflowStatusBody,
  VersionsQuery,
  WorkflowIdParam,
  WorkflowListQuery,
} from './model'
import {
  countAgents,
  createAgent,
  getAgent,
  listAgentsJson,
  listAgentVersions,
  publishAgent,
  setAgentStatus,
  updateAgent,
} from '../../agents/service'

const tags = ['Agents']
const AgentList = t.Array(AgentListItem)
const agentErrors = { 404: ErrorDetail, ...authErrors }
/** Saving a definition: 422 is either a request validation error or the definition's own errors. */
const saveErrors = {
  ...agentErrors,
  409: DefinitionErrorsBody,
  422: t.Union([ValidationErrorBody, DefinitionErrorsBody]),
}

export const agentRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/workflow' })
    .use(auth(ctx))
    .post('/create/definition', ({ principal, body }) => createAgent(ctx, principal.organizationId, body), {
      body: CreateWorkflowBody,
      response: { 200: Agent, ...saveErrors },
      detail: { tags, summary: 'Create an agent; its first version is published and it gets its Agent UUID' },
    })
    .get('/fetch', ({ principal, query }) => jsonText(listAgentsJson(ctx, principal.organizationId, query.status)), {
      query: WorkflowListQuery,
      response: {
        200: AgentList,
        422: t.Union([ValidationErrorBody, ErrorDetail]),
        401: ErrorDetail,
        403: ErrorDetail,
      },
      detail: { tags, summary: 'List the agents of the organization, newest first' },
    })
    .get(
      '/fetch/:workflow_id',
      ({ principal, params }) => getAgent(ctx, principal.organizationId, params.workflow_id),
      {
        params: WorkflowIdParam,
        response: { 200: Agent, ...agentErrors },
        detail: { tags, summary: 'Get an agent with its draft, or its published version when it has no draft' },
      },
    )
    .get('/count', ({ principal }) => countAgents(ctx, principal.organizationId), {
      response: { 200: AgentCount, ...authErrors },
      detail: { tags, summary: 'Count the agents of the organization by status' },
    })
    .put(
      '/:workflow_id',
      ({ principal, params, body }) => updateAgent(ctx, principal.organizationId, params.workflow_id, body),
      {
        params: WorkflowIdParam,
        body: UpdateWorkflowBody,
        response: { 200: Agent, ...saveErrors },
        detail: { tags, summary: 'Rename an agent and/or save a definition or configuration as its draft' },
      },
    )
    .post(
      '/:workflow_id/publish',
      ({ principal, params }) => publishAgent(ctx, principal.organizationId, params.workflow_id),
      {
        params: WorkflowIdParam,
        response: { 200: Agent, 400: ErrorDetail, ...agentErrors },
        detail: { tags, summary: 'Publish the draft; the version published before is archived' },
      },
    )
    .get(
      '/:workflow_id/versions',
      ({ principal, params, query }) => listAgentVersions(ctx, principal.organizationId, params.workflow_id, query),
      {
        params: WorkflowIdParam,
        query: VersionsQuery,
        response: { 200: t.Array(AgentVersion), ...agentErrors },
        detail: { tags, summary: 'List the versions of an agent, newest first' },
      },
    )
    .put(
      '/:workflow_id/status',
      ({ principal, params, body }) => setAgentStatus(ctx, principal.organizationId, params.workflow_id, body.status),
      {
        params: WorkflowIdParam,
        body: UpdateWorkflowStatusBody,
        response: { 200: Agent, ...agentErrors },
        detail: { tags, summary: 'Archive an agent (it stops taking calls) or restore it' },
      },
    )
