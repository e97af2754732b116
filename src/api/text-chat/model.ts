import { t } from 'elysia'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export { CreateTextChatBody, TextChatMessageBody, TextChatSession } from '../../conversation/schemas'

export const WorkflowParams = t.Object({ workflow_id: t.Integer() })

export const SessionParams = t.Object({ workflow_id: t.Integer(), run_id: t.Integer() })

export const StaleRevision = t.Object({
  detail: t.Object({ message: t.String(), expected_revision: t.Union([t.Integer(), t.Null()]), actual_revision: t.Integer() }),
}, { description: 'The session changed since the revision the client sent, or is still answering the previous message' })
