/**
 * The conversation runtime: walks an agent's graph with an LLM, for any channel. The text chat route and the voice
 * pipeline drive the same object; it knows no database, HTTP or audio.
 *
 *   const conversation = createConversation({ definition, configurations, variables, llm, clock, onEvent })
 *   await conversation.start()                      // delayed start, Start node, greeting (or the LLM speaks first)
 *   await conversation.userMessage(text, timing?)   // a final user utterance → the agent's reply, following transitions
 *   await conversation.interrupt({ heardText })     // barge-in: cancels the LLM stream, keeps what was heard
 *   await conversation.tick()                       // call about once a second: the idle rules
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
 * Its parts, each plain functions over one state object (engine-state.ts): agent-turns.ts (the transcript's agent turns,
 * the record), nodes.ts (the graph walk, extraction), reply.ts (LLM completions and function calls), closing.ts (the
 * end), limits.ts (the idle rules on `tick`; a call's time limit is calls/time-limit.ts').
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
import { nodeFlag } from './graph'
import { playRecording, recordOf, rewriteClosedTurn, speak } from './agent-turns'
import { finish, finishClosing, stopPendingReply } from './closing'
import {
  createEngineState,
  isActive,
  latestAgentTurn,
  positiveNumber,
  render,
  sinceStart,
  type ConversationOptions,
  type EngineState,
  type UserTiming,
} from './engine-state'
import { applyLimits, limitsOf } from './limits'
import { enterNode, openingOf } from './nodes'
import type { ConversationRecord, EndReason, TranscriptTurn } from './record'
import { reply } from './reply'

export type { AgentSpeechKind, ConversationEvent, ConversationOptions, UserTiming } from './engine-state'

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

const DEFAULT_DELAYED_START_SECONDS = 2

export function createConversation(options: ConversationOptions): Conversation {
  const s = createEngineState(options)
  const limits = limitsOf(s)
  return {
    get ended() {
      return s.endReason !== null
    },
    start: () => turnsDuring(s, () => start(s)),
    userMessage: (text, timing = {}) => userMessage(s, text, timing),
    canInterrupt: (turn) => canInterrupt(s, turn),
    async interrupt({ heardText, turn } = {}) {
      const index = turn ?? s.pending?.open?.index ?? latestAgentTurn(s)
      if (index === undefined || !canInterrupt(s, index)) return false
      if (s.pending?.open?.index === index) await stopPendingReply(s, heardText)
      else {
        rewriteClosedTurn(s, index, heardText ?? s.transcript[index].text)
        await stopPendingReply(s)
      }
      return true
    },
    noteUserActivity(atMs) {
      s.idleStrikes = 0
      if (isActive(s) && !s.pending) s.idleSince = atMs ?? s.clock.now()
    },
    agentSpeechEnded: (heard) => agentSpeechEnded(s, heard),
    tick: () => turnsDuring(s, () => applyLimits(s, limits)),
    async end(reason) {
      if (s.endReason) return s.finishing ?? undefined
      // A hang-up while the goodbye plays still ends the call the way the tool did.
      s.ending ??= stopPendingReply(s).then(() => (s.closing ? finishClosing(s) : finish(s, reason)))
      return s.ending
    },
    record: (): ConversationRecord => recordOf(s),
  }
}

/** Agent turns added to the transcript while `action` ran. */
async function turnsDuring(s: EngineState, action: () => Promise<void>): Promise<TranscriptTurn[]> {
  const before = s.transcript.length
  await action()
  return structuredClone(s.transcript.slice(before).filter(({ role }) => role === 'agent'))
}

/** Delayed start, the Start node, then its greeting (or a recording, or the LLM speaking first). */
async function start(s: EngineState): Promise<void> {
  if (s.phase !== 'initialized') return
  s.phase = 'running'
  s.startedAt = s.clock.now()
  for (const message of s.warnings) s.onEvent({ type: 'warning', message })
  const { start: startNode } = s.graph
  if (s.options.delayedStart !== false && nodeFlag(startNode, 'delayed_start', false)) {
    const seconds = positiveNumber(startNode.data.delayed_start_duration) ?? DEFAULT_DELAYED_START_SECONDS
    await s.sleep(seconds * 1000, new AbortController().signal)
    if (!isActive(s)) return
  }
  enterNode(s, startNode, null)
  const opening = openingOf(startNode, s.options.variables, (text) => render(s, text))
  if (opening?.kind === 'text') speak(s, opening.text, 'greeting', true)
  // A missing recording (a CSV row naming none): the model speaks first.
  else if (opening?.kind !== 'recording' || !playRecording(s, opening.recordingId, 'greeting', true)) await reply(s)
  s.idleSince ??= s.clock.now()
}

async function userMessage(s: EngineState, text: string, timing: UserTiming): Promise<TranscriptTurn[]> {
  // The caller is muted while a tool runs: the message waits for the agent's answer to the tool (not part of its turns).
  while (s.pending?.toolRunning) await s.pending.done
  return turnsDuring(s, async () => {
    if (!isActive(s) || text.trim() === '') return
    await stopPendingReply(s)
    if (!isActive(s)) return
    const now = s.clock.now()
    s.transcript.push({
      role: 'user',
      text: text.trim(),
      start_ms: sinceStart(s, timing.startMs ?? now),
      end_ms: sinceStart(s, timing.endMs ?? now),
      node_id: s.node.id,
      interrupted: false,
    })
    s.history.push({ role: 'user', content: text.trim() })
    s.idleStrikes = 0
    await reply(s)
  })
}

function canInterrupt(s: EngineState, turn?: number): boolean {
  const index = turn ?? s.pending?.open?.index ?? latestAgentTurn(s)
  if (!isActive(s) || s.pending?.toolRunning || index === undefined || s.turnKinds.get(index) !== 'reply') return false
  const spokenIn = s.graph.nodes.get(s.transcript[index].node_id)
  return spokenIn ? nodeFlag(spokenIn, 'allow_interrupt', true) : true
}

function agentSpeechEnded(s: EngineState, { turn, atMs }: { turn?: number; atMs?: number } = {}): void {
  const at = atMs ?? s.clock.now()
  const index = turn ?? latestAgentTurn(s) ?? -1
  const entry = s.transcript[index]
  if (entry?.role === 'agent' && !entry.interrupted) entry.end_ms = Math.max(entry.end_ms, sinceStart(s, at))
  s.heardUpTo = Math.max(s.heardUpTo, index)
  if (s.closing?.awaitHeard && (s.closing.afterTurn === null || index >= s.closing.afterTurn)) void finishClosing(s)
  if (isActive(s) && !s.pending) s.idleSince = at
}
