import { Type as t } from '@sinclair/typebox'
import { MAX_NAME_LENGTH } from '../lib/limits'
import { ModelOverrides } from '../models/schemas'

export { ModelOverrides }

export const TriggerCallBody = t.Object({
  phone_number: t.String({
    maxLength: MAX_NAME_LENGTH,
    description: 'Number to call: E.164 for carriers; ARI also takes extensions, SIP URIs and dial strings.',
  }),
  initial_context: t.Optional(
    t.Union([t.Record(t.String(), t.Unknown()), t.Null()], {
      description: 'Runtime data for the agent, available to its prompts as template variables.',
    }),
  ),
  telephony_configuration_id: t.Optional(
    t.Union([t.Integer(), t.Null()], {
      description: 'Route through this configuration instead of the organization default.',
    }),
  ),
  from_phone_number_id: t.Optional(
    t.Union([t.Integer(), t.Null()], {
      description: 'An active caller id of the resolved telephony configuration.',
    }),
  ),
  model_overrides: t.Optional(t.Union([ModelOverrides, t.Null()])),
})

export const TriggerCallResponse = t.Object({
  status: t.Literal('initiated'),
  workflow_run_id: t.Integer(),
  workflow_run_name: t.String(),
})
