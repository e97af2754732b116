import type { AgentNode } from '../definition/definition'
import type { OutboundAnswer } from '../egress/outbound'
import { isPlainObject } from '../lib/values'

/**
 * The pure half of the pre-call fetch: whether the Start node asks for one, the request body, and how the answer
 * becomes initial_context variables. Sending it (10 s timeout, credential header, network rules) is the caller's; any
 * failure means `{}` and the call goes on, with the failure logged on the run.
 */

export const PRE_CALL_FETCH_TIMEOUT_MS = 10_000
/** An answer's variables go into every prompt of the call: a larger answer is refused, not read. */
export const PRE_CALL_FETCH_MAX_BYTES = 64 * 1024

/** Keys only the platform sets: an answer cannot overwrite them. */
export const RESERVED_CONTEXT_KEYS = new Set(['provider', 'runtime_configuration', 'campaign_id', 'source_uuid'])

export function preCallFetchUrl(start: AgentNode): string | null {
  const url = start.data.pre_call_fetch_url
  return start.data.pre_call_fetch_enabled === true && typeof url === 'string' && url !== '' ? url : null
}

export function preCallFetchBody(call: {
  agentId: number | string
  fromNumber: string | null
  toNumber: string | null
}): string {
  return JSON.stringify({
    event: 'call_inbound',
    call_inbound: { agent_id: call.agentId, from_number: call.fromNumber, to_number: call.toNumber },
  })
}

export type PreCallFetchAnswer =
  | { ok: true; variables: Record<string, unknown>; refused: string[] }
  | { ok: false; error: string }

/**
 * Reads a response: a 2xx JSON object whose `initial_context` (or the older `dynamic_variables`), at the top level
 * or under `call_inbound`, holds the variables. Reserved keys are refused and named.
 */
export function readPreCallFetchAnswer({ status, text, truncated }: OutboundAnswer): PreCallFetchAnswer {
  if (status < 200 || status >= 300) return { ok: false, error: `Pre-call fetch answered HTTP ${status}` }
  if (truncated)
    return { ok: false, error: `Pre-call fetch answer is larger than ${PRE_CALL_FETCH_MAX_BYTES / 1024} KB` }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { ok: false, error: 'Pre-call fetch answer is not JSON' }
  }
  if (!isPlainObject(parsed)) return { ok: false, error: 'Pre-call fetch answer is not a JSON object' }
  const holders = [parsed, isPlainObject(parsed.call_inbound) ? parsed.call_inbound : {}]
  const found =
    holders.flatMap((holder) => [holder.initial_context, holder.dynamic_variables]).find(isPlainObject) ?? {}
  const variables: Record<string, unknown> = {}
  const refused: string[] = []
  for (const [key, value] of Object.entries(found)) {
    if (RESERVED_CONTEXT_KEYS.has(key.toLowerCase())) refused.push(key)
    else variables[key] = value
  }
  return { ok: true, variables, refused }
}
