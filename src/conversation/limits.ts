/**
 * The rules time applies, checked on each `tick` (about once a second): a closing whose goodbye was never reported
 * heard ends anyway; a silent caller is asked whether they are still there (`user_idle_reprompts` times), then told
 * goodbye, and the call ends (`user_idle_max_duration_exceeded`). The agent's `max_call_duration_seconds` is not the
 * engine's: whoever drives the conversation ends it with `call_duration_exceeded` (calls/time-limit.ts for calls,
 * runs/text-chat.ts for text chats).
 */
import { finish, finishClosing } from './closing'
import { isActive, positiveNumber, type EngineState } from './engine-state'
import { reply } from './reply'

const DEFAULT_IDLE_TIMEOUT_SECONDS = 10
const DEFAULT_IDLE_REPROMPTS = 1
/** After an end_call goodbye, how long to wait for the driver to report it heard before ending anyway. */
const GOODBYE_HEARD_TIMEOUT_MS = 60_000

const STILL_THERE_INSTRUCTION =
  'The caller has been silent for a while. Briefly ask whether they are still there, in the language of the conversation.'
const IDLE_GOODBYE_INSTRUCTION =
  'The caller is still silent. Say a short, polite goodbye in the language of the conversation; the call ends after it.'

const nonNegativeInteger = (value: unknown): number | undefined =>
  Number.isInteger(value) && (value as number) >= 0 ? (value as number) : undefined

export type Limits = { idleTimeoutMs: number; idleRules: boolean; idleReprompts: number }

export function limitsOf(s: EngineState): Limits {
  const { configurations } = s.options
  return {
    idleTimeoutMs:
      1000 *
      (positiveNumber(configurations.max_user_idle_timeout_seconds) ??
        positiveNumber(configurations.max_user_idle_timeout) ??
        DEFAULT_IDLE_TIMEOUT_SECONDS),
    idleRules: s.options.idleRules ?? true,
    idleReprompts: nonNegativeInteger(configurations.user_idle_reprompts) ?? DEFAULT_IDLE_REPROMPTS,
  }
}

export async function applyLimits(s: EngineState, limits: Limits): Promise<void> {
  if (s.closing?.awaitHeard && s.clock.now() - s.closing.since >= GOODBYE_HEARD_TIMEOUT_MS) await finishClosing(s)
  if (!isActive(s) || s.startedAt === null) return
  const now = s.clock.now()
  if (!limits.idleRules || s.pending || s.idleSince === null || now - s.idleSince < limits.idleTimeoutMs) return
  s.idleStrikes += 1
  if (s.idleStrikes <= limits.idleReprompts)
    return reply(s, { instruction: STILL_THERE_INSTRUCTION, offerFunctions: false })
  await reply(s, { instruction: IDLE_GOODBYE_INSTRUCTION, offerFunctions: false })
  await finish(s, 'user_idle_max_duration_exceeded')
}
