import { randomInt, randomUUID } from 'node:crypto'
import type { AppContext } from '../context'
import type { Principal } from '../auth/keys'
import { transaction } from '../db/transaction'
import { forbidden, limitReached, notFound, refused } from '../lib/errors'
import { failureStreak } from '../lib/failure-streak'
import { createRun, getRun, markRunRunning, openCallCount, openWebCallCount, WEB_CALL_MODE } from '../runs/service'
import { clientContext, findTryOutTarget } from '../runs/target'
import { endReported } from '../telephony/provider'
import type { WebMediaTransport } from '../voice/web-media'
import { concurrentCallLimit } from './queries'
import { AGENT_CANNOT_RUN, CONCURRENT_CALL_LIMIT_REACHED } from './trigger'

/**
 * A voice call from a browser (mode `webcall`): the page asks for one over HTTP (`startWebCall`: the agent's draft,
 * else its published version, checked like any run start: the agent, its models, the organization's limits), then
 * opens the call's WebSocket within CONNECT_TIMEOUT_MS with the same session or key (`admitWebCallSocket`). The run is
 * a call like any other: it has a call id (so it counts against the organization's concurrent call limit), it is
 * answered when the page's audio starts, and its conversation is the one every answered call gets
 * (`ctx.telephony.answered`); the socket's end is the hang-up, reported like a phone call's. Web calls also have a
 * limit of their own per organization (`--web-call-limit`).
 *
 * A web call belongs to the browser session (or API key) that started it: signing out, the session expiring or the key
 * being archived closes its socket (`closeWebCallsOfSession`, and a check every SESSION_CHECK_MS).
 */

const CONNECT_TIMEOUT_MS = 30_000
const SESSION_CHECK_MS = 5_000
export const WEB_CALL_NOT_FOUND = 'Web call not found'
export const WEB_CALL_LIMIT_REACHED = 'Web call limit reached'

/** Who started a web call: the key, and the browser session it came through (null for a request with X-API-Key). */
export type WebCaller = { principal: Principal; sessionId: number | null }

export type WebCall = {
  runId: number
  callId: string
  caller: WebCaller
  maxDurationMs: number | null
  connectTimer: ReturnType<typeof setTimeout>
  transport: WebMediaTransport | null
}

/** The web calls of each app context (tests run several apps in one process), by run id. */
const webCallsByContext = new WeakMap<AppContext, Map<number, WebCall>>()

function webCallsOf(ctx: AppContext): Map<number, WebCall> {
  let calls = webCallsByContext.get(ctx)
  if (!calls) webCallsByContext.set(ctx, (calls = new Map()))
  return calls
}

export type StartedWebCall = { workflow_run_id: number; workflow_run_name: string; call_id: string }

export type WebCallRequest = { initial_context?: Record<string, unknown>; model_overrides?: Record<string, any> | null }

export function startWebCall(
  ctx: AppContext,
  caller: WebCaller,
  agentId: number,
  body: WebCallRequest,
): StartedWebCall {
  const { organizationId } = caller.principal
  const target = findTryOutTarget(ctx, organizationId, agentId, body.model_overrides, 'voice', AGENT_CANNOT_RUN)
  const callId = randomUUID()
  const run = transaction(ctx, () => {
    const limit = ctx.config.webCallLimit
    if (openWebCallCount(ctx, organizationId) >= limit)
      throw limitReached(`${WEB_CALL_LIMIT_REACHED}: ${limit} web calls at once per organization`)
    if (openCallCount(ctx, organizationId) >= concurrentCallLimit(ctx, organizationId))
      throw limitReached(CONCURRENT_CALL_LIMIT_REACHED)
    return createRun(ctx, {
      organizationId,
      agentId,
      definitionId: target.definitionId,
      name: `WR-WEB-${randomInt(1000, 10_000)}`,
      mode: WEB_CALL_MODE,
      callType: 'inbound',
      callId,
      modelOverrides: body.model_overrides,
      initialContext: {
        ...clientContext(body.initial_context),
        provider: WEB_CALL_MODE,
        direction: 'inbound',
        trigger_mode: 'test',
        workflow_uuid: target.agentUuid,
        api_key_id: caller.principal.apiKeyId,
      },
    })
  })
  const maxSeconds = target.configurations.max_call_duration_seconds
  const call: WebCall = {
    runId: run.id,
    callId,
    caller,
    maxDurationMs: typeof maxSeconds === 'number' && maxSeconds > 0 ? maxSeconds * 1000 : null,
    transport: null,
    connectTimer: setTimeout(() => {
      webCallsOf(ctx).delete(run.id)
      reportEnd(ctx, callId, 'failed', null, 'web_call_not_connected')
    }, CONNECT_TIMEOUT_MS),
  }
  call.connectTimer.unref?.()
  webCallsOf(ctx).set(run.id, call)
  ctx.log.info({ organizationId, workflowId: agentId, runId: run.id }, 'web call started')
  return { workflow_run_id: run.id, workflow_run_name: run.name, call_id: callId }
}

function reportEnd(
  ctx: AppContext,
  callId: string,
  outcome: 'completed' | 'failed',
  answeredAt: number | null,
  providerStatus: string,
) {
  ctx.telephony.report({ kind: 'ended', callId, outcome, at: ctx.clock.now(), answeredAt, providerStatus })
}

/**
 * Checks the upgrade of a web call's socket, changing nothing: the run is the caller's organization's web call (else
 * 404), started by the same session or key (else 403), and not joined yet (else 400). `runWebCall` claims it.
 */
export function admitWebCallSocket(ctx: AppContext, caller: WebCaller, runId: number): WebCall {
  const run = getRun(ctx, caller.principal.organizationId, runId)
  if (!run || run.mode !== WEB_CALL_MODE) throw notFound(WEB_CALL_NOT_FOUND)
  const call = webCallsOf(ctx).get(runId)
  if (!call || call.transport || run.state !== 'initialized') throw refused(ALREADY_JOINED)
  if (call.caller.principal.apiKeyId !== caller.principal.apiKeyId || call.caller.sessionId !== caller.sessionId)
    throw forbidden('Only the session that started this web call may join it')
  return call
}

const ALREADY_JOINED = 'This web call has already been joined or has ended: start a new one'

/**
 * Runs an admitted web call over its socket's transport until the socket closes. The run becomes `running` here (the
 * socket is open): a second socket admitted meanwhile is closed with 4409.
 */
export function runWebCall(
  ctx: AppContext,
  call: WebCall,
  transport: WebMediaTransport,
  callerStillSignedIn: () => boolean,
): void {
  if (call.transport || !markRunRunning(ctx, call.runId)) return transport.closeWith(4409, ALREADY_JOINED.slice(0, 100))
  clearTimeout(call.connectTimer)
  call.transport = transport
  const log = ctx.log.child({ runId: call.runId, callId: call.callId })
  const answeredAt = ctx.clock.now()
  const reported = endReported(ctx.telephony, call.callId)
  const ended = new Promise<void>((resolve) => transport.onClose(() => resolve()))
  const sessionChecks = failureStreak(log, {
    failed: 'web call: the caller session could not be checked',
    recovered: 'web call: the caller session is checked again',
  })
  const sessionCheck = setInterval(() => {
    try {
      if (!callerStillSignedIn()) transport.closeWith(4401, 'signed out')
      sessionChecks.succeeded()
    } catch (error) {
      // the database is unreachable: the caller is not cut off for it; the next check asks again
      sessionChecks.failed(error)
    }
  }, SESSION_CHECK_MS)
  const hardStop = call.maxDurationMs === null ? undefined : setTimeout(() => transport.close(), call.maxDurationMs)
  transport.onClose((close) => {
    clearInterval(sessionCheck)
    clearTimeout(hardStop)
    webCallsOf(ctx).delete(call.runId)
    log.info({ code: close.code, initiatedBy: close.initiatedBy }, 'web call ended')
    reportEnd(ctx, call.callId, 'completed', answeredAt, `web_socket_closed: ${close.code}`)
  })
  // The conversation starts once the page has said at which rate it speaks (its greeting would be lost before).
  void transport.ready.then(() => converse(ctx, call, transport, { ended, reported }))
}

function converse(
  ctx: AppContext,
  call: WebCall,
  transport: WebMediaTransport,
  { ended, reported }: { ended: Promise<void>; reported: Promise<void> },
): void {
  const log = ctx.log.child({ runId: call.runId, callId: call.callId })
  const conversation = ctx.telephony.answered({
    callId: call.callId,
    runId: call.runId,
    organizationId: call.caller.principal.organizationId,
    configurationId: null,
    direction: 'inbound',
    media: transport,
    onDtmf: () => {},
    ended,
    reported,
    hangup: async () => transport.close(),
    onTranscript: (line) => transport.notify({ type: 'transcript', ...line }),
  })
  if (!conversation) {
    log.warn('no speech pipeline is attached: the web call is closed')
    transport.closeWith(1011, 'no speech pipeline')
  } else void conversation.catch((error) => log.error({ err: error }, 'web call conversation failed'))
}

/** Closes the sockets of the web calls a browser session started (it signed out). */
export function closeWebCallsOfSession(ctx: AppContext, organizationId: number, sessionId: number): void {
  for (const call of webCallsOf(ctx).values()) {
    const { principal, sessionId: callSession } = call.caller
    if (principal.organizationId !== organizationId || callSession !== sessionId) continue
    if (call.transport) call.transport.closeWith(4401, 'signed out')
    else {
      clearTimeout(call.connectTimer)
      webCallsOf(ctx).delete(call.runId)
      reportEnd(ctx, call.callId, 'failed', null, 'signed_out_before_connecting')
    }
  }
}
