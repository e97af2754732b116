import { isPlainObject } from '../lib/values'

/**
 * What a caller hears when the agent cannot talk, from the agent version's `workflow_configurations` (checked when
 * saved, agents/schemas.ts; anything out of shape in an older version falls back to the default):
 *
 * - `unavailable_call` `{answer, message}`: a call to an agent that cannot run (no LLM resolvable, a pinned configuration
 *   or connection gone, a model server seen failing: models/readiness.ts). An inbound call is answered and hears
 *   `message` in the built-in voice, then is hung up; with `answer: false` it is not answered at all. Outbound run starts
 *   are refused before dialling instead, so the line is only heard when the problem appears between dial and answer.
 * - `model_failure` `{message, transfer_to}`: an LLM, STT or TTS that fails mid-call (after `llm_fallback`, if any, had
 *   its turn). The built-in voice says `message`; the call is then transferred to `transfer_to` when the agent names
 *   one, else it ends with disposition `model_error`.
 */

export const DEFAULT_UNAVAILABLE_MESSAGE = 'Sorry, this line cannot take calls right now. Please try again later.'
export const DEFAULT_MODEL_FAILURE_MESSAGE = "I'm sorry, I'm having trouble right now. Please call back later."

export type UnavailableCall = { answer: boolean; message: string }
export type ModelFailureLine = { message: string; transferTo: string | null }

const nonEmpty = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value : null)

export function unavailableCallOf(configurations: Record<string, unknown>): UnavailableCall {
  const settings = isPlainObject(configurations.unavailable_call) ? configurations.unavailable_call : {}
  return { answer: settings.answer !== false, message: nonEmpty(settings.message) ?? DEFAULT_UNAVAILABLE_MESSAGE }
}

export function modelFailureLineOf(configurations: Record<string, unknown>): ModelFailureLine {
  const settings = isPlainObject(configurations.model_failure) ? configurations.model_failure : {}
  return {
    message: nonEmpty(settings.message) ?? DEFAULT_MODEL_FAILURE_MESSAGE,
    transferTo: nonEmpty(settings.transfer_to),
  }
}
