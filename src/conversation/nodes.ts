/**
 * The graph walk: the system prompt of the current node, entering a node, taking a transition (its speech, the
 * extraction of the node left), the opening line, and the extractions running in the background.
 */
import { offersRecordings, PROMPT_BLOCK } from './recording-replies'
import type { AgentNode } from '../definition/definition'
import { isPlainObject } from '../lib/values'
import type { ToolCall } from '../models/types'
import { playRecording, speak } from './agent-turns'
import {
  extractionMessages,
  extractionVariables,
  extractVariables,
  historyForExtraction,
  type ExtractionVariable,
} from './extraction'
import { nodeFlag, nodeName, nodeText, type NodeFunction } from './graph'
import { recordEvent, render, warn, type EngineState, type PendingExtraction } from './engine-state'

/** gathered_context keys the runtime owns: an extracted variable of that name stays in `extracted_variables` only. */
const RUNTIME_KEYS = new Set(['nodes_visited', 'extracted_variables', 'mapped_call_disposition', 'call_tags'])

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

export function systemPrompt(s: EngineState, instruction?: string): string {
  const parts = [
    s.graph.globalPrompt !== null && nodeFlag(s.node, 'add_global_prompt', true) ? s.graph.globalPrompt : '',
    nodeText(s.node, 'prompt'),
  ]
    .map((text) => render(s, text).trim())
    .filter(Boolean)
  if (offersClips(s)) parts.push(PROMPT_BLOCK)
  if (instruction) parts.push(instruction)
  return parts.join('\n\n')
}

/** Whether the current node's replies may be recordings (`RECORDING_ID:` in its prompt, and recordings to play). */
export const offersClips = (s: EngineState) =>
  (s.options.recordings?.size ?? 0) > 0 && offersRecordings(render(s, nodeText(s.node, 'prompt')))

export function enterNode(s: EngineState, target: AgentNode, previous: AgentNode | null): void {
  s.node = target
  ;(s.gathered.nodes_visited as string[]).push(nodeName(target))
  recordEvent(s, 'rtf-node-transition', {
    node_id: target.id,
    node_name: nodeName(target),
    previous_node_id: previous?.id ?? null,
    previous_node_name: previous ? nodeName(previous) : null,
    allow_interrupt: nodeFlag(target, 'allow_interrupt', true),
  })
  s.onEvent({
    type: 'node_entered',
    node_id: target.id,
    node_name: nodeName(target),
    previous_node_id: previous?.id ?? null,
  })
}

export function startExtraction(s: EngineState, from: AgentNode): void {
  const variables: ExtractionVariable[] = extractionVariables(from)
  if (variables.length === 0) return
  const messages = extractionMessages(
    variables,
    render(s, nodeText(from, 'extraction_prompt')),
    historyForExtraction(s.history, s.transitionCallIds),
  )
  const extraction: PendingExtraction = {
    names: variables.map(({ name }) => name),
    promise: extractVariables(s.extractionLlm, variables, messages, (ref, usage) =>
      s.onEvent({ type: 'usage', ref, usage, purpose: 'extraction' }),
    )
      .then((result) => {
        if (s.phase === 'completed') return
        if (!result.ok) return warn(s, `Extraction for node '${nodeName(from)}' failed: ${result.error}`)
        Object.assign(s.extracted, result.values)
        for (const [name, value] of Object.entries(result.values)) if (!RUNTIME_KEYS.has(name)) s.gathered[name] = value
        s.onEvent({ type: 'extraction', node_id: from.id, values: result.values })
      })
      .finally(() => s.pendingExtractions.delete(extraction)),
  }
  s.pendingExtractions.add(extraction)
}

/** Waits for running extractions whose values the current prompts mention, so `{{name}}` is filled when it can be. */
export async function awaitMentionedExtractions(s: EngineState): Promise<void> {
  const prompts = `${s.graph.globalPrompt ?? ''}\n${nodeText(s.node, 'prompt')}`
  const mentioned = [...s.pendingExtractions].filter(({ names }) =>
    names.some((name) => new RegExp(`\\{\\{\\s*${escapeRegExp(name)}\\s*[|}]`, 'i').test(prompts)),
  )
  await Promise.all(mentioned.map(({ promise }) => promise))
}

export function takeTransition(
  s: EngineState,
  fn: Extract<NodeFunction, { kind: 'transition' }>,
  call: ToolCall,
): void {
  const from = s.node
  const target = s.graph.nodes.get(fn.edge.target)!
  s.transitionCallIds.add(call.id)
  startExtraction(s, from)
  s.onEvent({
    type: 'transition',
    from_node_id: from.id,
    to_node_id: target.id,
    function_name: fn.spec.name,
    edge_id: fn.edge.id,
  })
  const { transition_speech_type: speechType, transition_speech_recording_id: recordingId } = fn.edge.data
  if (speechType === 'audio') {
    if (recordingId != null && recordingId !== '') playRecording(s, String(recordingId), 'transition_speech', false)
  } else {
    const speech = render(s, fn.edge.data.transition_speech ?? '').trim()
    if (speech) speak(s, speech, 'transition_speech', false)
  }
  enterNode(s, target, from)
}

type Opening = { kind: 'text'; text: string } | { kind: 'recording'; recordingId: string }

/**
 * What the Start node says first: a valid per-contact `greeting_override` (`{type:"text", text}` or
 * `{type:"audio", recording_id}`), else the node's greeting; undefined when the LLM should speak first.
 */
export function openingOf(
  start: AgentNode,
  variables: Record<string, unknown>,
  renderText: (text: string) => string,
): Opening | undefined {
  const override = variables.greeting_override
  const recording = (id: unknown): Opening | undefined =>
    (typeof id === 'string' && id !== '') || typeof id === 'number'
      ? { kind: 'recording', recordingId: String(id) }
      : undefined
  const text = (value: unknown): Opening | undefined => {
    const rendered = typeof value === 'string' ? renderText(value).trim() : ''
    return rendered ? { kind: 'text', text: rendered } : undefined
  }
  if (isPlainObject(override)) {
    const chosen =
      override.type === 'audio'
        ? recording(override.recording_id)
        : override.type === 'text'
          ? text(override.text)
          : undefined
    if (chosen) return chosen
  }
  return start.data.greeting_type === 'audio' ? recording(start.data.greeting_recording_id) : text(start.data.greeting)
}
