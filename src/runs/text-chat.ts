import { randomBytes, randomInt } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import type { WorkflowRunRow } from '../db/schema'
import { conflict, notFound, refused } from '../lib/errors'
import { everyPass } from '../lib/periodic'
import { isPlainObject } from '../lib/values'
import { createRun, getRun, updateRun } from './service'
import { clientContext, findTryOutTarget } from './target'
import type { ConversationEvent } from '../conversation/engine'
import type { TranscriptTurn } from '../conversation/record'
import { openRunSession, RunSessionError, type RunSession } from './run-session'
import type {
  CreateTextChatBody,
  TextChatMessageBody,
  TextChatSession,
  TextChatSessionData,
  TextChatTurn,
} from './schemas'

/**
 * Text chat: an agent run without audio (`mode: textchat`, channel `chat` in usage), driven over HTTP one message at a
 * time through the same run session a call uses; this is how admins try an agent. Each exchange bumps the session's
 * `revision`; a message or end naming a stale revision is a 409, and so is a message while the previous one is still
 * being answered (one turn at a time: refusing is clearer than queueing behind a reply the client has not seen).
 * Sessions live in this process; `sweepTextChats` (once a second in `serve`) ends those idle past their inactivity
 * timeout and applies the agent's max duration. A restart closes open sessions (see session-recovery.ts).
 */

type View = Static<typeof TextChatSession>
type Turn = Static<typeof TextChatTurn>
type SessionData = Static<typeof TextChatSessionData>
type ChatStatus = 'idle' | 'pending_assistant_turn' | 'completed'

export const TEXT_CHAT_MODE = 'textchat'
/** The reference platform's default and limits for `text_chat_inactivity_timeout_seconds`. */
export const INACTIVITY_TIMEOUT = { defaultSeconds: 1800, minSeconds: 60, maxSeconds: 10_500 }

const SESSION_NOT_FOUND = 'Text chat session not found'

type ChatSession = {
  session: RunSession
  revision: number
  status: ChatStatus
  turns: Turn[]
  lastActivityMs: number
  timeoutSeconds: number
  endReason: string | null
  /** What the engine reported during the turn being answered. */
  collected: { events: Record<string, unknown>[]; usage: Turn['usage'] }
}

/** Open sessions of each app context (tests run several apps in one process). */
const openSessions = new WeakMap<AppContext, Map<number, ChatSession>>()

function sessionsOf(ctx: AppContext): Map<number, ChatSession> {
  let sessions = openSessions.get(ctx)
  if (!sessions) openSessions.set(ctx, (sessions = new Map()))
  return sessions
}

const iso = (ms: number) => new Date(ms).toISOString()
const emptyUsage = (): Turn['usage'] => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 })

function inactivityTimeoutSeconds(configurations: Record<string, unknown>): number {
  const value = configurations.text_chat_inactivity_timeout_seconds
  const { defaultSeconds, minSeconds, maxSeconds } = INACTIVITY_TIMEOUT
  return typeof value === 'number' && Number.isFinite(value)
    ? Math.min(maxSeconds, Math.max(minSeconds, Math.round(value)))
    : defaultSeconds
}

/** What a turn shows of an engine event: everything but streamed text pieces and raw usage. */
function collect(chat: ChatSession, event: ConversationEvent): void {
  if (event.type === 'usage') {
    const { usage } = chat.collected
    usage.prompt_tokens += event.usage.promptTokens
    usage.completion_tokens += event.usage.completionTokens
    usage.total_tokens += event.usage.totalTokens
  } else if (event.type !== 'agent_text') chat.collected.events.push({ ...event })
}

function sessionData(chat: ChatSession): SessionData {
  return {
    status: chat.status,
    turns: chat.turns,
    inactivity_timeout_seconds: chat.timeoutSeconds,
    last_activity_at: iso(chat.lastActivityMs),
    end_reason: chat.endReason,
  }
}

function save(ctx: AppContext, chat: ChatSession): void {
  updateRun(ctx, chat.session.runId, { logs: { text_chat: { revision: chat.revision, ...sessionData(chat) } } })
}

/** One exchange: what the user said (none for the opening) and the agent turns that answered it. */
function turnOf(
  ctx: AppContext,
  chat: ChatSession,
  createdAt: number,
  userText: string | null,
  answer: TranscriptTurn[],
): Turn {
  const { conversation } = chat.session
  const record = conversation.record()
  const failed = record.end_reason === 'pipeline_error'
  const text = answer
    .map((turn) => turn.text)
    .filter(Boolean)
    .join('\n\n')
  return {
    id: `turn_${randomBytes(6).toString('hex')}`,
    status: failed ? 'failed' : 'completed',
    created_at: iso(createdAt),
    user_message: userText === null ? null : { text: userText, created_at: iso(createdAt) },
    assistant_message:
      answer.length === 0 ? null : { text, created_at: iso(ctx.clock.now()), node_id: answer.at(-1)!.node_id },
    events: chat.collected.events,
    usage: chat.collected.usage,
    checkpoint_after_turn: {
      node_id: record.current_node_id,
      nodes_visited: record.gathered_context.nodes_visited,
      ended: conversation.ended,
    },
  }
}

function resetCollected(chat: ChatSession) {
  chat.collected = { events: [], usage: emptyUsage() }
}

/** Completes the run when the conversation ended (end node, max duration, LLM failure, or `reason` given). */
async function closeIfEnded(
  ctx: AppContext,
  chat: ChatSession,
  reason?: 'user_hangup' | 'user_idle_max_duration_exceeded' | 'call_duration_exceeded',
): Promise<void> {
  if (!chat.session.conversation.ended && !reason) return
  await chat.session.finish(reason)
  chat.status = 'completed'
  chat.endReason = chat.session.conversation.record().end_reason
  sessionsOf(ctx).delete(chat.session.runId)
}

function requireChatRun(ctx: AppContext, organizationId: number, agentId: number, runId: number): WorkflowRunRow {
  const run = getRun(ctx, organizationId, runId)
  if (!run || run.workflowId !== agentId || run.mode !== TEXT_CHAT_MODE) throw notFound(SESSION_NOT_FOUND)
  return run
}

function view(run: WorkflowRunRow): View {
  const stored = isPlainObject(run.logs.text_chat) ? (run.logs.text_chat as SessionData & { revision: number }) : null
  const { revision = 0, ...data } = stored ?? {}
  const session = stored
    ? (data as SessionData)
    : {
        status: run.state === 'completed' ? 'completed' : 'idle',
        turns: [],
        inactivity_timeout_seconds: INACTIVITY_TIMEOUT.defaultSeconds,
        last_activity_at: run.createdAt,
        end_reason: null,
      }
  const sessionLog = isPlainObject(run.logs.session) ? run.logs.session : {}
  return {
    workflow_run_id: run.id,
    workflow_id: run.workflowId,
    name: run.name,
    mode: run.mode,
    state: run.state,
    is_completed: run.state === 'completed',
    revision,
    initial_context: run.initialContext,
    gathered_context: run.gatheredContext,
    annotations: run.annotations,
    session_data: session,
    checkpoint:
      typeof sessionLog.current_node_id === 'string'
        ? { node_id: sessionLog.current_node_id, nodes_visited: run.gatheredContext.nodes_visited ?? [] }
        : null,
    created_at: run.createdAt,
    updated_at: session.last_activity_at,
  }
}

const currentView = (ctx: AppContext, organizationId: number, runId: number): View =>
  view(getRun(ctx, organizationId, runId)!)

/** Starts a session on the agent's draft (else its published version) and runs the opening turn. */
export async function createTextChat(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  body: Static<typeof CreateTextChatBody>,
): Promise<View> {
  const target = findTryOutTarget(ctx, organizationId, agentId, body.model_overrides, 'chat', 'The agent cannot chat')
  const initialContext = clientContext(body.initial_context)
  const run = createRun(ctx, {
    organizationId,
    agentId,
    definitionId: target.definitionId,
    name: body.name ?? `WR-CHAT-${randomInt(1000, 10_000)}`,
    mode: TEXT_CHAT_MODE,
    callType: initialContext.direction === 'outbound' ? 'outbound' : 'inbound',
    initialContext,
    modelOverrides: body.model_overrides,
  })
  if (body.annotations) updateRun(ctx, run.id, { annotations: body.annotations })

  const holder: { chat?: ChatSession } = {}
  let session: RunSession
  try {
    session = await openRunSession(ctx, run.id, {
      channel: 'chat',
      onEvent: (event) => holder.chat && collect(holder.chat, event),
    })
  } catch (error) {
    if (error instanceof RunSessionError) throw refused(error.message)
    throw error
  }
  const chat: ChatSession = (holder.chat = {
    session,
    revision: 0,
    status: 'pending_assistant_turn',
    turns: [],
    lastActivityMs: ctx.clock.now(),
    timeoutSeconds: inactivityTimeoutSeconds(target.configurations),
    endReason: null,
    collected: { events: [], usage: emptyUsage() },
  })
  sessionsOf(ctx).set(run.id, chat)
  const startedAt = ctx.clock.now()
  const opening = await session.conversation.start()
  chat.turns.push(turnOf(ctx, chat, startedAt, null, opening))
  resetCollected(chat)
  chat.status = 'idle'
  chat.revision = 1
  await closeIfEnded(ctx, chat)
  save(ctx, chat)
  ctx.log.info({ organizationId, workflowId: agentId, runId: run.id }, 'text chat started')
  return currentView(ctx, organizationId, run.id)
}

export function getTextChat(ctx: AppContext, organizationId: number, agentId: number, runId: number): View {
  return view(requireChatRun(ctx, organizationId, agentId, runId))
}

/** The session, if it can take a request: open, and at the revision the client expects. */
function openChat(ctx: AppContext, run: WorkflowRunRow, expectedRevision: number | null | undefined): ChatSession {
  const chat = sessionsOf(ctx).get(run.id)
  if (!chat || run.state === 'completed') throw refused('This text chat session has ended')
  if (expectedRevision != null && expectedRevision !== chat.revision) {
    throw conflict({
      message: 'The session has changed since that revision',
      expected_revision: expectedRevision,
      actual_revision: chat.revision,
    })
  }
  return chat
}

export async function sendTextChatMessage(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  runId: number,
  body: Static<typeof TextChatMessageBody>,
): Promise<View> {
  const run = requireChatRun(ctx, organizationId, agentId, runId)
  const chat = openChat(ctx, run, body.expected_revision)
  if (chat.status === 'pending_assistant_turn') {
    throw conflict({
      message: 'The previous message is still being answered',
      expected_revision: body.expected_revision ?? null,
      actual_revision: chat.revision,
    })
  }
  const receivedAt = ctx.clock.now()
  chat.status = 'pending_assistant_turn'
  chat.lastActivityMs = receivedAt
  save(ctx, chat)
  const text = body.text.trim()
  const answer = await chat.session.conversation.userMessage(text)
  if (chat.status !== 'pending_assistant_turn') return currentView(ctx, organizationId, runId)
  chat.turns.push(turnOf(ctx, chat, receivedAt, text, answer))
  resetCollected(chat)
  chat.status = 'idle'
  chat.revision += 1
  chat.lastActivityMs = ctx.clock.now()
  await closeIfEnded(ctx, chat)
  save(ctx, chat)
  return currentView(ctx, organizationId, runId)
}

/** Ends the session (a pending answer is cut off); ending an ended session answers it as it is. */
export async function endTextChat(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  runId: number,
): Promise<View> {
  const run = requireChatRun(ctx, organizationId, agentId, runId)
  const chat = sessionsOf(ctx).get(run.id)
  if (!chat || run.state === 'completed') return view(run)
  await closeIfEnded(ctx, chat, 'user_hangup')
  chat.revision += 1
  save(ctx, chat)
  return currentView(ctx, organizationId, runId)
}

/**
 * One pass over the open sessions: ends those idle past their inactivity timeout (`user_idle_max_duration_exceeded`)
 * or past the agent's max duration (`call_duration_exceeded`; a text chat has no call, whose time limit is
 * calls/time-limit.ts), and lets the engine apply its own rules. `serve` runs it once a second; tests call it after
 * moving the clock.
 */
export async function sweepTextChats(ctx: AppContext): Promise<void> {
  for (const chat of [...sessionsOf(ctx).values()]) {
    try {
      const idle = chat.status === 'idle' && ctx.clock.now() - chat.lastActivityMs >= chat.timeoutSeconds * 1000
      if (idle) await closeIfEnded(ctx, chat, 'user_idle_max_duration_exceeded')
      else if (pastMaxDuration(ctx, chat.session)) await closeIfEnded(ctx, chat, 'call_duration_exceeded')
      else {
        await chat.session.conversation.tick()
        await closeIfEnded(ctx, chat)
      }
      if (chat.status === 'completed') {
        chat.revision += 1
        save(ctx, chat)
        ctx.log.info({ runId: chat.session.runId, endReason: chat.endReason }, 'text chat ended by the clock')
      }
    } catch (error) {
      ctx.log.error({ err: error, runId: chat.session.runId }, 'text chat sweep failed')
    }
  }
}

/** The agent's max duration has passed since the conversation started. */
function pastMaxDuration(ctx: AppContext, session: RunSession): boolean {
  const startedAt = session.conversation.record().started_at
  const maxMs = session.configurations.max_call_duration_seconds * 1000
  return startedAt !== null && ctx.clock.now() - Date.parse(startedAt) >= maxMs
}

/** Sweeps once a second, never two passes at once; `stop` waits for a pass in progress. */
export function startTextChatSweeper(ctx: AppContext, everyMs = 1000): { stop(): Promise<void> } {
  return everyPass(everyMs, () => sweepTextChats(ctx))
}
