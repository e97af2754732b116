import { t } from 'elysia'
import { IdParam } from '../schemas'
import { WorkflowStatusSchema } from '../../agents/schemas'
import { MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  WorkflowStatusSchema,
  WorkflowConfigurationsSchema,
  CreateWorkflowBody,
  UpdateWorkflowBody,
  Agent,
  AgentListItem,
  AgentVersion,
  AgentCount,
} from '../../agents/schemas'

export const UpdateWorkflowStatusBody = t.Object({ status: WorkflowStatusSchema })

export const WorkflowListQuery = t.Object({
  status: t.Optional(
    t.String({ maxLength: MAX_TOKEN_LENGTH, description: 'active, archived, or both comma-separated' }),
  ),
})

export const VersionsQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100 })),
  offset: t.Optional(t.Integer({ minimum: 0, default: 0 })),
})

export const WorkflowIdParam = IdParam('workflow_id')

export const DefinitionErrorsBody = t.Object(
  {
    detail: t.Object({
      is_valid: t.Literal(false),
      errors: t.Array(
        t.Object({
          kind: t.Union([t.Literal('node'), t.Literal('edge'), t.Literal('workflow')]),
          id: t.Union([t.String(), t.Null()]),
          field: t.Union([t.String(), t.Null()]),
          message: t.String(),
        }),
      ),
    }),
  },
  { description: 'The definition is invalid (422) or a trigger path is taken by another agent (409)' },
)
