import { Type as t } from '@sinclair/typebox'
import { ModelOverrides } from '../models/schemas'

/** Request and response shapes of text chat sessions and the webhook signing secret. */

const JsonObject = t.Record(t.String(), t.Unknown())
const DateTime = t.String({ format: 'date-time' })
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

export const TEXT_CHAT_MAX_MESSAGE_LENGTH = 4000

export const CreateTextChatBody = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 255 })),
  initial_context: t.Optional(
    t.Union([JsonObject, t.Null()], {
      description: "Variables for the agent's templates, as a call's initial_context.",
    }),
  ),
  annotations: t.Optional(t.Union([JsonObject, t.Null()])),
  model_overrides: t.Optional(t.Union([ModelOverrides, t.Null()])),
})

export const TextChatMessageBody = t.Object({
  text: t.String({ minLength: 1, maxLength: TEXT_CHAT_MAX_MESSAGE_LENGTH }),
  expected_revision: t.Optional(
    t.Union([t.Integer({ minimum: 0 }), t.Null()], {
      description: 'The revision the client last saw; a stale one is a 409.',
    }),
  ),
})

const TurnMessage = t.Object({ text: t.String(), created_at: DateTime })

export const TextChatTurn = t.Object({
  id: t.String({ description: 'turn_<12 hex>' }),
  status: t.String({ description: 'pending, completed or failed' }),
  created_at: DateTime,
  user_message: Nullable(TurnMessage),
  assistant_message: Nullable(t.Object({ text: t.String(), created_at: DateTime, node_id: Nullable(t.String()) })),
  events: t.Array(JsonObject, {
    description: 'The realtime feedback events of the turn (node transitions, function calls, …).',
  }),
  usage: t.Object({ prompt_tokens: t.Integer(), completion_tokens: t.Integer(), total_tokens: t.Integer() }),
  checkpoint_after_turn: JsonObject,
})

export const TextChatSessionData = t.Object({
  status: t.String({ description: 'idle, pending_assistant_turn or completed' }),
  turns: t.Array(TextChatTurn),
  inactivity_timeout_seconds: t.Integer(),
  last_activity_at: DateTime,
  end_reason: Nullable(t.String()),
})

export const TextChatSession = t.Object({
  workflow_run_id: t.Integer(),
  workflow_id: t.Integer(),
  name: t.String(),
  mode: t.String(),
  state: t.String(),
  is_completed: t.Boolean(),
  revision: t.Integer(),
  initial_context: JsonObject,
  gathered_context: JsonObject,
  annotations: JsonObject,
  session_data: TextChatSessionData,
  checkpoint: Nullable(JsonObject),
  created_at: DateTime,
  updated_at: DateTime,
})

export const SigningSecretStatus = t.Object({
  configured: t.Boolean(),
  hint: Nullable(t.String({ description: 'The last 4 characters of the secret' })),
  created_at: Nullable(DateTime),
})

export const CreatedSigningSecret = t.Object({
  secret: t.String({ description: 'Shown only in this answer: verify X-Ringbase-Signature with it.' }),
  hint: t.String(),
  created_at: DateTime,
})
