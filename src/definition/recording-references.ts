/**
 * Where agents and tools name a recording. One key everywhere: the organization's `recording_id` string (the
 * reference platform mixes it with integer primary keys and breaks on the mix).
 */
import type { AgentDefinition } from './definition'

/** `RECORDING_ID: <id>` in a node prompt: the model may answer with that clip (see conversation/recording-replies.ts). */
export const PROMPT_MENTION = /RECORDING_ID:\s*([A-Za-z0-9_-]{1,64})(?![A-Za-z0-9_-])/g

export type RecordingMention = { recordingId: string; kind: 'node' | 'edge'; id: string; field: string }

const named = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : null

/** Every recording a definition plays: audio greetings, audio transition speech, clips its prompts offer. */
export function definitionMentions(definition: AgentDefinition): RecordingMention[] {
  const mentions: RecordingMention[] = []
  for (const node of definition.nodes) {
    const greeting = node.data.greeting_type === 'audio' ? named(node.data.greeting_recording_id) : null
    if (greeting)
      mentions.push({ recordingId: greeting, kind: 'node', id: node.id, field: 'data.greeting_recording_id' })
    if (typeof node.data.prompt === 'string') {
      for (const match of node.data.prompt.matchAll(PROMPT_MENTION))
        mentions.push({ recordingId: match[1], kind: 'node', id: node.id, field: 'data.prompt' })
    }
  }
  for (const edge of definition.edges) {
    const speech =
      edge.data?.transition_speech_type === 'audio' ? named(edge.data.transition_speech_recording_id) : null
    if (speech)
      mentions.push({ recordingId: speech, kind: 'edge', id: edge.id, field: 'data.transition_speech_recording_id' })
  }
  return mentions
}

/** Every recording a run may play: its definition's, its tools' and the contact's `greeting_override`. */
export function runMentions(
  definition: AgentDefinition,
  toolDefinitions: { config: unknown }[],
  variables: Record<string, unknown>,
): string[] {
  const override = variables.greeting_override as { type?: unknown; recording_id?: unknown } | undefined
  const ids = [
    ...definitionMentions(definition).map((mention) => mention.recordingId),
    ...toolDefinitions.map((tool) => toolMention(tool)?.recordingId),
    override?.type === 'audio' ? named(override.recording_id) : null,
  ]
  return [...new Set(ids.filter((id): id is string => typeof id === 'string'))]
}

/** The recording a tool plays, with its config field: an end/transfer message or an HTTP tool's custom message. */
export function toolMention(definition: { config: unknown }): { field: string; recordingId: string } | null {
  const config = definition.config as Record<string, unknown>
  if (config.messageType === 'audio' && named(config.audioRecordingId))
    return { field: 'audioRecordingId', recordingId: named(config.audioRecordingId)! }
  if (config.customMessageType === 'audio' && named(config.customMessageRecordingId)) {
    return { field: 'customMessageRecordingId', recordingId: named(config.customMessageRecordingId)! }
  }
  return null
}
