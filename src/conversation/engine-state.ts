/**
 * The state of one conversation, shared by the engine's parts (engine.ts drives them): agent turns and the transcript
 * (agent-turns.ts), nodes, transitions and extraction (nodes.ts), the reply with its tool calls (reply.ts), the end
 * (closing.ts) and the idle and duration rules (limits.ts). Each part is plain functions over this one object.
 */
import type { AgentDefinition, AgentNode } from '../definition/definition'
import { renderTemplate } from '../definition/template-variables'
import type { Clock } from '../lib/clock'
import type { ChatMessage, LlmClient, LlmEvent, ModelRef, TokenUsage } from '../models/types'
import type { AgentConfigurations } from '../definition/configurations'
import type { AgentTool } from '../tools/schemas'
import { buildGraph, nodeName, type ConversationGraph } from './graph'
import type { ConversationRecord, EndReason, RealtimeFeedbackEvent, ToolCallLog, TranscriptTurn } from './record'
import { offeredTools, toolWarnings, type ConversationTools, type TransferCall } from './tool-calls'

export type AgentSpeechKind = 'greeting' | 'reply' | 'transition_speech' | 'tool_message'

export type ConversationEvent =
  /**
   * A piece of agent speech as the LLM streams it; `turn` indexes `record().logs.transcript`. With `recording_id` the
   * turn is that recording, `text` its transcript: channels with audio play the clip instead of speaking the text.
   */
  | { type: 'agent_text'; turn: number; text: string; kind: AgentSpeechKind; recording_id?: string }
  /** The turn's text is complete (`interrupted`: cut by a barge-in, `text` is what was heard). */
  | { type: 'agent_turn_done'; turn: number; text: string; interrupted: boolean }
  | { type: 'node_entered'; node_id: string; node_name: string; previous_node_id: string | null }
  | { type: 'transition'; from_node_id: string; to_node_id: string; function_name: string; edge_id: string }
  /** One completion's tokens, for the usage_info accumulator (key `<service>|||<model>`). */
  | { type: 'usage'; ref: ModelRef; usage: TokenUsage; purpose: 'conversation' | 'extraction' }
  | { type: 'extraction'; node_id: string; values: Record<string, unknown> }
  /** A tool the model called (transitions are `transition`), with what it answered the model. */
  | { type: 'tool_call'; node_id: string; function_name: string; arguments: unknown; result: Record<string, unknown> }
  | { type: 'warning'; message: string }
  /** `graceful`: let queued speech play out before hanging up; otherwise stop at once. */
  | { type: 'ended'; reason: EndReason; graceful: boolean }

export type ConversationOptions = {
  /** The published (or, for test runs, draft) definition the run is pinned to. */
  definition: AgentDefinition
  /**
   * `max_user_idle_timeout_seconds` (or the reference's `max_user_idle_timeout`), default
   * 10; `user_idle_reprompts`: how many times the agent asks whether the caller is still there before saying goodbye
   * (default 1).
   */
  configurations: AgentConfigurations
  /** The run's initial_context: contact/template variables, pre-call fetch data, `greeting_override`. */
  variables: Record<string, unknown>
  llm: LlmClient
  /** The LLM for variable extraction; defaults to `llm`. */
  extractionLlm?: LlmClient
  clock: Clock
  onEvent: (event: ConversationEvent) => void
  /** The idle rule (ask once, then say goodbye and end) applies to voice; text chat turns it off. Default true. */
  idleRules?: boolean
  /** Whether the Start node's `delayed_start` waits before the opening; text chat turns it off. Default true. */
  delayedStart?: boolean
  /** Waits for delayed_start and bounds the wait for pending extractions at the end; tests pass a fake. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /** The organization's recordings this run may play, by `recording_id`, with what each says. */
  recordings?: ReadonlyMap<string, { transcript: string }>
  /** The organization's tools the nodes name (`tool_uuids`) and how to run HTTP ones (src/runs/tools.ts). */
  tools?: ConversationTools
  /** How this channel hands the caller over; without it (text chat) transfer_call tools are not offered. */
  transferCall?: TransferCall
  /**
   * Whether the driver reports with `agentSpeechEnded` when speech has been heard (voice). Default true: an end_call
   * tool's goodbye then ends the conversation only once heard. Text chat passes false: it ends at once.
   */
  awaitSpeechEnd?: boolean
}

export type UserTiming = { startMs?: number; endMs?: number }

type OpenTurn = { index: number; text: string; heardText?: string }

/** A reply being produced: its abort switch, the turn currently streaming, if any, and whether a tool call is running. */
export type PendingReply = {
  controller: AbortController
  done: Promise<void>
  open: OpenTurn | null
  toolRunning: boolean
}

export type { OpenTurn }

/**
 * A tool ended the conversation (end_call, transfer): nothing more is asked of the model, and the end comes once what
 * was said last has been heard (`afterTurn`, or any played clip when null), unless nothing needs to be.
 */
export type Closing = {
  reason: EndReason
  disposition: string | null
  awaitHeard: boolean
  afterTurn: number | null
  since: number
}

export type PendingExtraction = { names: string[]; promise: Promise<void> }

/**
 * The first completion of a reply to a user message not given yet (prepared-reply.ts): its request went out early, its
 * events are kept until the message comes and takes them, or the preparation is dropped.
 */
export type PreparedReply = {
  /** The request's messages and tools, as JSON: the message's own request must be exactly this to take it. */
  key: string
  controller: AbortController
  events: LlmEvent[]
  failure: { error: unknown } | null
  finished: boolean
  /** Wakes the reader waiting for the next event. */
  wake: () => void
}

export type EngineState = {
  options: ConversationOptions
  clock: Clock
  onEvent: (event: ConversationEvent) => void
  llm: LlmClient
  extractionLlm: LlmClient
  awaitSpeechEnd: boolean
  /** The tools the nodes may offer (transfer tools only where the channel can transfer). */
  tools: ReadonlyMap<string, AgentTool>
  sleep: (ms: number, signal: AbortSignal) => Promise<void>
  graph: ConversationGraph
  phase: ConversationRecord['state']
  startedAt: number | null
  endedAt: number | null
  endReason: EndReason | null
  finishing: Promise<void> | null
  /** `end` was asked for: the first reason asked for is the call's (a hang-up that follows does not rename it). */
  ending: Promise<void> | null
  node: AgentNode
  pending: PendingReply | null
  prepared: PreparedReply | null
  idleSince: number | null
  idleStrikes: number
  closing: Closing | null
  /** The latest agent turn the driver reported heard. */
  heardUpTo: number
  history: ChatMessage[]
  transcript: TranscriptTurn[]
  turnKinds: Map<number, AgentSpeechKind>
  /** The LLM-context message of each agent turn that is in the context, so a barge-in can rewrite it. */
  turnMessages: Map<number, Extract<ChatMessage, { role: 'assistant' }>>
  recordedEvents: RealtimeFeedbackEvent[]
  transitionCallIds: Set<string>
  pendingExtractions: Set<PendingExtraction>
  extracted: Record<string, unknown>
  gathered: Record<string, unknown>
  warnings: string[]
  toolCalls: ToolCallLog[]
}

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve()
      },
      { once: true },
    )
  })

export function createEngineState(options: ConversationOptions): EngineState {
  const graph = buildGraph(options.definition)
  const canTransfer = options.transferCall !== undefined
  const extracted: Record<string, unknown> = {}
  return {
    options,
    clock: options.clock,
    onEvent: options.onEvent,
    llm: options.llm,
    extractionLlm: options.extractionLlm ?? options.llm,
    awaitSpeechEnd: options.awaitSpeechEnd ?? true,
    tools: offeredTools(options.tools?.byUuid ?? new Map(), canTransfer),
    sleep: options.sleep ?? defaultSleep,
    graph,
    phase: 'initialized',
    startedAt: null,
    endedAt: null,
    endReason: null,
    finishing: null,
    ending: null,
    node: graph.start,
    pending: null,
    prepared: null,
    idleSince: null,
    idleStrikes: 0,
    closing: null,
    heardUpTo: -1,
    history: [],
    transcript: [],
    turnKinds: new Map(),
    turnMessages: new Map(),
    recordedEvents: [],
    transitionCallIds: new Set(),
    pendingExtractions: new Set(),
    extracted,
    gathered: { nodes_visited: [] as string[], extracted_variables: extracted },
    warnings: toolWarnings(options.definition, options.tools?.byUuid ?? new Map(), canTransfer),
    toolCalls: [],
  }
}

export const sinceStart = (s: EngineState, at: number) => at - (s.startedAt ?? at)

export function warn(s: EngineState, message: string): void {
  s.warnings.push(message)
  s.onEvent({ type: 'warning', message })
}

export function recordEvent(s: EngineState, type: string, payload: Record<string, unknown>): void {
  s.recordedEvents.push({
    type,
    payload,
    timestamp: new Date(s.clock.now()).toISOString(),
    node_id: s.node.id,
    node_name: nodeName(s.node),
  })
}

export const render = (s: EngineState, text: string) =>
  renderTemplate(text, { ...s.options.variables, ...s.extracted }, new Date(s.clock.now()))

/** Running, not ended, not closing after a tool: the caller can be answered. */
export const isActive = (s: EngineState) => s.phase === 'running' && s.endReason === null && s.closing === null

export function latestAgentTurn(s: EngineState): number | undefined {
  for (let index = s.transcript.length - 1; index >= 0; index--) if (s.transcript[index].role === 'agent') return index
  return undefined
}

export const positiveNumber = (value: unknown): number | undefined =>
  typeof value === 'number' && value > 0 ? value : undefined
