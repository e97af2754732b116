import type { AgentNode } from '../definition/definition'
import type { AppContext } from '../context'
import { credentialHeaders } from '../credentials/headers'
import { readCredential } from '../credentials/store'
import { outboundFailureReason, OutboundRefused, sendOutbound, type OutboundAnswer } from '../egress/outbound'
import { outboundPolicy } from '../egress/policy'
import {
  PRE_CALL_FETCH_MAX_BYTES,
  PRE_CALL_FETCH_TIMEOUT_MS,
  preCallFetchBody,
  preCallFetchUrl,
  readPreCallFetchAnswer,
} from './pre-call-fetch'

export type PreCallFetchResult = {
  /** To merge into initial_context (reserved keys already left out). */
  variables: Record<string, unknown>
  /** What `logs.pre_call_fetch` keeps: never the answer's values, never a credential. */
  log: Record<string, unknown>
  /** Failures and refused keys, for the run's warnings. */
  warnings: string[]
}

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null)

/**
 * The Start node's pre-call fetch, when it has one: POSTs the call facts to its URL (with its credential, 10 s at most,
 * under the organization's network rules) and reads variables from the answer. Any failure, a refusal by those rules
 * included, gives no variables and a warning: the call goes on. Null when the node asks for no fetch.
 */
export async function runPreCallFetch(
  ctx: AppContext,
  start: AgentNode,
  call: { organizationId: number; agentId: number; initialContext: Record<string, unknown> },
): Promise<PreCallFetchResult | null> {
  const url = preCallFetchUrl(start)
  if (!url) return null
  const failed = (error: string): PreCallFetchResult => ({
    variables: {},
    log: { url, ok: false, error },
    warnings: [`Pre-call fetch ignored: ${error}`],
  })
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  const credentialUuid = text(start.data.pre_call_fetch_credential_uuid)
  if (credentialUuid) {
    const credential = readCredential(ctx, call.organizationId, credentialUuid)
    if (!credential) return failed(`credential ${credentialUuid} no longer exists`)
    Object.assign(headers, credentialHeaders(credential))
  }
  const body = preCallFetchBody({
    agentId: call.agentId,
    fromNumber: text(call.initialContext.caller_number),
    toNumber: text(call.initialContext.called_number) ?? text(call.initialContext.phone_number),
  })
  let answer: OutboundAnswer
  try {
    answer = await sendOutbound({ url, method: 'POST', headers, body }, outboundPolicy(ctx, call.organizationId), {
      timeoutMs: PRE_CALL_FETCH_TIMEOUT_MS,
      maxBodyBytes: PRE_CALL_FETCH_MAX_BYTES,
      redirects: 'keeping-method',
    })
  } catch (error) {
    const reason = outboundFailureReason(error)
    ctx.log.warn({ url, reason }, 'pre-call fetch failed')
    return failed(error instanceof OutboundRefused ? `not sent: ${reason}` : `request failed (${reason})`)
  }
  const read = readPreCallFetchAnswer(answer)
  if (!read.ok) return failed(read.error)
  return {
    variables: read.variables,
    log: {
      url,
      ok: true,
      status: answer.status,
      variables: Object.keys(read.variables),
      ...(read.refused.length ? { refused: read.refused } : {}),
    },
    warnings: read.refused.length ? [`Pre-call fetch: reserved keys refused: ${read.refused.join(', ')}`] : [],
  }
}
