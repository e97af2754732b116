import { Type as t } from '@sinclair/typebox'

const JsonObject = t.Record(t.String(), t.Unknown())

export const WorkflowStatusSchema = t.Union([t.Literal('active'), t.Literal('archived')])

/** Free-form, with the keys the platform reads checked. Stored with each version. */
export const WorkflowConfigurationsSchema = t.Object(
  {
    max_call_duration_seconds: t.Optional(
      t.Integer({
        minimum: 1,
        maximum: 14_400,
        description: 'Hard limit of one call; the call is hung up when it is reached. Default 600.',
      }),
    ),
    user_turn_stop_timeout: t.Optional(
      t.Number({
        minimum: 0.2,
        maximum: 5,
        description:
          "Seconds of silence that end the caller's turn on voice calls (the turn detector's stop window). Default 0.6.",
      }),
    ),
    noise_suppression: t.Optional(
      t.Boolean({
        description:
          "Voice calls: remove background noise from the caller's audio (RNNoise) before turn detection and speech " +
          'recognition; recordings keep the line as it was. Costs about 10 % of a CPU core per call. Default false.',
      }),
    ),
    turn_start_strategy: t.Optional(
      t.Union([t.Literal('default'), t.Literal('min_words')], {
        description:
          '`default`: caller speech interrupts the agent as soon as it starts. `min_words`: only once its transcript has ' +
          '`turn_start_min_words` words; shorter speech over the agent ("mm-hm") is ignored.',
      }),
    ),
    turn_start_min_words: t.Optional(
      t.Integer({ minimum: 1, maximum: 10, description: 'Words an interruption needs with `min_words`. Default 3.' }),
    ),
    turn_stop_strategy: t.Optional(
      t.Union([t.Literal('transcription'), t.Literal('turn_analyzer')], {
        description:
          '`transcription` (default): the turn ends after `user_turn_stop_timeout` of silence. `turn_analyzer` is ' +
          'accepted but needs a Smart-Turn model Ringbase does not have: it behaves as `transcription` and the run logs a warning.',
      }),
    ),
    model_configuration_uuid: t.Optional(
      t.Union([t.String({ format: 'uuid', maxLength: 36 }), t.Null()], {
        description:
          'The model configuration runs of this agent use (else the organization default); run model_overrides go over it.',
      }),
    ),
    unavailable_call: t.Optional(
      t.Object(
        {
          answer: t.Optional(
            t.Boolean({
              description: 'Answer an inbound call to say `message` (default true); false leaves it unanswered.',
            }),
          ),
          message: t.Optional(
            t.String({
              minLength: 1,
              maxLength: 500,
              description:
                'Said in the built-in voice. Default: "Sorry, this line cannot take calls right now. Please try again later."',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'A call to this agent when it cannot run (no LLM, a pinned configuration gone, a model server failing). ' +
            'Run starts are refused before dialling; an inbound call hears `message`, then is hung up.',
        },
      ),
    ),
    model_failure: t.Optional(
      t.Object(
        {
          message: t.Optional(
            t.String({
              minLength: 1,
              maxLength: 500,
              description:
                'Said in the built-in voice. Default: "I\'m sorry, I\'m having trouble right now. Please call back later."',
            }),
          ),
          transfer_to: t.Optional(
            t.String({
              minLength: 1,
              maxLength: 255,
              description:
                'Where the call is transferred after `message` (a phone number or SIP address, as transfer_call takes); else the call ends with disposition `model_error`.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'An LLM, speech-to-text or text-to-speech server failing mid-call (timeout, 5xx, stalled stream, refused ' +
            'connection), once `llm_fallback` had its turn.',
        },
      ),
    ),
  },
  { additionalProperties: true },
)

export const CreateWorkflowBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 255 }),
  workflow_definition: JsonObject,
  workflow_configurations: t.Optional(WorkflowConfigurationsSchema),
})

export const UpdateWorkflowBody = t.Object({
  name: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 255 }), t.Null()])),
  workflow_definition: t.Optional(t.Union([JsonObject, t.Null()])),
  workflow_configurations: t.Optional(t.Union([WorkflowConfigurationsSchema, t.Null()])),
})

export const Agent = t.Object({
  id: t.Integer(),
  name: t.String(),
  status: WorkflowStatusSchema,
  created_at: t.String({ format: 'date-time' }),
  workflow_definition: JsonObject,
  current_definition_id: t.Integer({
    description: 'Id of the version shown: the draft if there is one, else the published one',
  }),
  template_context_variables: t.Record(t.String(), t.String(), {
    description:
      'Every variable the prompts read from the call context, with the default its placeholder gives ("" if none)',
  }),
  call_disposition_codes: t.Object({ disposition_codes: t.Array(t.String()) }),
  total_runs: t.Integer(),
  workflow_configurations: JsonObject,
  version_number: t.Integer(),
  version_status: t.Union([t.Literal('draft'), t.Literal('published'), t.Literal('archived')]),
  workflow_uuid: t.String({ format: 'uuid' }),
})

export const AgentListItem = t.Object({
  id: t.Integer(),
  name: t.String(),
  status: WorkflowStatusSchema,
  created_at: t.String({ format: 'date-time' }),
  total_runs: t.Integer(),
  folder_id: t.Null(),
  workflow_uuid: t.String({ format: 'uuid' }),
})

export const AgentVersion = t.Object({
  id: t.Integer(),
  version_number: t.Integer(),
  status: t.Union([t.Literal('draft'), t.Literal('published'), t.Literal('archived')]),
  created_at: t.String({ format: 'date-time' }),
  published_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  workflow_json: JsonObject,
  workflow_configurations: JsonObject,
  template_context_variables: t.Record(t.String(), t.String()),
})

export const AgentCount = t.Object({ total: t.Integer(), active: t.Integer(), archived: t.Integer() })
