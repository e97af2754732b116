import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { createTextChat, endTextChat, getTextChat, sendTextChatMessage } from '../../runs/text-chat'
import {
  CreateTextChatBody,
  SessionParams,
  StaleRevision,
  TextChatMessageBody,
  TextChatSession,
  WorkflowParams,
} from './model'

const tags = ['Text chat']
const sessionErrors = { 404: ErrorDetail, ...authErrors }

export const textChatRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/workflow/:workflow_id/text-chat/sessions' })
    .use(auth(ctx))
    .post(
      '',
      ({ principal, params, body }) => createTextChat(ctx, principal.organizationId, params.workflow_id, body),
      {
        params: WorkflowParams,
        body: CreateTextChatBody,
        response: { 200: TextChatSession, 400: ErrorDetail, ...sessionErrors },
        detail: {
          tags,
          summary:
            'Start a text chat with the agent (its draft, else its published version); the answer has the opening turn',
        },
      },
    )
    .get(
      '/:run_id',
      ({ principal, params }) => getTextChat(ctx, principal.organizationId, params.workflow_id, params.run_id),
      {
        params: SessionParams,
        response: { 200: TextChatSession, ...sessionErrors },
        detail: { tags, summary: 'Get a text chat session with its turns' },
      },
    )
    .post(
      '/:run_id/messages',
      ({ principal, params, body }) =>
        sendTextChatMessage(ctx, principal.organizationId, params.workflow_id, params.run_id, body),
      {
        params: SessionParams,
        body: TextChatMessageBody,
        response: { 200: TextChatSession, 400: ErrorDetail, 409: StaleRevision, ...sessionErrors },
        detail: {
          tags,
          summary:
            "Send a message and get the agent's answer (one message at a time; a stale expected_revision is a 409)",
        },
      },
    )
    .post(
      '/:run_id/end',
      ({ principal, params }) => endTextChat(ctx, principal.organizationId, params.workflow_id, params.run_id),
      {
        params: SessionParams,
        response: { 200: TextChatSession, ...sessionErrors },
        detail: { tags, summary: 'End a text chat session; the run is completed' },
      },
    )
