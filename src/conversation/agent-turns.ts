/**
 * The transcript's agent turns as they are spoken (opened, streamed, closed, cut by a barge-in), and the record the
 * conversation leaves: plain data to persist on the run.
 */
import { nodeName } from './graph'
import type { ConversationRecord, RealtimeFeedbackEvent } from './record'
import { sinceStart, warn, type AgentSpeechKind, type EngineState, type OpenTurn } from './engine-state'

export function openTurn(s: EngineState, kind: AgentSpeechKind): OpenTurn {
  const now = sinceStart(s, s.clock.now())
  const index =
    s.transcript.push({ role: 'agent', text: '', start_ms: now, end_ms: now, node_id: s.node.id, interrupted: false }) -
    1
  s.turnKinds.set(index, kind)
  return { index, text: '' }
}

export function streamText(s: EngineState, turn: OpenTurn, text: string, recordingId?: string): void {
  turn.text += text
  s.onEvent({
    type: 'agent_text',
    turn: turn.index,
    text,
    kind: s.turnKinds.get(turn.index)!,
    ...(recordingId ? { recording_id: recordingId } : {}),
  })
}

export function closeTurn(s: EngineState, turn: OpenTurn, interrupted: boolean): void {
  const entry = s.transcript[turn.index]
  entry.text = interrupted ? (turn.heardText ?? turn.text) : turn.text
  entry.interrupted = interrupted
  entry.end_ms = sinceStart(s, s.clock.now())
  s.onEvent({ type: 'agent_turn_done', turn: turn.index, text: entry.text, interrupted })
}

/** A whole agent turn at once (greeting, transition speech, a tool's message); `inContext`: the LLM sees it. */
export function speak(
  s: EngineState,
  text: string,
  kind: AgentSpeechKind,
  inContext: boolean,
  recordingId?: string,
): void {
  const turn = openTurn(s, kind)
  streamText(s, turn, text, recordingId)
  closeTurn(s, turn, false)
  if (!inContext) return
  const message = { role: 'assistant' as const, content: text }
  s.history.push(message)
  s.turnMessages.set(turn.index, message)
}

/**
 * A recording as a whole agent turn: its transcript (or its name) is the turn's text, the clip what voice channels
 * play. False, with a warning, when the run has no such recording (deleted since, or a CSV row naming none).
 */
export function playRecording(s: EngineState, recordingId: string, kind: AgentSpeechKind, inContext: boolean): boolean {
  const recording = s.options.recordings?.get(recordingId)
  if (!recording) {
    warn(s, `Recording '${recordingId}' (${kind}) does not exist in this organization: not played`)
    return false
  }
  speak(s, recording.transcript.trim() || `[recording ${recordingId}]`, kind, inContext, recordingId)
  return true
}

/** A barge-in after the turn's text was complete: the context keeps only what the caller heard. */
export function rewriteClosedTurn(s: EngineState, index: number, heardText: string): void {
  const entry = s.transcript[index]
  entry.text = heardText
  entry.interrupted = true
  entry.end_ms = sinceStart(s, s.clock.now())
  const message = s.turnMessages.get(index)
  if (!message) return
  if (heardText !== '' || message.toolCalls?.length) message.content = heardText || null
  else s.history.splice(s.history.indexOf(message), 1)
}

export function recordOf(s: EngineState): ConversationRecord {
  const end = s.endedAt ?? s.clock.now()
  return structuredClone({
    state: s.phase,
    started_at: s.startedAt === null ? null : new Date(s.startedAt).toISOString(),
    ended_at: s.endedAt === null ? null : new Date(s.endedAt).toISOString(),
    end_reason: s.endReason,
    call_duration_seconds: s.startedAt === null ? 0 : Math.round((end - s.startedAt) / 1000),
    current_node_id: s.phase === 'initialized' ? null : s.node.id,
    gathered_context: s.gathered,
    logs: {
      transcript: s.transcript,
      realtime_feedback_events: feedbackEvents(s),
      warnings: s.warnings,
      tool_calls: s.toolCalls,
    },
  })
}

/** The recorded events plus one per transcript turn, in time order. */
function feedbackEvents(s: EngineState): RealtimeFeedbackEvent[] {
  const base = s.startedAt ?? 0
  const iso = (offset: number) => new Date(base + offset).toISOString()
  const turnEvents = s.transcript.map((turn, index): RealtimeFeedbackEvent => {
    const spokenIn = s.graph.nodes.get(turn.node_id)
    const timing = { timestamp: iso(turn.start_ms), end_timestamp: iso(turn.end_ms) }
    return {
      type: turn.role === 'user' ? 'rtf-user-transcription' : 'rtf-bot-text',
      payload:
        turn.role === 'user'
          ? { text: turn.text, final: true, ...timing }
          : { text: turn.text, ...timing, interrupted: turn.interrupted },
      timestamp: timing.timestamp,
      turn: index,
      node_id: turn.node_id,
      node_name: spokenIn ? nodeName(spokenIn) : turn.node_id,
    }
  })
  return [...s.recordedEvents, ...turnEvents].sort((a, b) => a.timestamp.localeCompare(b.timestamp))
}
