import { t } from 'elysia'
import { PathId } from '../schemas'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export { CreateTextChatBody, TextChatMessageBody, TextChatSession } from '../../runs/schemas'

export const WorkflowParams = t.Object({ workflow_id: PathId })

export const SessionParams = t.Object({ workflow_id: PathId, run_id: PathId })

export const StaleRevision = t.Object(
  {
    detail: t.Object({
      message: t.String(),
      expected_revision: t.Union([t.Integer(), t.Null()]),
      actual_revision: t.Integer(),
    }),
  },
  { description: 'The session changed since the revision the client sent, or is still answering the previous message' },
)
