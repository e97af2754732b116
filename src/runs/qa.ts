import type { AgentDefinition, AgentNode } from '../definition/definition'
import { isPlainObject } from '../lib/values'
import { renderTemplate } from '../definition/template-variables'
import type { LlmClient, ModelRef, TokenUsage } from '../models/types'
import { nodeName, nodeText } from '../conversation/graph'
import type { ConversationRecord, TranscriptTurn } from '../conversation/record'

/**
 * Quality review of a finished call by a QA node: whether it runs (skip rules) and one evaluation per conversation
 * node the call went through. Which LLM reviews (the agent's or the node's own) and where the annotations are stored
 * is the caller's.
 */

export type QaCall = {
  durationSeconds: number
  /** The run's end reason or disposition; voicemail calls are skipped unless the node opts in. */
  endReason: string | null
}

const VOICEMAIL_REASONS = new Set(['voicemail_detected', 'voicemail'])

const numberOr = (value: unknown, fallback: number) =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback

/** Why the call is not reviewed, or null when it is. `random` returns [0, 1) (Math.random in production). */
export function qaSkipReason(qaNode: AgentNode, call: QaCall, random: () => number): string | null {
  const { data } = qaNode
  if (data.qa_enabled === false) return 'disabled'
  if (call.durationSeconds < numberOr(data.qa_min_call_duration, 15)) return 'call_too_short'
  if (call.endReason !== null && VOICEMAIL_REASONS.has(call.endReason) && data.qa_voicemail_calls !== true)
    return 'voicemail'
  if (random() * 100 >= numberOr(data.qa_sample_rate, 100)) return 'not_sampled'
  return null
}

export const QA_TAGS = [
  'goal_achieved',
  'caller_frustrated',
  'question_unanswered',
  'wrong_information',
  'off_script',
  'agent_repeated_itself',
  'agent_talked_over_caller',
  'long_pause',
  'caller_asked_for_human',
  'follow_up_needed',
]

export const DEFAULT_QA_PROMPT = `You review one step of a phone call handled by an AI agent.

What the agent was told to do in this step:
{{node_summary}}

What happened earlier in the call:
{{previous_conversation_summary}}

Transcript of this step:
{{transcript}}

Measurements: {{metrics}}

Answer with a JSON object: "tags" (those of ${QA_TAGS.join(', ')} that apply), "overall_sentiment" of the caller
(positive, neutral or negative), "score" from 1 (poor) to 10 (excellent) for how well the agent did, and a one or two
sentence "summary".`

const ANSWER_SCHEMA = {
  type: 'object',
  properties: {
    tags: { type: 'array', items: { type: 'string' } },
    overall_sentiment: { type: 'string', enum: ['positive', 'neutral', 'negative'] },
    score: { type: 'integer', minimum: 1, maximum: 10 },
    summary: { type: 'string' },
  },
  required: ['tags', 'overall_sentiment', 'score', 'summary'],
  additionalProperties: false,
}

export type QaNodeResult = {
  node_name: string
  raw_response: string
  tags: string[]
  summary: string
  score: number | null
  overall_sentiment: string | null
  error?: string
}

export type QaAnnotation = { node_results: Record<string, QaNodeResult>; model: string }

export type QaMetrics = {
  num_turns: number
  avg_latency_seconds: number | null
  max_latency_seconds: number | null
  avg_ttfb_seconds: number | null
}

const lines = (turns: TranscriptTurn[]) =>
  turns.map(({ role, text }) => `${role === 'user' ? 'user' : 'assistant'}: ${text}`).join('\n')

const average = (values: number[]) =>
  values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : null

/** Turn count, caller-to-agent latency (end of a user turn to the start of the next agent turn) and LLM TTFB. */
export function qaMetrics(turns: TranscriptTurn[], ttfbSeconds: number[]): QaMetrics {
  const latencies = turns.flatMap((turn, index) => {
    const next = turns[index + 1]
    return turn.role === 'user' && next?.role === 'agent' ? [(next.start_ms - turn.end_ms) / 1000] : []
  })
  return {
    num_turns: turns.length,
    avg_latency_seconds: average(latencies),
    max_latency_seconds: latencies.length ? Math.max(...latencies) : null,
    avg_ttfb_seconds: average(ttfbSeconds),
  }
}

/** The transcript split by the node each turn was spoken in, in the order the call reached them. */
function turnsByNode(transcript: TranscriptTurn[]): Map<string, TranscriptTurn[]> {
  const groups = new Map<string, TranscriptTurn[]>()
  for (const turn of transcript) groups.set(turn.node_id, [...(groups.get(turn.node_id) ?? []), turn])
  return groups
}

const TRIES = 3

async function evaluateStep(
  llm: LlmClient,
  prompt: string,
  onUsage: (ref: ModelRef, usage: TokenUsage) => void,
  name: string,
): Promise<QaNodeResult> {
  let raw = ''
  let error = 'no answer'
  for (let attempt = 1; attempt <= TRIES; attempt++) {
    try {
      const answer = await llm.completeJson({
        messages: [
          { role: 'system', content: prompt },
          { role: 'user', content: 'Review this step and answer with the JSON object.' },
        ],
        schema: ANSWER_SCHEMA,
        schemaName: 'qa_review',
      })
      onUsage({ service: 'QAAnalysis', model: llm.ref.model }, answer.usage)
      raw = answer.text
      const parsed: unknown = JSON.parse(raw)
      if (!isPlainObject(parsed)) throw new Error('the answer is not a JSON object')
      return {
        node_name: name,
        raw_response: raw,
        tags: Array.isArray(parsed.tags) ? parsed.tags.filter((tag): tag is string => typeof tag === 'string') : [],
        summary: typeof parsed.summary === 'string' ? parsed.summary : '',
        score: typeof parsed.score === 'number' ? parsed.score : null,
        overall_sentiment: typeof parsed.overall_sentiment === 'string' ? parsed.overall_sentiment : null,
      }
    } catch (failure) {
      error = (failure as Error).message
    }
  }
  return { node_name: name, raw_response: raw, tags: [], summary: '', score: null, overall_sentiment: null, error }
}

/**
 * Reviews each conversation node of the call (3 tries per node). `{{node_summary}}` is the node's own prompt and
 * `{{previous_conversation_summary}}` the transcript of the earlier nodes (no extra summarising calls). Usage is
 * reported under `QAAnalysis|||<model>`. Returns the `qa_<nodeId>` annotation and the union of all tags.
 */
export async function reviewCall(
  llm: LlmClient,
  qaNode: AgentNode,
  definition: AgentDefinition,
  record: Pick<ConversationRecord, 'logs'>,
  onUsage: (ref: ModelRef, usage: TokenUsage) => void,
): Promise<{ key: string; annotation: QaAnnotation; tags: string[] }> {
  const template = nodeText(qaNode, 'qa_system_prompt').trim() || DEFAULT_QA_PROMPT
  const withTranscript = /\{\{\s*transcript\s*\}\}/.test(template)
    ? template
    : `${template}\n\nTranscript:\n{{transcript}}`
  const nodesById = new Map(definition.nodes.map((node) => [node.id, node]))
  const nodeResults: Record<string, QaNodeResult> = {}
  const earlier: TranscriptTurn[] = []
  for (const [nodeId, turns] of turnsByNode(record.logs.transcript)) {
    const node = nodesById.get(nodeId)
    const ttfb = record.logs.realtime_feedback_events
      .filter(({ type, node_id }) => type === 'rtf-ttfb-metric' && node_id === nodeId)
      .map(({ payload }) => Number(payload.ttfb_seconds))
      .filter(Number.isFinite)
    const prompt = renderTemplate(withTranscript, {
      node_summary: node ? nodeText(node, 'prompt') : '',
      previous_conversation_summary: earlier.length ? lines(earlier) : 'This is the first step of the call.',
      transcript: lines(turns),
      metrics: qaMetrics(turns, ttfb),
    })
    nodeResults[nodeId] = await evaluateStep(llm, prompt, onUsage, node ? nodeName(node) : nodeId)
    earlier.push(...turns)
  }
  const tags = [...new Set(Object.values(nodeResults).flatMap(({ tags: nodeTags }) => nodeTags))]
  return { key: `qa_${qaNode.id}`, annotation: { node_results: nodeResults, model: llm.ref.model }, tags }
}
