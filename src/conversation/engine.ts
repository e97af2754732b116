/**
 * The conversation runtime: walks an agent's graph with an LLM, for any channel. The text chat route and the voice
 * pipeline drive the same object; it knows no database, HTTP or audio.
 *
 *   const conversation = createConversation({ definition, configurations, variables, llm, clock, onEvent })
 *   await conversation.start()                      // delayed start, Start node, greeting (or the LLM speaks first)
 *   await conversation.userMessage(text, timing?)   // a final user utterance → the agent's reply, following transitions
 *   await conversation.interrupt({ heardText })     // barge-in: cancels the LLM stream, keeps what was heard
 *   await conversation.tick()                       // call about once a second: max duration and idle rules
 *   conversation.noteUserActivity() / agentSpeechEnded({ turn })   // voice timing, feeds the idle rule
 *   await conversation.end('user_hangup')           // the driver ends it (hang-up, voicemail, transfer, …)
 *   conversation.record()                           // ConversationRecord: plain data to persist on the run
 *
 * `start`, `userMessage` and `tick` resolve with the agent turns they produced (for the chat response) once the
 * agent's reply is complete. Everything said is also streamed through `onEvent` (`agent_text` pieces: the voice path
 * cuts them into sentences, the chat path concatenates), with node, transition, usage, extraction, warning and end
 * events. After the end every method is a no-op; `ended` tells.
 *
 * Behaviour (reference engine §3, without its quirks): the system prompt is the global prompt (when the node's
 * `add_global_prompt`, default true) then the node prompt, rendered at every request from the run's variables plus
 * the values extracted so far; each node offers exactly its own functions (one per outgoing edge, see graph.ts);
 * history carries across nodes; a transition's `transition_speech` is spoken (not put into the LLM context); after
 * entering an End node the LLM says its closing line under the End node's prompt, then the call ends with
 * `user_qualified`. Leaving a node with extraction enabled extracts in the background; a later prompt mentioning an
 * extracted name waits for it. At the end the current node is extracted too (not after `pipeline_error` or
 * `voicemail_detected`) and the disposition is settled.
 *
 * Tools (tool-calls.ts): a node's `tool_uuids` found in `tools` are offered beside its edge functions; each result
 * goes back to the model as a tool message, and the caller is muted (messages wait) while one runs. end_call ends the
 * call once its goodbye has been heard (`agentSpeechEnded`), with the model's reason as disposition; transfer_call
 * hands the caller over through `transferCall` and ends the conversation, or tells the model it failed.
 *
 * Left to the caller: merging `template_context_variables` defaults and pre-call fetch data into `variables` (an
 * extracted value wins over a variable of the same name in prompts); turning `delayedStart` off where nobody waits
 * for the line to connect (text chat); persisting `record()`; accumulating `usage` events; an LLM error ends the call with
 * `pipeline_error`, so retries and `llm_fallback` belong inside the LlmClient given here.
 */
import type { WorkflowDefinition, WorkflowNode } from '../agents/definition'
import { isPlainObject } from '../lib/values'
import { renderTemplate } from '../agents/template-variables'
import type { Clock } from '../lib/clock'
import type { ChatMessage, LlmClient, ModelRef, TokenUsage, ToolCall } from '../models/types'
import type { WorkflowConfigurations } from '../runs/target'
import { extractionMessages, extractionVariables, extractVariables, historyForExtraction, type ExtractionVariable } from './extraction'
import { buildGraph, nodeFlag, nodeFunctions, nodeName, nodeText, unsupportedFeatureWarnings, type ConversationGraph, type NodeFunction } from './graph'
import {
  dispositionFields,
  type ConversationRecord,
  type EndReason,
  type RealtimeFeedbackEvent,
  type ToolCallLog,
  type TranscriptTurn,
} from './record'
import { offeredTools, runToolCall, toolWarnings, type ConversationTools, type ToolCallHost, type ToolEffect, type TransferCall } from './tool-calls'

export type AgentSpeechKind = 'greeting' | 'reply' | 'transition_speech' | 'tool_message'

export type ConversationEvent =
  /** A piece of agent speech as the LLM streams it; `turn` indexes `record().logs.transcript`. */
  | { type: 'agent_text'; turn: number; text: string; kind: AgentSpeechKind }
  /** The turn's text is complete (`interrupted`: cut by a barge-in, `text` is what was heard). */
  | { type: 'agent_turn_done'; turn: number; text: string; interrupted: boolean }
  /**
   * A recorded clip to play (greeting, transition speech or a tool's message of type audio); channels without audio
   * skip it. After a tool's clip the driver calls `agentSpeechEnded()` once it has been played.
   */
  | { type: 'play_recording'; recording_id: string; purpose: 'greeting' | 'transition_speech' | 'tool_message' }
  | { type: 'node_entered'; node_id: string; node_name: string; previous_node_id: string | null }
  | { type: 'transition'; from_node_id: string; to_node_id: string; function_name: string; edge_id: string }
  /** One completion's tokens, for the usage_info accumulator (key `<service>|||<model>`). */
  | { type: 'usage'; ref: ModelRef; usage: TokenUsage; purpose: 'conversation' | 'extraction' }
  | { type: 'extraction'; node_id: string; values: Record<string, unknown> }
  | { type: 'warning'; message: string }
  /** `graceful`: let queued speech play out before hanging up; otherwise stop at once. */
  | { type: 'ended'; reason: EndReason; graceful: boolean }

export type ConversationOptions = {
  /** The published (or, for test runs, draft) definition the run is pinned to. */
  definition: WorkflowDefinition
  /**
   * `max_call_duration_seconds`; `max_user_idle_timeout_seconds` (or the reference's `max_user_idle_timeout`), default
   * 10; `user_idle_reprompts`: how many times the agent asks whether the caller is still there before saying goodbye
   * (default 1).
   */
  configurations: WorkflowConfigurations
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
  /** The organization's tools the nodes name (`tool_uuids`) and how to run HTTP ones (src/tools/runtime.ts). */
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

export type Conversation = {
  readonly ended: boolean
  start(): Promise<TranscriptTurn[]>
  userMessage(text: string, timing?: UserTiming): Promise<TranscriptTurn[]>
  /** True when the agent may be interrupted now: not the greeting or transition speech, the node allows it, not ending. */
  canInterrupt(turn?: number): boolean
  /**
   * The caller barged in. `turn` (default: the turn being spoken, else the latest agent turn) becomes interrupted with
   * `heardText` (default: everything streamed so far); the pending LLM stream is aborted. False when not interruptible.
   */
  interrupt(options?: { heardText?: string; turn?: number }): Promise<boolean>
  noteUserActivity(atMs?: number): void
  agentSpeechEnded(options?: { turn?: number; atMs?: number }): void
  tick(): Promise<TranscriptTurn[]>
  end(reason: EndReason): Promise<void>
  record(): ConversationRecord
}

const DEFAULT_IDLE_TIMEOUT_SECONDS = 10
const DEFAULT_IDLE_REPROMPTS = 1
const DEFAULT_DELAYED_START_SECONDS = 2
const FINAL_EXTRACTION_WAIT_MS = 30_000
/** Bounds tool-call chains in one reply, so a model calling functions forever cannot hang the call. */
const MAX_COMPLETIONS_PER_REPLY = 6
/** After an end_call goodbye, how long to wait for the driver to report it heard before ending anyway. */
const GOODBYE_HEARD_TIMEOUT_MS = 60_000

/** gathered_context keys the runtime owns: an extracted variable of that name stays in `extracted_variables` only. */
const RUNTIME_KEYS = new Set(['nodes_visited', 'extracted_variables', 'mapped_call_disposition', 'call_tags'])

const NO_FINAL_EXTRACTION = new Set<EndReason>(['pipeline_error', 'voicemail_detected'])
const IMMEDIATE_ENDS = new Set<EndReason>(['call_duration_exceeded', 'user_hangup', 'call_transferred', 'voicemail_detected', 'pipeline_error', 'model_error'])

const STILL_THERE_INSTRUCTION =
  'The caller has been silent for a while. Briefly ask whether they are still there, in the language of the conversation.'
const IDLE_GOODBYE_INSTRUCTION =
  'The caller is still silent. Say a short, polite goodbye in the language of the conversation; the call ends after it.'

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
  })

const positiveNumber = (value: unknown): number | undefined => (typeof value === 'number' && value > 0 ? value : undefined)
const nonNegativeInteger = (value: unknown): number | undefined => (Number.isInteger(value) && (value as number) >= 0 ? (value as number) : undefined)

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

type OpenTurn = { index: number; text: string; heardText?: string }

/** A reply being produced: its abort switch, the turn currently streaming, if any, and whether a tool call is running. */
type PendingReply = { controller: AbortController; done: Promise<void>; open: OpenTurn | null; toolRunning: boolean }

/**
 * A tool ended the conversation (end_call, transfer): nothing more is asked of the model, and the end comes once what
 * was said last has been heard (`afterTurn`, or any played clip when null), unless nothing needs to be.
 */
type Closing = { reason: EndReason; disposition: string | null; awaitHeard: boolean; afterTurn: number | null; since: number }

type PendingExtraction = { names: string[]; promise: Promise<void> }

type ReplyOptions = { instruction?: string; offerFunctions?: boolean }

export function createConversation(options: ConversationOptions): Conversation {
  const { clock, onEvent, llm } = options
  const extractionLlm = options.extractionLlm ?? llm
  const awaitSpeechEnd = options.awaitSpeechEnd ?? true
  const canTransfer = options.transferCall !== undefined
  const tools = offeredTools(options.tools?.byUuid ?? new Map(), canTransfer)
  const sleep = options.sleep ?? defaultSleep
  const graph: ConversationGraph = buildGraph(options.definition)
  const maxDurationMs = options.configurations.max_call_duration_seconds * 1000
  const idleTimeoutMs = 1000 * (positiveNumber(options.configurations.max_user_idle_timeout_seconds)
    ?? positiveNumber(options.configurations.max_user_idle_timeout) ?? DEFAULT_IDLE_TIMEOUT_SECONDS)
  const idleRules = options.idleRules ?? true
  const idleReprompts = nonNegativeInteger(options.configurations.user_idle_reprompts) ?? DEFAULT_IDLE_REPROMPTS

  let state: ConversationRecord['state'] = 'initialized'
  let startedAt: number | null = null
  let endedAt: number | null = null
  let endReason: EndReason | null = null
  let finishing: Promise<void> | null = null
  let node: WorkflowNode = graph.start
  let pending: PendingReply | null = null
  let idleSince: number | null = null
  let idleStrikes = 0
  let closing: Closing | null = null
  /** The latest agent turn the driver reported heard. */
  let heardUpTo = -1

  const history: ChatMessage[] = []
  const transcript: TranscriptTurn[] = []
  const turnKinds = new Map<number, AgentSpeechKind>()
  /** The LLM-context message of each agent turn that is in the context, so a barge-in can rewrite it. */
  const turnMessages = new Map<number, Extract<ChatMessage, { role: 'assistant' }>>()
  const recordedEvents: RealtimeFeedbackEvent[] = []
  const transitionCallIds = new Set<string>()
  const pendingExtractions = new Set<PendingExtraction>()
  const extracted: Record<string, unknown> = {}
  const gathered: Record<string, unknown> = { nodes_visited: [] as string[], extracted_variables: extracted }
  const warnings = [...unsupportedFeatureWarnings(options.definition), ...toolWarnings(options.definition, options.tools?.byUuid ?? new Map(), canTransfer)]
  const toolCalls: ToolCallLog[] = []

  const sinceStart = (at: number) => at - (startedAt ?? at)
  const warn = (message: string) => {
    warnings.push(message)
    onEvent({ type: 'warning', message })
  }
  const recordEvent = (type: string, payload: Record<string, unknown>) =>
    recordedEvents.push({ type, payload, timestamp: new Date(clock.now()).toISOString(), node_id: node.id, node_name: nodeName(node) })

  const render = (text: string) => renderTemplate(text, { ...options.variables, ...extracted }, new Date(clock.now()))

  function systemPrompt(instruction?: string): string {
    const parts = [
      graph.globalPrompt !== null && nodeFlag(node, 'add_global_prompt', true) ? graph.globalPrompt : '',
      nodeText(node, 'prompt'),
    ].map((text) => render(text).trim()).filter(Boolean)
    if (instruction) parts.push(instruction)
    return parts.join('\n\n')
  }

  // ---- agent turns ----

  function openTurn(kind: AgentSpeechKind): OpenTurn {
    const now = sinceStart(clock.now())
    const index = transcript.push({ role: 'agent', text: '', start_ms: now, end_ms: now, node_id: node.id, interrupted: false }) - 1
    turnKinds.set(index, kind)
    return { index, text: '' }
  }

  function streamText(turn: OpenTurn, text: string) {
    turn.text += text
    onEvent({ type: 'agent_text', turn: turn.index, text, kind: turnKinds.get(turn.index)! })
  }

  function closeTurn(turn: OpenTurn, interrupted: boolean) {
    const entry = transcript[turn.index]
    entry.text = interrupted ? turn.heardText ?? turn.text : turn.text
    entry.interrupted = interrupted
    entry.end_ms = sinceStart(clock.now())
    onEvent({ type: 'agent_turn_done', turn: turn.index, text: entry.text, interrupted })
  }

  function speak(text: string, kind: AgentSpeechKind, inContext: boolean) {
    const turn = openTurn(kind)
    streamText(turn, text)
    closeTurn(turn, false)
    if (!inContext) return
    const message = { role: 'assistant' as const, content: text }
    history.push(message)
    turnMessages.set(turn.index, message)
  }

  /** A barge-in after the turn's text was complete: the context keeps only what the caller heard. */
  function rewriteClosedTurn(index: number, heardText: string) {
    const entry = transcript[index]
    entry.text = heardText
    entry.interrupted = true
    entry.end_ms = sinceStart(clock.now())
    const message = turnMessages.get(index)
    if (!message) return
    if (heardText !== '' || message.toolCalls?.length) message.content = heardText || null
    else history.splice(history.indexOf(message), 1)
  }

  // ---- nodes, transitions, extraction ----

  function enterNode(target: WorkflowNode, previous: WorkflowNode | null) {
    node = target
    ;(gathered.nodes_visited as string[]).push(nodeName(target))
    recordEvent('rtf-node-transition', {
      node_id: target.id,
      node_name: nodeName(target),
      previous_node_id: previous?.id ?? null,
      previous_node_name: previous ? nodeName(previous) : null,
      allow_interrupt: nodeFlag(target, 'allow_interrupt', true),
    })
    onEvent({ type: 'node_entered', node_id: target.id, node_name: nodeName(target), previous_node_id: previous?.id ?? null })
  }

  function startExtraction(from: WorkflowNode) {
    const variables: ExtractionVariable[] = extractionVariables(from)
    if (variables.length === 0) return
    const messages = extractionMessages(variables, render(nodeText(from, 'extraction_prompt')), historyForExtraction(history, transitionCallIds))
    const extraction: PendingExtraction = {
      names: variables.map(({ name }) => name),
      promise: extractVariables(extractionLlm, variables, messages, (ref, usage) => onEvent({ type: 'usage', ref, usage, purpose: 'extraction' }))
        .then((result) => {
          if (state === 'completed') return
          if (!result.ok) return warn(`Extraction for node '${nodeName(from)}' failed: ${result.error}`)
          Object.assign(extracted, result.values)
          for (const [name, value] of Object.entries(result.values)) if (!RUNTIME_KEYS.has(name)) gathered[name] = value
          onEvent({ type: 'extraction', node_id: from.id, values: result.values })
        })
        .finally(() => pendingExtractions.delete(extraction)),
    }
    pendingExtractions.add(extraction)
  }

  /** Waits for running extractions whose values the current prompts mention, so `{{name}}` is filled when it can be. */
  async function awaitMentionedExtractions() {
    const prompts = `${graph.globalPrompt ?? ''}\n${nodeText(node, 'prompt')}`
    const mentioned = [...pendingExtractions].filter(({ names }) =>
      names.some((name) => new RegExp(`\\{\\{\\s*${escapeRegExp(name)}\\s*[|}]`, 'i').test(prompts)))
    await Promise.all(mentioned.map(({ promise }) => promise))
  }

  function takeTransition(fn: Extract<NodeFunction, { kind: 'transition' }>, call: ToolCall) {
    const from = node
    const target = graph.nodes.get(fn.edge.target)!
    transitionCallIds.add(call.id)
    startExtraction(from)
    onEvent({ type: 'transition', from_node_id: from.id, to_node_id: target.id, function_name: fn.spec.name, edge_id: fn.edge.id })
    const { transition_speech_type: speechType, transition_speech_recording_id: recordingId } = fn.edge.data
    if (speechType === 'audio') {
      if (recordingId != null && recordingId !== '') onEvent({ type: 'play_recording', recording_id: String(recordingId), purpose: 'transition_speech' })
    } else {
      const speech = render(fn.edge.data.transition_speech ?? '').trim()
      if (speech) speak(speech, 'transition_speech', false)
    }
    enterNode(target, from)
  }

  // ---- the LLM ----

  /** One completion under the current node. True when it called functions, so the model must speak again (not when aborted). */
  async function complete(current: PendingReply, { instruction, offerFunctions = true }: ReplyOptions): Promise<boolean> {
    await awaitMentionedExtractions()
    if (current.controller.signal.aborted) return false
    const functions = offerFunctions ? nodeFunctions(graph, node, tools) : []
    const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt(instruction) }, ...history]
    const { signal } = current.controller
    const requestedAt = clock.now()
    const calls: ToolCall[] = []
    try {
      const stream = llm.stream({ messages, ...(functions.length ? { tools: functions.map(({ spec }) => spec) } : {}), signal })
      for await (const event of stream) {
        if (signal.aborted) break
        if (event.type === 'text' && event.text !== '') {
          if (!current.open) {
            current.open = openTurn('reply')
            recordEvent('rtf-ttfb-metric', { ttfb_seconds: (clock.now() - requestedAt) / 1000, processor: llm.ref.service, model: llm.ref.model })
          }
          streamText(current.open, event.text)
        } else if (event.type === 'tool_call') calls.push(event.call)
        else if (event.type === 'done') onEvent({ type: 'usage', ref: llm.ref, usage: event.usage, purpose: 'conversation' })
      }
    } catch (error) {
      if (!signal.aborted) throw error
    }
    const turn = current.open
    current.open = null
    if (signal.aborted) {
      if (turn) {
        closeTurn(turn, true)
        const heard = transcript[turn.index].text
        if (heard) {
          const message = { role: 'assistant' as const, content: heard }
          history.push(message)
          turnMessages.set(turn.index, message)
        }
      }
      return false
    }
    if (turn) closeTurn(turn, false)
    if (!turn && calls.length === 0) return false
    const message = { role: 'assistant' as const, content: turn?.text || null, ...(calls.length ? { toolCalls: calls } : {}) }
    history.push(message)
    if (turn) turnMessages.set(turn.index, message)
    let moved = false
    for (const call of calls) {
      recordEvent('rtf-function-call-start', { function_name: call.name, tool_call_id: call.id, arguments: call.arguments })
      const fn = functions.find(({ spec }) => spec.name === call.name)
      let result: Record<string, unknown>
      if (!fn) result = { status: 'error', error: `There is no function named ${call.name}` }
      else if (moved) result = { status: 'ignored', reason: 'The conversation already moved to another step' }
      else if (fn.kind === 'transition') {
        takeTransition(fn, call)
        moved = true
        result = { status: 'done' }
      } else {
        const said = { turn: turn?.index ?? null, recording: false }
        current.toolRunning = true
        const outcome = await runToolCall(fn, call, toolHost(current, said), node.id).finally(() => { current.toolRunning = false })
        toolCalls.push(outcome.log)
        result = outcome.result
        if (outcome.effect.kind !== 'none') {
          moved = true
          beginClosing(outcome.effect, said)
        }
      }
      const content = JSON.stringify(result)
      history.push({ role: 'tool', toolCallId: call.id, content })
      recordEvent('rtf-function-call-end', { function_name: call.name, tool_call_id: call.id, result: content })
    }
    return calls.length > 0 && closing === null
  }

  function toolHost(current: PendingReply, said: { turn: number | null; recording: boolean }): ToolCallHost {
    return {
      tools: options.tools,
      transferCall: options.transferCall,
      say(message) {
        if ('text' in message) {
          speak(message.text, 'tool_message', false)
          said.turn = transcript.length - 1
        } else {
          onEvent({ type: 'play_recording', recording_id: message.recordingId, purpose: 'tool_message' })
          said.recording = true
        }
      },
      render,
      variables: () => ({ ...options.variables, ...extracted, gathered_context: structuredClone(gathered) }),
      now: () => clock.now(),
      signal: current.controller.signal,
    }
  }

  function beginClosing(effect: Exclude<ToolEffect, { kind: 'none' }>, said: { turn: number | null; recording: boolean }) {
    if (effect.kind === 'transferred') {
      gathered.transfer_destination = effect.destination
      closing = { reason: 'call_transferred', disposition: null, awaitHeard: false, afterTurn: null, since: clock.now() }
      return
    }
    const unheard = said.recording || (said.turn !== null && said.turn > heardUpTo)
    closing = { reason: 'end_call_tool', disposition: effect.disposition, awaitHeard: awaitSpeechEnd && unheard, afterTurn: said.turn, since: clock.now() }
  }

  /** The agent's reply: completions until it stops calling functions; entering an End node ends the call after it. */
  async function reply(replyOptions: ReplyOptions = {}): Promise<void> {
    let settle!: () => void
    const current: PendingReply = { controller: new AbortController(), done: new Promise((resolve) => { settle = resolve }), open: null, toolRunning: false }
    pending = current
    idleSince = null
    try {
      for (let completions = 1; await complete(current, replyOptions); completions++) {
        if (completions === MAX_COMPLETIONS_PER_REPLY) {
          warn(`The LLM called functions ${completions} times in a row; its reply was cut short`)
          break
        }
      }
      if (!current.controller.signal.aborted && closing && !closing.awaitHeard) await finish(closing.reason, closing.disposition)
      else if (!current.controller.signal.aborted && !closing && node.type === 'endCall') await finish('user_qualified')
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      recordEvent('rtf-pipeline-error', { error: message, fatal: true, processor: llm.ref.service })
      warn(`The LLM failed: ${message}`)
      await finish('pipeline_error')
    } finally {
      pending = null
      if (!endReason) idleSince = clock.now()
      settle()
    }
  }

  /** Agent turns added to the transcript while `action` ran. */
  async function turnsDuring(action: () => Promise<void>): Promise<TranscriptTurn[]> {
    const before = transcript.length
    await action()
    return structuredClone(transcript.slice(before).filter(({ role }) => role === 'agent'))
  }

  // ---- the end ----

  /** `disposition`: the end_call tool's reason, which wins over an extracted one. */
  function finish(reason: EndReason, disposition: string | null = null): Promise<void> {
    finishing ??= (async () => {
      endReason = reason
      if (!NO_FINAL_EXTRACTION.has(reason)) startExtraction(node)
      const stopWaiting = new AbortController()
      await Promise.race([Promise.all([...pendingExtractions].map(({ promise }) => promise)), sleep(FINAL_EXTRACTION_WAIT_MS, stopWaiting.signal)])
      stopWaiting.abort()
      if (pendingExtractions.size > 0) warn('Variable extraction did not finish before the call ended')
      const fields = dispositionFields(disposition ? { ...gathered, call_disposition: disposition } : gathered, reason, transcript.some(({ role }) => role === 'user'))
      if (disposition && !fields.call_tags.includes(reason)) fields.call_tags.push(reason)
      Object.assign(gathered, fields)
      startedAt ??= clock.now()
      endedAt = clock.now()
      state = 'completed'
      onEvent({ type: 'ended', reason, graceful: !IMMEDIATE_ENDS.has(reason) })
    })()
    return finishing
  }

  async function stopPendingReply(heardText?: string) {
    const current = pending
    if (!current) return
    if (current.open && heardText !== undefined) current.open.heardText = heardText
    current.controller.abort()
    await current.done
  }

  const isActive = () => state === 'running' && endReason === null && closing === null

  function latestAgentTurn(): number | undefined {
    for (let index = transcript.length - 1; index >= 0; index--) if (transcript[index].role === 'agent') return index
    return undefined
  }

  function canInterrupt(turn?: number): boolean {
    const index = turn ?? pending?.open?.index ?? latestAgentTurn()
    if (!isActive() || pending?.toolRunning || index === undefined || turnKinds.get(index) !== 'reply') return false
    const spokenIn = graph.nodes.get(transcript[index].node_id)
    return spokenIn ? nodeFlag(spokenIn, 'allow_interrupt', true) : true
  }

  return {
    get ended() {
      return endReason !== null
    },

    start: () => turnsDuring(async () => {
      if (state !== 'initialized') return
      state = 'running'
      startedAt = clock.now()
      for (const message of warnings) onEvent({ type: 'warning', message })
      if (options.delayedStart !== false && nodeFlag(graph.start, 'delayed_start', false)) {
        const seconds = positiveNumber(graph.start.data.delayed_start_duration) ?? DEFAULT_DELAYED_START_SECONDS
        await sleep(seconds * 1000, new AbortController().signal)
        if (!isActive()) return
      }
      enterNode(graph.start, null)
      const opening = openingOf(graph.start, options.variables, render)
      if (opening?.kind === 'recording') onEvent({ type: 'play_recording', recording_id: opening.recordingId, purpose: 'greeting' })
      else if (opening?.kind === 'text') speak(opening.text, 'greeting', true)
      else await reply()
      idleSince ??= clock.now()
    }),

    async userMessage(text, timing = {}) {
      // The caller is muted while a tool runs: the message waits for the agent's answer to the tool (not part of its turns).
      while (pending?.toolRunning) await pending.done
      return turnsDuring(async () => {
        if (!isActive() || text.trim() === '') return
        await stopPendingReply()
        if (!isActive()) return
        const now = clock.now()
        transcript.push({
          role: 'user',
          text: text.trim(),
          start_ms: sinceStart(timing.startMs ?? now),
          end_ms: sinceStart(timing.endMs ?? now),
          node_id: node.id,
          interrupted: false,
        })
        history.push({ role: 'user', content: text.trim() })
        idleStrikes = 0
        await reply()
      })
    },

    canInterrupt,

    async interrupt({ heardText, turn } = {}) {
      const index = turn ?? pending?.open?.index ?? latestAgentTurn()
      if (index === undefined || !canInterrupt(index)) return false
      if (pending?.open?.index === index) await stopPendingReply(heardText)
      else {
        rewriteClosedTurn(index, heardText ?? transcript[index].text)
        await stopPendingReply()
      }
      return true
    },

    noteUserActivity(atMs) {
      idleStrikes = 0
      if (isActive() && !pending) idleSince = atMs ?? clock.now()
    },

    agentSpeechEnded({ turn, atMs } = {}) {
      const at = atMs ?? clock.now()
      const index = turn ?? latestAgentTurn() ?? -1
      const entry = transcript[index]
      if (entry?.role === 'agent' && !entry.interrupted) entry.end_ms = Math.max(entry.end_ms, sinceStart(at))
      heardUpTo = Math.max(heardUpTo, index)
      if (closing?.awaitHeard && (closing.afterTurn === null || index >= closing.afterTurn)) void finish(closing.reason, closing.disposition)
      if (isActive() && !pending) idleSince = at
    },

    tick: () => turnsDuring(async () => {
      if (closing?.awaitHeard && clock.now() - closing.since >= GOODBYE_HEARD_TIMEOUT_MS) await finish(closing.reason, closing.disposition)
      if (!isActive() || startedAt === null) return
      const now = clock.now()
      if (now - startedAt >= maxDurationMs) {
        await stopPendingReply()
        await finish('call_duration_exceeded')
        return
      }
      if (!idleRules || pending || idleSince === null || now - idleSince < idleTimeoutMs) return
      idleStrikes += 1
      if (idleStrikes <= idleReprompts) return reply({ instruction: STILL_THERE_INSTRUCTION, offerFunctions: false })
      await reply({ instruction: IDLE_GOODBYE_INSTRUCTION, offerFunctions: false })
      await finish('user_idle_max_duration_exceeded')
    }),

    async end(reason) {
      if (endReason) return finishing ?? undefined
      await stopPendingReply()
      // A hang-up while the goodbye plays still ends the call the way the tool did.
      await (closing ? finish(closing.reason, closing.disposition) : finish(reason))
    },

    record(): ConversationRecord {
      const end = endedAt ?? clock.now()
      return structuredClone({
        state,
        started_at: startedAt === null ? null : new Date(startedAt).toISOString(),
        ended_at: endedAt === null ? null : new Date(endedAt).toISOString(),
        end_reason: endReason,
        call_duration_seconds: startedAt === null ? 0 : Math.round((end - startedAt) / 1000),
        current_node_id: state === 'initialized' ? null : node.id,
        gathered_context: gathered,
        logs: { transcript, realtime_feedback_events: feedbackEvents(), warnings, tool_calls: toolCalls },
      })
    },
  }

  /** The recorded events plus one per transcript turn, in time order. */
  function feedbackEvents(): RealtimeFeedbackEvent[] {
    const base = startedAt ?? 0
    const iso = (offset: number) => new Date(base + offset).toISOString()
    const turnEvents = transcript.map((turn, index): RealtimeFeedbackEvent => {
      const spokenIn = graph.nodes.get(turn.node_id)
      const timing = { timestamp: iso(turn.start_ms), end_timestamp: iso(turn.end_ms) }
      return {
        type: turn.role === 'user' ? 'rtf-user-transcription' : 'rtf-bot-text',
        payload: turn.role === 'user' ? { text: turn.text, final: true, ...timing } : { text: turn.text, ...timing, interrupted: turn.interrupted },
        timestamp: timing.timestamp,
        turn: index,
        node_id: turn.node_id,
        node_name: spokenIn ? nodeName(spokenIn) : turn.node_id,
      }
    })
    return [...recordedEvents, ...turnEvents].sort((a, b) => a.timestamp.localeCompare(b.timestamp))
  }
}

type Opening = { kind: 'text'; text: string } | { kind: 'recording'; recordingId: string }

/**
 * What the Start node says first: a valid per-contact `greeting_override` (`{type:"text", text}` or
 * `{type:"audio", recording_id}`), else the node's greeting; undefined when the LLM should speak first.
 */
function openingOf(start: WorkflowNode, variables: Record<string, unknown>, render: (text: string) => string): Opening | undefined {
  const override = variables.greeting_override
  const recording = (id: unknown): Opening | undefined =>
    (typeof id === 'string' && id !== '') || typeof id === 'number' ? { kind: 'recording', recordingId: String(id) } : undefined
  const text = (value: unknown): Opening | undefined => {
    const rendered = typeof value === 'string' ? render(value).trim() : ''
    return rendered ? { kind: 'text', text: rendered } : undefined
  }
  if (isPlainObject(override)) {
    const chosen = override.type === 'audio' ? recording(override.recording_id) : override.type === 'text' ? text(override.text) : undefined
    if (chosen) return chosen
  }
  return start.data.greeting_type === 'audio' ? recording(start.data.greeting_recording_id) : text(start.data.greeting)
}
