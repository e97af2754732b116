/**
 * A run session: one run's conversation, channel-neutral, persisted as it goes. The text chat routes and the voice
 * pipeline both drive a run through it; it owns everything between the run row and the engine.
 *
 *   const session = await openRunSession(ctx, runId, { channel: 'chat' | 'voice', onEvent? })
 *   await session.conversation.start()              // the run becomes `running`; the opening turn
 *   await session.conversation.userMessage(text)    // chat text, or a voice utterance from STT
 *   session.reportSttSeconds(session.clients.stt!.ref, 2.4)         // voice: audio sent to transcription
 *   session.reportTtsCharacters(session.clients.tts!.ref, 57)       // voice: characters sent to synthesis
 *   await session.conversation.tick()               // about once a second: max duration (and the idle rule on voice)
 *   await session.ended                             // the conversation ended, by itself or through finish
 *   await session.finish('user_hangup')             // ends it if needed, completes the run, starts the post-call work
 *   await session.afterCall                         // QA reviewed, webhook deliveries released (tests, shutdown)
 *
 * `openRunSession` loads the run and the agent version it is pinned to (a draft for test runs), resolves its models
 * (model_overrides → agent → organization default) and records them in `initial_context.runtime_configuration`,
 * creates the clients (`clients.stt` and `clients.tts` for voice only; `tts` is the built-in voice unless one is
 * configured), runs the Start node's pre-call fetch (its variables merged into `initial_context`, reserved keys refused,
 * failures logged on the run and ignored) and creates the Conversation. It throws RunSessionError (message safe to
 * show) when the run cannot be run: not found, already completed, or its models cannot be resolved (the run is then
 * completed with `pipeline_error`).
 *
 * `conversation` is the engine's Conversation; after each of its calls and on each of its events the session writes
 * to the run: `gathered_context` (nodes_visited, extracted values; at the end the disposition and tags),
 * `logs.transcript`, `logs.realtime_feedback_events`, `logs.warnings` (agent features not supported yet, failures
 * survived), `logs.llm_fallback` (every switch to a fallback model), `logs.tool_calls` (each tool call: type, status,
 * duration, and an HTTP request's method, host and status), `logs.session` (channel, times, end reason).
 * The agent's tools come from the organization (src/runs/tools.ts); transfers only where `transferCall` is given.
 * Usage is kept in memory and written once at the end: `usage_info` (LLM tokens from the engine, STT seconds and TTS
 * characters reported by the channel, the duration) and `cost_info` from the organization's price card.
 *
 * `finish` is idempotent and resolves when the run is completed: the transcript file is stored behind
 * `transcript_url`, and the run is completed once (a call's end report, applied before, left the call's connected
 * seconds and `logs.telephony` on it and its completion to the session: calls/outcomes.ts; `onCompleted` runs in the
 * same transaction). The same transaction queues one webhook delivery per webhook
 * node (webhook-outbox.ts); then, in the background (`afterCall`), QA nodes review the call and the deliveries, held
 * until then so that their payload carries the review, are released. The engine's `ended` event does not finish the
 * run by itself: a voice channel lets the closing line play out, hangs up, then calls `finish`; text chat calls it at
 * once. A process that dies mid-session leaves the run open: at boot, session-recovery.ts closes runs without a call
 * and calls/recovery.ts those with one.
 */
import { eq } from 'drizzle-orm'
import type { AgentDefinition } from '../definition/definition'
import type { AppContext } from '../context'
import { workflowDefinitions, workflowRuns, type WorkflowRunRow } from '../db/schema'
import { isoNow } from '../lib/clock'
import { isPlainObject } from '../lib/values'
import type { LlmSwitch } from '../models/fallback'
import { readPriceCard } from '../models/price-card'
import {
  createRunClients,
  ModelResolutionError,
  runtimeConfiguration,
  storedOverrides,
  type ResolvedModels,
  type RunClients,
} from '../models/resolve'
import { checkRunModels } from '../models/readiness'
import { guardLlm, guardStt, type ModelFailure, type OnModelFailure } from '../models/failures'
import type { ModelTimeouts } from '../models/http'
import type { ModelRef, TokenUsage } from '../models/types'
import { createBuiltinVoice } from '../voice/builtin-voice'
import {
  addEmbeddingTokens,
  addLlmUsage,
  addSttSeconds,
  addTtsCharacters,
  costInfo,
  emptyUsageInfo,
  type UsageInfo,
} from '../models/usage'
import { attachArtifact } from './artifacts'
import { setRunInstance } from './queries'
import { finishRun, markRunRunning, updateRun, WEB_CALL_MODE, type RunOutcome } from './service'
import { reportedCall } from './call-end'
import { withDefaultConfigurations, type AgentConfigurations } from '../definition/configurations'
import { transaction } from '../db/transaction'
import { whenDatabaseAnswers } from '../db/when-answering'
import { conversationTools } from './tools'
import { runMentions } from '../definition/recording-references'
import { loadPlayableRecordings, type PlayableRecording } from '../recordings/service'
import { createConversation, type Conversation, type ConversationEvent } from '../conversation/engine'
import { qaNodes, runPostCall } from './post-call'
import { runPreCallFetch } from './pre-call'
import { releaseHeldDeliveries, enqueueWebhookDeliveries } from './webhook-outbox'
import { transcriptText, type ConversationRecord, type EndReason } from '../conversation/record'
import type { TransferCall } from '../conversation/tool-calls'

export type RunChannel = 'chat' | 'voice'

export type RunSessionOptions = {
  channel: RunChannel
  /** Hears every engine event once the session has recorded it (voice: `agent_text` pieces go to TTS). */
  onEvent?: (event: ConversationEvent) => void
  /** How the voice channel hands the caller over (ARI: AnsweredCall.transfer); without it transfer tools are not offered. */
  transferCall?: TransferCall
  /**
   * Hears the conversation LLM or speech to text failing (after `llm_fallback`), before the conversation does: the
   * failed request waits until it returns (voice: the caller is told, then the call ends or is transferred).
   */
  onModelFailure?: OnModelFailure
  /** Model server timeouts tests shorten. */
  modelTimeouts?: Partial<ModelTimeouts>
  /**
   * Runs inside the transaction that completes the run, whoever completes it here (the conversation's end, a run that
   * cannot be run): calls/ settles the campaign attempt its call's report left to the run's completion.
   */
  onCompleted?: (ctx: AppContext, runId: number) => void
}

export type RunSession = {
  readonly runId: number
  readonly organizationId: number
  readonly channel: RunChannel
  /** The pinned agent version's workflow configurations (voice reads its answering-machine settings there). */
  readonly configurations: AgentConfigurations
  /** The recordings the run may play (line audio and transcript), by `recording_id`. */
  /** Milliseconds the run's knowledge-base retrievals took so far (the voice pipeline's per-turn share reads it). */
  retrievalMsTotal(): number
  readonly recordings: ReadonlyMap<string, PlayableRecording>
  /** The engine, wrapped so that the run is written after each call. */
  readonly conversation: Conversation
  readonly clients: RunClients
  /** Settles when the conversation has ended, whoever ended it. */
  readonly ended: Promise<{ reason: EndReason; graceful: boolean }>
  reportSttSeconds(ref: ModelRef, seconds: number): void
  reportTtsCharacters(ref: ModelRef, characters: number): void
  /** Tokens a realtime model spent outside the conversation's replies (lines it read out, cancelled replies). */
  reportLlmTokens(ref: ModelRef, tokens: TokenUsage): void
  /** A model failed (the session hears LLM and STT failures itself): its server is remembered as failing (models/health.ts). */
  noteModelFailure(failure: ModelFailure): void
  /** Ends the conversation with `reason` (default `user_hangup`) unless it has ended, then completes the run, once. */
  finish(reason?: EndReason): Promise<void>
  /** Settles when the post-call work after `finish` is done (QA, webhook deliveries released); never rejects. */
  readonly afterCall: Promise<void>
}

/**
 * Why a run cannot be run; the message is safe to show. `configurations`: the agent version's, when it is its models
 * that keep it from running (the voice channel reads its unavailable line there).
 */
export class RunSessionError extends Error {
  constructor(
    message: string,
    readonly configurations: AgentConfigurations | null = null,
  ) {
    super(message)
  }
}

export const transcriptKeyFor = (organizationId: number, runId: number) => `transcripts/${organizationId}/${runId}.txt`

type LoadedRun = {
  run: WorkflowRunRow
  definition: AgentDefinition
  configurations: ReturnType<typeof withDefaultConfigurations>
  /** RunSessionOptions.onCompleted */
  onCompleted?: (ctx: AppContext, runId: number) => void
}

function loadRun(ctx: AppContext, runId: number): LoadedRun {
  const found = ctx.db
    .select({ run: workflowRuns, version: workflowDefinitions })
    .from(workflowRuns)
    .innerJoin(workflowDefinitions, eq(workflowDefinitions.id, workflowRuns.definitionId))
    .where(eq(workflowRuns.id, runId))
    .get()
  if (!found) throw new RunSessionError(`Run ${runId} does not exist`)
  if (found.run.state === 'completed') throw new RunSessionError(`Run ${runId} is already completed`)
  return {
    run: found.run,
    definition: found.version.workflowJson as AgentDefinition,
    configurations: withDefaultConfigurations(found.version.workflowConfigurations),
  }
}

const variablesOf = (run: WorkflowRunRow): Record<string, unknown> => ({ ...run.initialContext })

type FinalWrite = { record: ConversationRecord; usage: UsageInfo; transcriptKey: string | null }

/**
 * Completes the run, once, with what the conversation produced and, on a call, the call's connected seconds its report
 * left on the run (calls/outcomes.ts). False when something else completed it first.
 */
/**
 * The run's final write, tried again while the database does not answer (db/when-answering.ts): the conversation's
 * outcome is only in memory until then.
 */
function writeFinal(
  ctx: AppContext,
  loaded: LoadedRun,
  telephony: boolean,
  logs: Record<string, unknown>,
  final: FinalWrite,
  log: AppContext['log'],
): Promise<boolean> {
  return whenDatabaseAnswers(() => writeFinalOnce(ctx, loaded, telephony, logs, final), {
    onWait: (error) =>
      log.warn({ err: error }, 'the database does not answer: the run is written once it does (tried every 2 s)'),
  })
}

function writeFinalOnce(
  ctx: AppContext,
  loaded: LoadedRun,
  telephony: boolean,
  logs: Record<string, unknown>,
  { record, usage, transcriptKey }: FinalWrite,
): boolean {
  const { run } = loaded
  const disposition =
    typeof record.gathered_context.call_disposition === 'string'
      ? record.gathered_context.call_disposition
      : record.end_reason
  const cost = costInfo(usage, readPriceCard(ctx, run.organizationId), { telephony })
  const outcome: RunOutcome = {
    durationSeconds: reportedCall(ctx, run.id)?.durationSeconds ?? record.call_duration_seconds,
    disposition,
    usage: {
      llm: usage.llm,
      tts: usage.tts,
      stt: usage.stt,
      ...(usage.embeddings ? { embeddings: usage.embeddings } : {}),
    },
    cost,
    gatheredContext: record.gathered_context,
    logs,
  }
  return transaction(ctx, () => {
    const completed = finishRun(ctx, run.id, outcome)
    if (completed) loaded.onCompleted?.(ctx, run.id)
    if (transcriptKey) attachArtifact(ctx, run.id, 'transcript', transcriptKey)
    enqueueWebhookDeliveries(ctx, run, loaded.definition, qaNodes(loaded.definition).length > 0)
    return completed
  })
}

/** A run that cannot be run: completed at once with the reason (its webhooks tell), so it does not stay open. */
function failRun(ctx: AppContext, { run, definition, onCompleted }: LoadedRun, message: string): void {
  transaction(ctx, () => {
    const completed = finishRun(ctx, run.id, {
      durationSeconds: reportedCall(ctx, run.id)?.durationSeconds ?? 0,
      disposition: 'pipeline_error',
      logs: { warnings: [message], session: { end_reason: 'pipeline_error', ended_at: isoNow(ctx.clock) } },
    })
    if (!completed) return
    onCompleted?.(ctx, run.id)
    enqueueWebhookDeliveries(ctx, run, definition, false)
  })
}

export async function openRunSession(ctx: AppContext, runId: number, options: RunSessionOptions): Promise<RunSession> {
  const loaded = { ...loadRun(ctx, runId), onCompleted: options.onCompleted }
  // Before any await: a call's report from now on leaves the run's completion to this session (calls/outcomes.ts), so
  // a session that cannot open completes the run itself.
  updateRun(ctx, runId, { logs: { session: { channel: options.channel } } })
  // A carrier's media stream may reach another instance than the one that placed the call: this one handles it now.
  setRunInstance(ctx, runId, ctx.instanceId)
  try {
    return await startRunSession(ctx, loaded, options)
  } catch (error) {
    if (!(error instanceof RunSessionError)) failRun(ctx, loaded, 'The run session could not be opened')
    throw error
  }
}

async function startRunSession(ctx: AppContext, loaded: LoadedRun, options: RunSessionOptions): Promise<RunSession> {
  const { run, configurations } = loaded
  const { channel } = options
  const log = ctx.log.child({ runId: run.id, organizationId: run.organizationId, channel })
  const fallbackSwitches: Record<string, unknown>[] = []
  const sessionWarnings: string[] = []
  let usage = emptyUsageInfo()
  let retrievalMs = 0
  let persistQueued = false
  let finishing: Promise<void> | null = null
  const onSwitch = (change: LlmSwitch) => {
    fallbackSwitches.push(fallbackEntry(ctx, change))
    log.warn({ from: change.from, to: change.to, reason: change.reason }, 'LLM fallback: switched to the next model')
    queuePersist()
  }

  const { clients, runtime, embeddings, noteModelFailure } = watchedClients(
    ctx,
    await openClients(ctx, loaded, { voice: channel === 'voice', log, onSwitch, timeouts: options.modelTimeouts }),
    options.onModelFailure,
  )
  const variables = variablesOf(run)
  sessionWarnings.push(...(await applyPreCallFetch(ctx, loaded, variables)))

  const afterCall = Promise.withResolvers<void>()
  // A web call has a call id (it counts against the call limits) but no telephone line to pay for.
  const isTelephony = channel === 'voice' && run.callId !== null && run.mode !== WEB_CALL_MODE

  const ended = Promise.withResolvers<{ reason: EndReason; graceful: boolean }>()

  const { tools, recordings } = await toolsAndRecordings(ctx, loaded, embeddings, variables, {
    onEmbeddingTokens(ref, tokens) {
      usage = addEmbeddingTokens(usage, ref, tokens)
    },
    onRetrievalMs(ms) {
      retrievalMs += ms
    },
  })
  const engine = createConversation({
    ...engineSettings(ctx, loaded, clients, channel),
    variables,
    tools,
    recordings,
    transferCall: options.transferCall,
    onEvent(event) {
      if (event.type === 'usage') usage = addLlmUsage(usage, event.ref, event.usage)
      if (event.type === 'ended') ended.resolve({ reason: event.reason, graceful: event.graceful })
      if (event.type !== 'agent_text') queuePersist()
      tellListener(options.onEvent, event, log)
    },
  })

  const logsOf = (record: ConversationRecord) => sessionLogs(record, channel, sessionWarnings, fallbackSwitches)

  function persist() {
    persistQueued = false
    if (finishing) return
    const record = engine.record()
    try {
      updateRun(ctx, run.id, { gatheredContext: record.gathered_context, logs: logsOf(record) })
    } catch (error) {
      log.error({ err: error }, 'run session could not write the run')
    }
  }

  function queuePersist() {
    if (persistQueued) return
    persistQueued = true
    queueMicrotask(persist)
  }

  const conversation = persistingConversation(engine, persist, () => markRunRunning(ctx, run.id))

  async function complete(reason: EndReason) {
    await engine.end(reason)
    const record = engine.record()
    usage = { ...usage, call_duration_seconds: record.call_duration_seconds }
    const transcriptKey = await storeTranscript(ctx, loaded, record).catch((error) => {
      log.error({ err: error }, 'transcript not stored')
      sessionWarnings.push('The transcript file could not be stored')
      return null
    })
    if (!(await writeFinal(ctx, loaded, isTelephony, logsOf(record), { record, usage, transcriptKey }, log)))
      log.warn('the run was completed before its conversation ended: what the conversation produced is not stored')
    log.info({ endReason: record.end_reason, durationSeconds: record.call_duration_seconds }, 'run session finished')
    const work = postCallWork(ctx, loaded, record, clients, isTelephony, log).finally(() => clients.close())
    afterCall.resolve(work.catch(() => undefined))
  }

  log.info({ runtime }, 'run session opened')
  return {
    runId: run.id,
    organizationId: run.organizationId,
    channel,
    configurations,
    recordings,
    conversation,
    clients,
    ended: ended.promise,
    afterCall: afterCall.promise,
    retrievalMsTotal: () => retrievalMs,
    reportSttSeconds(ref, seconds) {
      if (seconds > 0) usage = addSttSeconds(usage, ref, seconds)
    },
    reportTtsCharacters(ref, characters) {
      if (characters > 0) usage = addTtsCharacters(usage, ref, characters)
    },
    reportLlmTokens(ref, tokens) {
      usage = addLlmUsage(usage, ref, tokens)
    },
    noteModelFailure,
    finish(reason = 'user_hangup') {
      finishing ??= complete(reason).catch((error) => {
        log.error({ err: error }, 'run session could not complete the run')
        throw error
      })
      return finishing
    },
  }
}

/** The conversation's settings that follow from the run's agent, models and channel. */
function engineSettings(
  ctx: AppContext,
  { definition, configurations }: LoadedRun,
  clients: RunClients,
  channel: string,
) {
  const voice = channel === 'voice'
  return {
    definition,
    configurations,
    llm: clients.llm,
    extractionLlm: clients.extractionLlm,
    clock: ctx.clock,
    idleRules: voice,
    delayedStart: voice,
    awaitSpeechEnd: voice,
  }
}

/** A listener's failure is logged, never let into the conversation. */
function tellListener(
  listener: ((event: ConversationEvent) => void) | undefined,
  event: ConversationEvent,
  log: AppContext['log'],
) {
  try {
    listener?.(event)
  } catch (error) {
    log.error({ err: error, event: event.type }, 'run session listener failed')
  }
}

/** The agent's tools and the recordings the run may play (those its nodes, tools and variables mention). */
async function toolsAndRecordings(
  ctx: AppContext,
  { run, definition }: LoadedRun,
  embeddings: ResolvedModels['embeddings'],
  variables: Record<string, unknown>,
  measures: Pick<NonNullable<Parameters<typeof conversationTools>[3]>, 'onEmbeddingTokens' | 'onRetrievalMs'>,
) {
  const tools = conversationTools(ctx, run.organizationId, definition, { id: run.id, embeddings, ...measures })
  const mentioned = runMentions(
    definition,
    [...tools.byUuid.values()].map(({ definition }) => definition),
    variables,
  )
  return { tools, recordings: await loadPlayableRecordings(ctx, run.organizationId, mentioned) }
}

/** The run's post-call work (QA, webhooks); when it fails, the held webhook deliveries are released without it. */
function postCallWork(
  ctx: AppContext,
  { run, definition }: LoadedRun,
  record: ConversationRecord,
  clients: RunClients,
  telephony: boolean,
  log: AppContext['log'],
): Promise<void> {
  return runPostCall(ctx, {
    runId: run.id,
    organizationId: run.organizationId,
    definition,
    record,
    llm: clients.extractionLlm,
    telephony,
  }).catch((error) => {
    log.error({ err: error }, 'post-call work failed; webhook deliveries released without it')
    releaseHeldDeliveries(ctx, run.id)
  })
}

/** The run's logs from what the conversation recorded and what the session learnt. */
function sessionLogs(
  record: ConversationRecord,
  channel: RunChannel,
  sessionWarnings: string[],
  fallbackSwitches: Record<string, unknown>[],
): Record<string, unknown> {
  return {
    transcript: record.logs.transcript,
    realtime_feedback_events: record.logs.realtime_feedback_events,
    warnings: [...record.logs.warnings, ...sessionWarnings],
    ...(fallbackSwitches.length ? { llm_fallback: fallbackSwitches } : {}),
    ...(record.logs.tool_calls?.length ? { tool_calls: record.logs.tool_calls } : {}),
    session: {
      channel,
      started_at: record.started_at,
      ended_at: record.ended_at,
      end_reason: record.end_reason,
      current_node_id: record.current_node_id,
    },
  }
}

function fallbackEntry(ctx: AppContext, change: LlmSwitch): Record<string, unknown> {
  return {
    at: isoNow(ctx.clock),
    from: `${change.from.service}|||${change.from.model}`,
    to: `${change.to.service}|||${change.to.model}`,
    reason: change.reason,
    after_ms: change.afterMs,
    ...(change.error ? { error: change.error } : {}),
  }
}

/** The run's models resolved and their clients created; a run whose models cannot be used is failed and refused. */
async function openClients(
  ctx: AppContext,
  loaded: LoadedRun,
  options: Omit<Parameters<typeof createRunClients>[1], 'builtinVoice'>,
): Promise<{ clients: RunClients; runtime: Record<string, unknown>; resolved: ResolvedModels }> {
  const { run, configurations } = loaded
  const cannotRun = (reason: string): RunSessionError => {
    const message = `The run's models cannot be used: ${reason}`
    failRun(ctx, loaded, message)
    options.log.warn({ reason }, 'run session not opened')
    return new RunSessionError(message, configurations)
  }
  const checked = checkRunModels(
    ctx,
    run.organizationId,
    { overrides: storedOverrides(run.modelOverrides), configurations },
    options.voice ? 'voice' : 'chat',
  )
  if (!checked.resolved) throw cannotRun(checked.problem)
  const { resolved } = checked
  try {
    const runtime = runtimeConfiguration(resolved)
    const clients = await createRunClients(resolved, {
      ...options,
      builtinVoice: (voice) => createBuiltinVoice({ voice }),
    })
    updateRun(ctx, run.id, { initialContext: { runtime_configuration: runtime } })
    return { clients, runtime, resolved }
  } catch (error) {
    if (!(error instanceof ModelResolutionError)) throw error
    throw cannotRun(error.message)
  }
}

/**
 * The clients with their LLM and STT failures heard (`onModelFailure`, before the conversation sees them), and each
 * failure noted against its server: only one that could not be reached at all keeps the next calls from starting (a 5xx
 * or a slow answer in one call may be that call's; the connection check remembers those too).
 */
function watchedClients(
  ctx: AppContext,
  { clients, runtime, resolved }: { clients: RunClients; runtime: Record<string, unknown>; resolved: ResolvedModels },
  onModelFailure?: OnModelFailure,
): {
  clients: RunClients
  runtime: Record<string, unknown>
  embeddings: ResolvedModels['embeddings']
  noteModelFailure: (failure: ModelFailure) => void
} {
  const noteModelFailure = (failure: ModelFailure) => {
    const uuid = resolved[failure.service]?.connectionUuid
    if (uuid && failure.kind === 'unreachable') ctx.modelHealth.noteDown(uuid, failure.kind)
  }
  const onFailure: OnModelFailure = async (failure) => {
    noteModelFailure(failure)
    await onModelFailure?.(failure)
  }
  const guarded = {
    ...clients,
    llm: guardLlm(clients.llm, onFailure),
    stt: clients.stt && guardStt(clients.stt, onFailure),
  }
  return { clients: guarded, runtime, embeddings: resolved.embeddings, noteModelFailure }
}

/** The Start node's pre-call fetch: its variables merged into `variables` and the run; returns its warnings. */
async function applyPreCallFetch(
  ctx: AppContext,
  { run, definition }: LoadedRun,
  variables: Record<string, unknown>,
): Promise<string[]> {
  const start = definition.nodes.find((node) => node.type === 'startCall')
  const fetched = start
    ? await runPreCallFetch(ctx, start, {
        organizationId: run.organizationId,
        agentId: run.workflowId,
        initialContext: variables,
      })
    : null
  if (!fetched) return []
  Object.assign(variables, fetched.variables)
  updateRun(ctx, run.id, { initialContext: fetched.variables, logs: { pre_call_fetch: fetched.log } })
  return fetched.warnings
}

/** The engine, wrapped so that the run is written after each of its calls (`start` marks the run running first). */
function persistingConversation(engine: Conversation, persist: () => void, markRunning: () => void): Conversation {
  const persisting =
    <Args extends unknown[], Result>(method: (...args: Args) => Promise<Result>) =>
    async (...args: Args): Promise<Result> => {
      try {
        return await method(...args)
      } finally {
        persist()
      }
    }
  return {
    get ended() {
      return engine.ended
    },
    start: persisting(async () => {
      markRunning()
      return engine.start()
    }),
    userMessage: persisting(engine.userMessage),
    prepareReply: engine.prepareReply,
    dropPreparedReply: engine.dropPreparedReply,
    canInterrupt: engine.canInterrupt,
    interrupt: persisting(engine.interrupt),
    noteUserActivity: engine.noteUserActivity,
    agentSpeechEnded: engine.agentSpeechEnded,
    tick: persisting(engine.tick),
    end: persisting(engine.end),
    record: engine.record,
  }
}

/** The transcript file behind `transcript_url`; null when nothing was said. */
async function storeTranscript(
  ctx: AppContext,
  { run, configurations }: LoadedRun,
  record: ConversationRecord,
): Promise<string | null> {
  if (record.logs.transcript.length === 0) return null
  const includeEndTimestamps =
    isPlainObject(configurations.transcript_configuration) &&
    configurations.transcript_configuration.include_end_timestamps === true
  const key = transcriptKeyFor(run.organizationId, run.id)
  await ctx.objects.put(key, transcriptText(record, { includeEndTimestamps }))
  return key
}
