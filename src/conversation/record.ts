import type { RetrievalLog } from '../knowledge/retrieval'

/**
 * What a conversation leaves behind, as plain data the caller persists on the run: the transcript, the
 * realtime feedback events clients read, the transcript text file, and the disposition.
 */

/** Times are milliseconds since the conversation started (`ConversationRecord.started_at`). */
export type TranscriptTurn = {
  role: 'user' | 'agent'
  text: string
  start_ms: number
  end_ms: number
  node_id: string
  /** The caller barged in: `text` is what was actually heard, not what the model wrote. */
  interrupted: boolean
}

/** The reference's `logs.realtime_feedback_events` entry. */
export type RealtimeFeedbackEvent = {
  type: string
  payload: Record<string, unknown>
  /** UTC ISO with milliseconds. */
  timestamp: string
  turn?: number
  node_id?: string
  node_name?: string
}

/** Why a call ended, with the reference's strings. */
export const END_REASONS = [
  'call_duration_exceeded',
  'call_transferred',
  'end_call_tool',
  'voicemail_detected',
  'user_idle_max_duration_exceeded',
  'user_hangup',
  'user_qualified',
  'user_disqualified',
  'system_cancelled',
  'system_connect_error',
  'unexpected_error',
  'unknown',
  'transfer_call',
  'pipeline_error',
  // Ours: a model server failed mid-call and the caller was told so (calls/voice.ts).
  'model_error',
] as const
export type EndReason = (typeof END_REASONS)[number]

/** One tool call, for `logs.tool_calls`: never its arguments' secrets, a credential, or an HTTP request's path and query. */
export type ToolCallLog = {
  /** UTC ISO, when the model's call was taken up. */
  timestamp: string
  node_id: string
  function_name: string
  tool_uuid: string
  type: 'http_api' | 'end_call' | 'transfer_call' | 'calculator' | 'mcp' | 'knowledge_base'
  status: 'success' | 'error'
  duration_ms: number
  /** http_api calls that sent a request: `status_code` null when no answer came (timeout, refused, unreachable). */
  http?: { method: string; host: string; status_code: number | null; duration_ms: number }
  /** knowledge_base calls: the query, what came back (document, chunk, similarity), unusable documents, timings. */
  knowledge_base?: RetrievalLog
  /** mcp calls: the server's host and its name of the tool called. */
  mcp?: { host: string; tool: string; duration_ms: number }
}

export type ConversationRecord = {
  state: 'initialized' | 'running' | 'completed'
  /** UTC ISO; null until `start()`. */
  started_at: string | null
  ended_at: string | null
  end_reason: EndReason | null
  /** Whole seconds from start to end (or to now while running). */
  call_duration_seconds: number
  current_node_id: string | null
  /** `nodes_visited`, `extracted_variables` and every extracted key; after the end also the disposition and tags. */
  gathered_context: Record<string, unknown>
  logs: {
    transcript: TranscriptTurn[]
    realtime_feedback_events: RealtimeFeedbackEvent[]
    /** Things the run did not do although the agent asks for them ("not supported yet"), and failures it survived. */
    warnings: string[]
    /** Every tool call of the run (the engine always fills it; records built elsewhere may leave it out). */
    tool_calls?: ToolCallLog[]
  }
}

const iso = (ms: number) => new Date(ms).toISOString()

/** The transcript file: one `[<ISO start>] user: …` / `assistant: …` line per turn, or `[<start> -> <end>]`. */
export function transcriptText(
  record: Pick<ConversationRecord, 'started_at'> & { logs: Pick<ConversationRecord['logs'], 'transcript'> },
  options: { includeEndTimestamps?: boolean } = {},
): string {
  const startedAt = record.started_at ? Date.parse(record.started_at) : 0
  return record.logs.transcript
    .map((turn) => {
      const start = iso(startedAt + turn.start_ms)
      const stamp = options.includeEndTimestamps ? `${start} -> ${iso(startedAt + turn.end_ms)}` : start
      return `[${stamp}] ${turn.role === 'user' ? 'user' : 'assistant'}: ${turn.text}\n`
    })
    .join('')
}

/**
 * `call_disposition` is the extracted one when the agent extracts it, else the end reason; `mapped_call_disposition`
 * equals it (no mapping table yet). Tags: `user_speech` when the caller said something, the values of extracted
 * `tag_*` keys, then the disposition.
 */
export function dispositionFields(
  gathered: Record<string, unknown>,
  reason: EndReason,
  callerSpoke: boolean,
): { call_disposition: string; mapped_call_disposition: string; call_tags: string[] } {
  const extracted = gathered.call_disposition
  const disposition = typeof extracted === 'string' && extracted.trim() !== '' ? extracted.trim() : reason
  const tags = Object.entries(gathered)
    .filter(
      ([key, value]) =>
        key.startsWith('tag_') && (typeof value === 'string' ? value !== '' : typeof value === 'number'),
    )
    .map(([, value]) => String(value))
  const existing = Array.isArray(gathered.call_tags)
    ? gathered.call_tags.filter((tag): tag is string => typeof tag === 'string')
    : []
  const call_tags = [...new Set([...existing, ...(callerSpoke ? ['user_speech'] : []), ...tags, disposition])]
  return { call_disposition: disposition, mapped_call_disposition: disposition, call_tags }
}
