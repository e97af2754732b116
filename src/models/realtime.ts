import { onThisMachineFailed, serverOnThisMachine, type ModelConnection, type ModelTimeouts } from './http'
import { openRealtimeSocket, type RealtimeServerEvent, type RealtimeSocket } from './realtime-socket'
import {
  ModelServerError,
  type ChatRequest,
  type LlmClient,
  type LlmEvent,
  type ModelRef,
  type TokenUsage,
  type ToolSpec,
} from './types'

/**
 * A call's session with a realtime speech-to-speech model (OpenAI Realtime API over WebSocket, realtime-socket.ts).
 * The model hears the caller's audio and speaks itself; the conversation engine stays in charge of the graph: the
 * model's own turn detection only reports speech (`create_response: false`), and each reply the engine asks for
 * (`llm.stream`, one completion) is one `response.create` after the node's prompt and functions were set with
 * `session.update` and the results of the previous function calls were given back as `function_call_output` items.
 * A response streams the transcript of what the model says as text, its function calls as tool calls, its usage
 * (text and audio tokens) at `response.done`; its audio goes to the listener (the voice chain). Lines the engine
 * wrote itself (greeting, transition speech, tool messages) are read out by a response of their own (`say`).
 *
 * Responses run one at a time, in order. A response must start within `firstByteMs` and each of its events follow
 * within `idleMs`; a server that does not (or closes, floods, sends a frame too large) fails the session: the reply
 * waiting for it throws (so the voice channel's model-failure line is heard), or the listener hears it when none waits.
 * Both event names of the API's versions are accepted (`response.audio.*` and `response.output_audio.*`).
 */

export const REALTIME_RATE = 24_000

/** A model that sends more audio than this for one response is not speaking to a caller. */
const MAX_RESPONSE_AUDIO_SECONDS = 300

export type RealtimeSettings = {
  model: string
  voice: string
  /** Before every node's prompt. */
  instructions?: string
  turnDetection?: Record<string, unknown>
  transcriptionModel?: string
}

export type RealtimeListener = {
  /** Agent audio, PCM at REALTIME_RATE; `itemId` names it for truncation. */
  audio(pcm: Int16Array, itemId: string): void
  speechStarted(): void
  speechStopped(): void
  /** The model's transcription of a caller turn. */
  callerSaid(text: string): void
  /** A response ended (`hadAudio`: the model spoke in it). */
  responseEnded(hadAudio: boolean): void
  /** The session failed while no reply was waiting to hear it. */
  failed(error: ModelServerError): void
  /** Tokens of responses that were not a reply (read-out lines, cancelled replies). */
  usage(usage: TokenUsage): void
}

export type RealtimeSession = {
  readonly ref: ModelRef
  /** The conversation's LLM: each completion is one response of the model. */
  readonly llm: LlmClient
  /** Connects and configures the session; a server that cannot be reached fails it (`listener.failed`). */
  start(listener: RealtimeListener): Promise<void>
  /** Caller audio, PCM at REALTIME_RATE. */
  appendAudio(pcm: Int16Array): void
  /** Reads out a line the engine wrote (not a reply: no functions). */
  say(text: string): void
  /** Barge-in: the model's item was heard up to `audioEndMs`. */
  truncate(itemId: string, audioEndMs: number): void
  close(): void
}

type Channel = {
  push(event: LlmEvent): void
  end(): void
  fail(error: Error): void
  read(): AsyncGenerator<LlmEvent>
}

type ResponseEntry = {
  body: Record<string, unknown>
  channel: Channel | null
  sent: boolean
  id: string | null
  cancelled: boolean
  audioSamples: number
  sawTranscriptDelta: boolean
}

type SessionState = {
  connection: ModelConnection
  settings: RealtimeSettings
  timeouts: ModelTimeouts
  socket: RealtimeSocket | null
  closed: boolean
  /** A server on this machine: its failures are told as one message, the reason goes to the log (models/http.ts). */
  hideReasons: boolean
  listener: RealtimeListener | null
  failure: ModelServerError | null
  queue: ResponseEntry[]
  watchdog: ReturnType<typeof setTimeout> | undefined
  sessionSent: string
  outputsSent: Set<string>
  unsent: Record<string, unknown>[]
  modelCalls: Set<string>
}

export function createRealtimeSession(
  connection: ModelConnection,
  settings: RealtimeSettings,
  timeouts: ModelTimeouts,
): RealtimeSession {
  const s: SessionState = {
    connection,
    settings,
    timeouts,
    socket: null,
    closed: false,
    hideReasons: false,
    listener: null,
    failure: null,
    queue: [],
    watchdog: undefined,
    sessionSent: '',
    outputsSent: new Set(),
    unsent: [],
    modelCalls: new Set(),
  }
  const ref = { service: connection.provider, model: settings.model }
  return {
    ref,
    llm: {
      ref,
      stream: (request) => streamReply(s, request),
      completeJson: () => Promise.reject(new ModelServerError('A realtime model does not answer JSON requests')),
    },
    async start(listener) {
      s.listener = listener
      const rule = connection.thisMachine
      s.hideReasons = rule ? await serverOnThisMachine(connection.baseUrl, rule.resolveHost) : false
      try {
        const socket = await openRealtimeSocket(connection, { model: settings.model }, timeouts.firstByteMs, {
          onEvent: (event) => handleEvent(s, event),
          onFailure: (error) => fail(s, error),
        })
        if (s.closed) return socket.close()
        s.socket = socket
      } catch (error) {
        return fail(s, error instanceof ModelServerError ? error : new ModelServerError(String(error)))
      }
      s.socket.send({ type: 'session.update', session: initialSession(settings) })
      for (const event of s.unsent.splice(0)) s.socket.send(event)
      sendNext(s)
    },
    appendAudio(pcm) {
      if (pcm.length > 0) s.socket?.send({ type: 'input_audio_buffer.append', audio: pcmToBase64(pcm) })
    },
    say(text) {
      enqueue(s, {
        instructions: `Say exactly this, word for word, and nothing else: ${text}`,
        tool_choice: 'none',
      })
    },
    truncate(itemId, audioEndMs) {
      s.socket?.send({
        type: 'conversation.item.truncate',
        item_id: itemId,
        content_index: 0,
        audio_end_ms: Math.max(0, Math.round(audioEndMs)),
      })
    },
    close() {
      s.closed = true
      clearTimeout(s.watchdog)
      s.socket?.close()
      for (const entry of s.queue) entry.channel?.end()
      s.queue = []
    },
  }
}

function initialSession(settings: RealtimeSettings): Record<string, unknown> {
  return {
    modalities: ['audio', 'text'],
    voice: settings.voice,
    instructions: settings.instructions ?? '',
    input_audio_format: 'pcm16',
    output_audio_format: 'pcm16',
    input_audio_transcription: { model: settings.transcriptionModel ?? 'whisper-1' },
    // The engine decides when the model answers: the model only reports the caller's speech.
    turn_detection: {
      type: 'server_vad',
      ...settings.turnDetection,
      create_response: false,
      interrupt_response: false,
    },
  }
}

/** One reply: the node's prompt and functions, the function results the model has not had, then a response. */
async function* streamReply(s: SessionState, request: ChatRequest): AsyncGenerator<LlmEvent> {
  // The failure was told once; the call is being ended by it, which cancels this reply.
  if (s.failure) return await abortOf(request.signal)
  syncSession(s, request)
  const channel = createChannel()
  const entry = enqueue(s, { tool_choice: request.tools?.length ? 'auto' : 'none' }, channel)
  const cancel = () => cancelEntry(s, entry)
  request.signal?.addEventListener('abort', cancel, { once: true })
  try {
    yield* channel.read()
  } finally {
    request.signal?.removeEventListener('abort', cancel)
    if (s.queue.includes(entry) && entry.channel) cancel()
  }
}

function syncSession(s: SessionState, request: ChatRequest): void {
  const system = request.messages.find((message) => message.role === 'system')?.content ?? ''
  const session = {
    instructions: [s.settings.instructions, system].filter(Boolean).join('\n\n'),
    tools: (request.tools ?? []).map((tool: ToolSpec) => ({ type: 'function', ...tool })),
    tool_choice: 'auto',
  }
  const serialized = JSON.stringify(session)
  if (serialized !== s.sessionSent) {
    s.sessionSent = serialized
    send(s, { type: 'session.update', session })
  }
  for (const message of request.messages) {
    if (message.role !== 'tool' || !s.modelCalls.has(message.toolCallId) || s.outputsSent.has(message.toolCallId))
      continue
    s.outputsSent.add(message.toolCallId)
    send(s, {
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: message.toolCallId, output: message.content },
    })
  }
}

function enqueue(s: SessionState, body: Record<string, unknown>, channel: Channel | null = null): ResponseEntry {
  const entry: ResponseEntry = {
    body,
    channel,
    sent: false,
    id: null,
    cancelled: false,
    audioSamples: 0,
    sawTranscriptDelta: false,
  }
  if (s.failure) {
    channel?.fail(s.failure)
    return entry
  }
  s.queue.push(entry)
  sendNext(s)
  return entry
}

/** What is sent before the socket is open waits for it, in order. */
function send(s: SessionState, event: Record<string, unknown>): void {
  if (s.socket) s.socket.send(event)
  else s.unsent.push(event)
}

function sendNext(s: SessionState): void {
  const next = s.queue[0]
  if (!next || next.sent || !s.socket) return
  next.sent = true
  s.socket?.send({ type: 'response.create', response: next.body })
  armWatchdog(s, s.timeouts.firstByteMs)
}

/** A reply the engine gave up (barge-in): cancelled at the server, its audio dropped; the next waits for its end. */
function cancelEntry(s: SessionState, entry: ResponseEntry): void {
  entry.channel?.end()
  entry.channel = null
  if (!entry.sent) {
    s.queue = s.queue.filter((queued) => queued !== entry)
    return
  }
  if (entry.cancelled) return
  entry.cancelled = true
  s.socket?.send({ type: 'response.cancel', ...(entry.id ? { response_id: entry.id } : {}) })
}

function armWatchdog(s: SessionState, ms: number): void {
  clearTimeout(s.watchdog)
  s.watchdog = setTimeout(
    () => fail(s, new ModelServerError(`The realtime model did not answer within ${ms} ms`, null, 'timeout')),
    ms,
  )
}

function fail(s: SessionState, failure: ModelServerError): void {
  if (s.failure) return
  const error = told(s, failure)
  s.failure = error
  clearTimeout(s.watchdog)
  s.socket?.close()
  const waiting = s.queue.filter((entry) => entry.channel)
  for (const entry of waiting) entry.channel!.fail(error)
  s.queue = []
  if (waiting.length === 0) s.listener?.failed(error)
}

/** A server on this machine fails with one message; its reason goes to the log only. */
function told(s: SessionState, failure: ModelServerError): ModelServerError {
  if (!s.hideReasons) return failure
  s.connection.thisMachine?.log.warn({ reason: failure.message }, 'realtime model on this machine failed')
  return new ModelServerError(onThisMachineFailed('The realtime model'), null, failure.kind, true)
}

const AUDIO_DELTAS = new Set(['response.audio.delta', 'response.output_audio.delta'])
const TRANSCRIPT_DELTAS = new Set(['response.audio_transcript.delta', 'response.output_audio_transcript.delta'])
const TRANSCRIPT_DONES = new Set(['response.audio_transcript.done', 'response.output_audio_transcript.done'])

function handleEvent(s: SessionState, event: RealtimeServerEvent): void {
  if (s.failure) return
  const listener = s.listener
  switch (event.type) {
    case 'input_audio_buffer.speech_started':
      return listener?.speechStarted()
    case 'input_audio_buffer.speech_stopped':
      return listener?.speechStopped()
    case 'conversation.item.input_audio_transcription.completed':
      return listener?.callerSaid(typeof event.transcript === 'string' ? event.transcript : '')
    case 'response.created':
      return responseCreated(s, event)
    case 'response.done':
      return responseDone(s, event)
    case 'error':
      return serverError(s, event)
  }
  const entry = s.queue[0]
  if (!entry?.sent || (entry.id && event.response_id && event.response_id !== entry.id)) return
  armWatchdog(s, s.timeouts.idleMs)
  if (AUDIO_DELTAS.has(event.type)) responseAudio(s, entry, event)
  else if (TRANSCRIPT_DELTAS.has(event.type) && typeof event.delta === 'string') {
    entry.sawTranscriptDelta = true
    if (event.delta !== '') entry.channel?.push({ type: 'text', text: event.delta })
  } else if (TRANSCRIPT_DONES.has(event.type) && !entry.sawTranscriptDelta && typeof event.transcript === 'string') {
    if (event.transcript !== '') entry.channel?.push({ type: 'text', text: event.transcript })
  } else if (event.type === 'response.output_item.done' && event.item?.type === 'function_call') {
    const { call_id: id, name, arguments: args } = event.item
    if (typeof id !== 'string' || typeof name !== 'string') return
    s.modelCalls.add(id)
    entry.channel?.push({ type: 'tool_call', call: { id, name, arguments: typeof args === 'string' ? args : '{}' } })
  }
}

function responseCreated(s: SessionState, event: RealtimeServerEvent): void {
  const entry = s.queue[0]
  const id = typeof event.response?.id === 'string' ? event.response.id : null
  // A response the engine did not ask for (a server that answers on its own): the engine decides who speaks.
  if (!entry?.sent || entry.id !== null) {
    s.socket?.send({ type: 'response.cancel', ...(id ? { response_id: id } : {}) })
    return
  }
  entry.id = id
  armWatchdog(s, s.timeouts.idleMs)
}

function responseAudio(s: SessionState, entry: ResponseEntry, event: RealtimeServerEvent): void {
  if (entry.cancelled || typeof event.delta !== 'string') return
  const pcm = base64ToPcm(event.delta)
  entry.audioSamples += pcm.length
  if (entry.audioSamples > MAX_RESPONSE_AUDIO_SECONDS * REALTIME_RATE) {
    fail(s, new ModelServerError('The realtime model sent more audio than any answer needs', null, 'bad_answer'))
    return
  }
  s.listener?.audio(pcm, typeof event.item_id === 'string' ? event.item_id : '')
}

function responseDone(s: SessionState, event: RealtimeServerEvent): void {
  const entry = s.queue[0]
  if (!entry?.sent || (entry.id && event.response?.id && event.response.id !== entry.id)) return
  clearTimeout(s.watchdog)
  s.queue.shift()
  const usage = usageOf(event.response?.usage)
  if (entry.channel) {
    entry.channel.push({ type: 'done', usage, finishReason: event.response?.status ?? null })
    entry.channel.end()
  } else if (usage.totalTokens > 0) s.listener?.usage(usage)
  s.listener?.responseEnded(entry.audioSamples > 0 && !entry.cancelled)
  sendNext(s)
}

/** An error answering the response being asked for fails that reply; others (a late cancel) are the server's notes. */
function serverError(s: SessionState, event: RealtimeServerEvent): void {
  const entry = s.queue[0]
  if (!entry?.sent || entry.id !== null) return
  const message = typeof event.error?.message === 'string' ? event.error.message.slice(0, 500) : 'unknown error'
  s.queue.shift()
  clearTimeout(s.watchdog)
  const error = told(s, new ModelServerError(`The realtime model refused the response: ${message}`, null, 'refused'))
  if (entry.channel) entry.channel.fail(error)
  else s.listener?.failed(error)
  sendNext(s)
}

function usageOf(raw: any): TokenUsage {
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0)
  const usage: TokenUsage = {
    promptTokens: count(raw?.input_tokens),
    completionTokens: count(raw?.output_tokens),
    totalTokens: count(raw?.total_tokens) || count(raw?.input_tokens) + count(raw?.output_tokens),
  }
  const audioIn = count(raw?.input_token_details?.audio_tokens)
  const audioOut = count(raw?.output_token_details?.audio_tokens)
  return audioIn || audioOut ? { ...usage, audioPromptTokens: audioIn, audioCompletionTokens: audioOut } : usage
}

const abortOf = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (!signal || signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })

export function pcmToBase64(pcm: Int16Array): string {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64')
}

export function base64ToPcm(text: string): Int16Array {
  const bytes = Buffer.from(text, 'base64')
  const pcm = new Int16Array(bytes.length >> 1)
  for (let index = 0; index < pcm.length; index++) pcm[index] = bytes.readInt16LE(index * 2)
  return pcm
}

/** The events of one reply, read by the engine as they come. */
function createChannel(): Channel {
  const items: LlmEvent[] = []
  let ended = false
  let failure: Error | null = null
  let wake: (() => void) | null = null
  const notify = () => {
    wake?.()
    wake = null
  }
  return {
    push(event) {
      if (ended) return
      items.push(event)
      notify()
    },
    end() {
      ended = true
      notify()
    },
    fail(error) {
      failure ??= error
      ended = true
      notify()
    },
    async *read() {
      while (true) {
        if (items.length > 0) yield items.shift()!
        else if (failure) throw failure
        else if (ended) return
        else await new Promise<void>((resolve) => (wake = resolve))
      }
    },
  }
}
