/**
 * What the conversation runtime and the voice pipeline need from a model server, whatever speaks behind it
 * (any OpenAI-compatible HTTP API: Ollama, vLLM, llama.cpp, LocalAI, speaches, kokoro, hosted ones).
 * Clients live in src/models/; the runtime and voice code depend on these types only.
 */

export type ToolCall = { id: string; name: string; arguments: string }

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string }

/** A function the LLM may call; `parameters` is a JSON schema object. */
export type ToolSpec = { name: string; description: string; parameters: Record<string, unknown> }

export type TokenUsage = {
  promptTokens: number
  completionTokens: number
  totalTokens: number
  /** Of the prompt and completion tokens, those that were audio (realtime speech-to-speech models). */
  audioPromptTokens?: number
  audioCompletionTokens?: number
}

export type LlmSettings = { model: string; temperature?: number; maxTokens?: number }

/** What a streamed chat completion yields, in order: text pieces and tool calls as they complete, then `done` once. */
export type LlmEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'done'; usage: TokenUsage; finishReason: string | null }

export type ChatRequest = { messages: ChatMessage[]; tools?: ToolSpec[]; signal?: AbortSignal }

export type JsonRequest = {
  messages: ChatMessage[]
  /** A JSON schema object the answer must satisfy (sent as response_format json_schema). */
  schema: Record<string, unknown>
  schemaName: string
  signal?: AbortSignal
}

/** The voices of the built-in text to speech (Flite): slt (female), rms (male), awb (Scottish male), kal16 (male, diphone). */
export const FLITE_VOICES = ['slt', 'rms', 'awb', 'kal16'] as const
export type FliteVoice = (typeof FLITE_VOICES)[number]

/** Which service and model answered, as usage_info keys it: `<service>|||<model>`. */
export type ModelRef = { service: string; model: string }

export interface LlmClient {
  readonly ref: ModelRef
  stream(request: ChatRequest): AsyncIterable<LlmEvent>
  /** One non-streamed completion constrained to `schema`; `text` is the raw answer, parsed by the caller. */
  completeJson(request: JsonRequest): Promise<{ text: string; usage: TokenUsage }>
}

export interface SttClient {
  readonly ref: ModelRef
  /**
   * `pcm16k` is 16 kHz mono signed 16-bit PCM; the answer is the recognised text (may be empty). `warn` hears what the
   * run should know though the transcription succeeded (a streaming client falling back to uploads).
   */
  transcribe(pcm16k: Int16Array, options?: { signal?: AbortSignal; warn?: (message: string) => void }): Promise<string>
  /**
   * A server that transcribes live (stt-stream.ts): one stream for a whole call, fed as the caller speaks. Absent:
   * every utterance goes through `transcribe`.
   */
  openStream?(options: { warn(message: string): void }): SttStream
}

/**
 * Live speech recognition of one call: caller audio appended as it is heard, a segment committed when the caller
 * stops (or pauses), its text ready soon after. `commit` rejects when the stream cannot give that segment's text
 * (its connection dropped while the segment's audio went out, no transcript in time): the caller then uploads the
 * audio instead. Once `usable` is false it never is again (the rest of the call uploads).
 */
export interface SttStream {
  /** 16 kHz mono PCM, in the order it was heard. */
  append(pcm16k: Int16Array): void
  /** What was appended since the last commit is one segment: its text. */
  commit(): Promise<string>
  readonly usable: boolean
  close(): void
}

export interface TtsClient {
  readonly ref: ModelRef
  /** Speech for `text` as mono signed 16-bit PCM at `sampleRate`, streamed in chunks as the server sends them. */
  synthesize(text: string, options?: { signal?: AbortSignal }): AsyncIterable<{ pcm: Int16Array; sampleRate: number }>
}

/**
 * How a model server failed: `unreachable` (no connection: refused, no route, name unknown), `timeout` (no answer in
 * time), `stalled` (a streamed answer stopped half-way), `server_error` (a 5xx), `refused` (another error status),
 * `bad_answer` (an answer that makes no sense).
 */
export type ModelFailureKind = 'unreachable' | 'timeout' | 'stalled' | 'server_error' | 'refused' | 'bad_answer'

/**
 * A model server that failed: `status` is the HTTP status when there was one; `message` is safe to show.
 * `reasonHidden`: a server on this machine, whose message says only that it failed; `kind` and `status` then serve
 * Ringbase's own decisions and are not shown either (they would tell a caller which local ports answer).
 */
export class ModelServerError extends Error {
  readonly kind: ModelFailureKind

  constructor(
    message: string,
    readonly status: number | null = null,
    kind?: ModelFailureKind,
    readonly reasonHidden = false,
  ) {
    super(message)
    this.kind = kind ?? (status === null ? 'bad_answer' : status >= 500 ? 'server_error' : 'refused')
  }
}
