import { expect } from 'bun:test'
import { decodeWav, encodeWav, type WavFormat } from '../../src/lib/wav'
import { ModelServerError } from '../../src/models/types'
import { floodBody } from './flood'

/**
 * One OpenAI-compatible model server on 127.0.0.1 for every test that needs an LLM, STT or TTS: `GET /models`,
 * `POST /chat/completions` (streamed or not), `POST /audio/transcriptions`, `POST /audio/speech`, `POST /embeddings`, all
 * under `/v1`.
 * Tests script the answers (a queue per endpoint, then a handler) and read back every request it received.
 *
 *   const models = startFakeModels()
 *   models.chat.queue(say('Hello!'), callTool('book_slot', { day: 'monday' }))
 *   … models.requestsTo('/chat/completions')[0].body.messages …
 */

export type FakeFailure = { status: number; body: unknown }

/**
 * A hostile server: `prefix`, then `bytes` of filler with no line end, in 16 KiB pieces made only as the client reads
 * them (never held whole), under `status` (200 unless said). `FakeModelRequest.sentBytes` counts what left.
 */
export type FakeFlood = { bytes: number; status?: number; prefix?: string | Uint8Array; contentType?: string }

export type FakeToolCall = { name: string; arguments: unknown; id?: string }

export type FakeChatAnswer = {
  /** Streamed word by word; in a non-streamed answer it is the message content (JSON for schema requests). */
  text?: string
  /** Streamed the way OpenAI does: per call, its id and name first, then the arguments in small fragments. */
  toolCalls?: FakeToolCall[]
  /** Reported usage; by default counted from lengths; `'none'` sends none at all. */
  usage?: { prompt_tokens: number; completion_tokens: number } | 'none'
  finishReason?: string
  /** Streamed answers: the headers go out at once, the first chunk only after this delay; others wait it whole. */
  firstTokenDelayMs?: number
  /** Nothing at all, not even the headers, for this long (a server that does not answer). */
  headersDelayMs?: number
  /** Streamed answers: pause between chunks. */
  chunkDelayMs?: number
  /** Streamed answers: after this many chunks nothing more is sent, and the connection stays open. */
  stallAfterChunks?: number
  /** Streamed answers: these `data` payloads verbatim and nothing else (no [DONE] unless listed), for odd servers. */
  rawEvents?: string[]
  /** Streamed answers: an error event in place of the finish (vLLM and OpenRouter report late failures so). */
  streamedError?: { message: string }
  fail?: FakeFailure
  flood?: FakeFlood
}

export type FakeTranscriptionAnswer = {
  text?: string
  /** Before the answer, headers included. */
  delayMs?: number
  /** The headers and the start of the body go out, the rest never comes (the connection stays open). */
  stall?: boolean
  fail?: FakeFailure
  flood?: FakeFlood
}

export type FakeSpeechAnswer = {
  /** Before the first byte of audio (the headers go out at once). */
  delayMs?: number
  /** Nothing at all, not even the headers, for this long (a server that does not answer). */
  headersDelayMs?: number
  /** Answer in this format whatever was asked (a server that ignores `response_format`); mp3 is a few fake bytes. */
  format?: 'pcm' | 'wav' | 'mp3'
  /** Of a WAV answer (pcm is always 24 kHz). */
  sampleRate?: number
  /** Bytes per chunk sent (default FAKE_SPEECH_PIECE_BYTES). */
  chunkBytes?: number
  /** Pause between chunks. */
  chunkDelayMs?: number
  /** After this many chunks nothing more is sent, and the connection stays open. */
  stallAfterChunks?: number
  fail?: FakeFailure
  flood?: FakeFlood
}

export type FakeModelListAnswer = { ids?: string[]; fail?: FakeFailure; flood?: FakeFlood }

/** Vectors are `fakeEmbedding` of each input; `delayMs` before answering (the client may leave meanwhile). */
export type FakeEmbeddingsAnswer = { delayMs?: number; dimension?: number; fail?: FakeFailure }

export const FAKE_EMBEDDING_DIMENSION = 64

/**
 * A deterministic vector with meaning enough for tests: each word (lower-cased, letters and digits) adds 1 to a bucket
 * chosen by its hash, so texts sharing words are close and texts sharing none are orthogonal-ish.
 */
export function fakeEmbedding(text: string, dimension = FAKE_EMBEDDING_DIMENSION): number[] {
  const vector = new Array<number>(dimension).fill(0)
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    vector[Number(Bun.hash.crc32(word)) % dimension] += 1
  return vector
}

export type ReceivedAudio = { wav: Uint8Array; format: WavFormat; pcm: Int16Array }

export type FakeModelRequest = {
  method: string
  /** Below `/v1`, e.g. `/chat/completions`. */
  path: string
  headers: Headers
  /** Parsed JSON; for transcriptions the form fields, and `file` described as `{name, type, size}`. */
  body: any
  /** The uploaded WAV of a transcription, kept whole and decoded. */
  audio?: ReceivedAudio
  /** The client went away before the answer was complete. */
  aborted: boolean
  /** Of a flood answer: the bytes handed to the connection so far. */
  sentBytes: number
  /** Of a streamed speech answer: when each piece was handed to the connection (`performance.now()`). */
  piecesSentAtMs: number[]
}

type Scripted<Answer> = Answer | ((request: FakeModelRequest) => Answer | Promise<Answer>)

export type FakeScript<Answer> = {
  /** Answers used once each, in order, before the handler. */
  queue(...answers: Scripted<Answer>[]): void
  /** Answers whatever the queue does not. */
  handler: (request: FakeModelRequest) => Answer | Promise<Answer>
}

export type FakeModels = {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string
  requests: FakeModelRequest[]
  requestsTo(path: string): FakeModelRequest[]
  chat: FakeScript<FakeChatAnswer>
  transcription: FakeScript<FakeTranscriptionAnswer>
  speech: FakeScript<FakeSpeechAnswer>
  models: FakeScript<FakeModelListAnswer>
  embeddings: FakeScript<FakeEmbeddingsAnswer>
  /** Forgets the requests, empties the queues and restores the default handlers. */
  reset(): void
  stop(): void
}

export const say = (text: string, more: FakeChatAnswer = {}): FakeChatAnswer => ({ text, ...more })

export const callTool = (name: string, args: unknown, more: FakeChatAnswer = {}): FakeChatAnswer => ({
  toolCalls: [{ name, arguments: args }],
  ...more,
})

export const callTools = (...calls: FakeToolCall[]): FakeChatAnswer => ({ toolCalls: calls })

/** Fits every endpoint's script. */
export const failWith = (status: number, body: unknown) => ({ fail: { status, body } })

/** OpenAI's `pcm`: 24 kHz. */
export const FAKE_SPEECH_RATE = 24_000
/** Bytes per piece of a streamed speech answer: odd, so that samples straddle pieces. */
export const FAKE_SPEECH_PIECE_BYTES = 4801

/** What the fake speaks for `text`: a 440 Hz tone lasting 20 ms per character. */
export function fakeSpeech(text: string, sampleRate = FAKE_SPEECH_RATE): Int16Array {
  const samples = new Int16Array(Math.round(text.length * 0.02 * sampleRate))
  for (let index = 0; index < samples.length; index++) {
    samples[index] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * index) / sampleRate))
  }
  return samples
}

const nothingScripted = (path: string) => () =>
  failWith(500, { error: { message: `fake model server: nothing scripted for ${path}` } })

function script<Answer>(
  defaultHandler: FakeScript<Answer>['handler'],
): FakeScript<Answer> & { next(request: FakeModelRequest): Promise<Answer>; reset(): void } {
  const queued: Scripted<Answer>[] = []
  const self = {
    handler: defaultHandler,
    reset() {
      queued.length = 0
      self.handler = defaultHandler
    },
    queue: (...answers: Scripted<Answer>[]) => {
      queued.push(...answers)
    },
    async next(request: FakeModelRequest): Promise<Answer> {
      const answer = queued.shift()
      if (answer === undefined) return self.handler(request)
      return typeof answer === 'function'
        ? (answer as (request: FakeModelRequest) => Answer | Promise<Answer>)(request)
        : answer
    },
  }
  return self
}

/** Resolves after `ms`, or at once when `signal` fires; 0 still lets the event loop turn, so pieces leave apart. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    if (ms <= 0) return setImmediate(resolve)
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

/**
 * A body sent piece by piece: the headers leave at once, then `pieces` with `firstDelayMs` before the first and
 * `delayMs` between the others; after `stallAfter` pieces it sends nothing more until the client goes away.
 */
function pacedBody(
  pieces: Uint8Array[],
  signal: AbortSignal,
  pacing: { firstDelayMs?: number; delayMs?: number; stallAfter?: number },
  sentAtMs: number[] = [],
): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      await pause(pacing.firstDelayMs ?? 0, signal)
      for (const [index, piece] of pieces.entries()) {
        if (signal.aborted) break
        if (index === pacing.stallAfter)
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        else {
          if (index > 0) await pause(pacing.delayMs ?? 0, signal)
          controller.enqueue(piece)
          sentAtMs.push(performance.now())
        }
      }
      if (!signal.aborted) controller.close()
    },
  })
}

const encoder = new TextEncoder()

function floodResponse(flood: FakeFlood, request: FakeModelRequest): Response {
  const body = floodBody(flood.bytes, {
    prefix: flood.prefix,
    sent: (bytes) => {
      request.sentBytes += bytes
    },
  })
  return new Response(body, {
    status: flood.status ?? 200,
    headers: { 'content-type': flood.contentType ?? 'application/json' },
  })
}

function textPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text])
}

function piecesOf<Whole extends { length: number; slice(start: number, end: number): Whole }>(
  whole: Whole,
  size: number,
): Whole[] {
  const pieces: Whole[] = []
  for (let start = 0; start < whole.length; start += size) pieces.push(whole.slice(start, start + size))
  return pieces
}

let completionCount = 0

async function chatCompletion(
  request: FakeModelRequest,
  answer: FakeChatAnswer,
  signal: AbortSignal,
): Promise<Response> {
  const model = request.body?.model ?? 'fake'
  const base = { id: `chatcmpl-fake-${++completionCount}`, created: Math.floor(Date.now() / 1000), model }
  const calls = (answer.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_fake_${completionCount}_${index}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }))
  const finishReason = answer.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop')
  const completionLength = (answer.text ?? '').length + calls.reduce((total, call) => total + call.arguments.length, 0)
  const scripted = answer.usage === 'none' ? undefined : answer.usage
  const promptTokens = scripted?.prompt_tokens ?? Math.ceil(JSON.stringify(request.body?.messages ?? []).length / 4)
  const completionTokens = scripted?.completion_tokens ?? Math.ceil(completionLength / 4)
  const usage =
    answer.usage === 'none'
      ? null
      : {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        }

  if (request.body?.stream !== true) {
    await pause(answer.firstTokenDelayMs ?? 0, signal)
    const message: Record<string, unknown> = { role: 'assistant', content: answer.text ?? null }
    if (calls.length > 0) {
      message.tool_calls = calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }))
    }
    return Response.json({
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message, finish_reason: finishReason }],
      ...(usage ? { usage } : {}),
    })
  }

  const chunk = (delta: object, finish: string | null = null) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })
  const chunks: object[] = [chunk({ role: 'assistant', content: '' })]
  for (const piece of textPieces(answer.text ?? '')) chunks.push(chunk({ content: piece }))
  for (const [index, call] of calls.entries()) {
    chunks.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    )
    for (const fragment of piecesOf(call.arguments, 7))
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }))
  }
  if (answer.streamedError) chunks.push({ error: answer.streamedError })
  else chunks.push(chunk({}, finishReason))
  if (usage && request.body?.stream_options?.include_usage)
    chunks.push({ ...base, object: 'chat.completion.chunk', choices: [], usage })
  const payloads = answer.rawEvents ?? [...chunks.map((item) => JSON.stringify(item)), '[DONE]']
  const events = payloads.map((payload) => `data: ${payload}\n\n`)
  const body = pacedBody(
    events.map((event) => encoder.encode(event)),
    signal,
    {
      firstDelayMs: answer.firstTokenDelayMs,
      delayMs: answer.chunkDelayMs,
      stallAfter: answer.stallAfterChunks,
    },
  )
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
}

function speechAnswer(request: FakeModelRequest, answer: FakeSpeechAnswer, signal: AbortSignal): Response {
  const format = answer.format ?? request.body?.response_format
  if (answer.format === 'mp3')
    return new Response(encoder.encode('ID3 not really mp3'), { headers: { 'content-type': 'audio/mpeg' } })
  if (format !== 'pcm' && format !== 'wav') {
    return Response.json(
      { error: { message: `fake model server: response_format ${format} is not supported` } },
      { status: 400 },
    )
  }
  const sampleRate = format === 'wav' ? (answer.sampleRate ?? FAKE_SPEECH_RATE) : FAKE_SPEECH_RATE
  const pcm = fakeSpeech(String(request.body?.input ?? ''), sampleRate)
  const bytes = format === 'wav' ? encodeWav(pcm, sampleRate) : new Uint8Array(pcm.buffer)
  const pieces = piecesOf(bytes, answer.chunkBytes ?? FAKE_SPEECH_PIECE_BYTES)
  return new Response(
    pacedBody(
      pieces,
      signal,
      { firstDelayMs: answer.delayMs, delayMs: answer.chunkDelayMs, stallAfter: answer.stallAfterChunks },
      request.piecesSentAtMs,
    ),
    {
      headers: { 'content-type': format === 'wav' ? 'audio/wav' : 'audio/pcm' },
    },
  )
}

async function received(request: Request, path: string): Promise<FakeModelRequest> {
  const recorded: FakeModelRequest = {
    method: request.method,
    path,
    headers: new Headers(request.headers),
    body: undefined,
    aborted: false,
    sentBytes: 0,
    piecesSentAtMs: [],
  }
  if (request.method !== 'POST') return recorded
  if (path === '/audio/transcriptions') {
    const form = await request.formData()
    const file = form.get('file')
    const fields = Object.fromEntries([...form.entries()].filter(([name]) => name !== 'file'))
    if (file instanceof Blob) {
      const wav = new Uint8Array(await file.arrayBuffer())
      recorded.body = { ...fields, file: { name: (file as File).name, type: file.type, size: file.size } }
      recorded.audio = { wav, ...decodeWav(wav) }
    } else recorded.body = fields
    return recorded
  }
  const text = await request.text()
  recorded.body = text === '' ? undefined : JSON.parse(text)
  return recorded
}

export function startFakeModels(): FakeModels {
  const requests: FakeModelRequest[] = []
  const chat = script<FakeChatAnswer>(nothingScripted('/chat/completions'))
  const transcription = script<FakeTranscriptionAnswer>(nothingScripted('/audio/transcriptions'))
  const speech = script<FakeSpeechAnswer>(() => ({}))
  const models = script<FakeModelListAnswer>(() => ({ ids: ['fake-llm', 'fake-stt', 'fake-tts'] }))
  const embeddings = script<FakeEmbeddingsAnswer>(() => ({}))

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname.replace(/^\/v1/, '')
      const recorded = await received(request, path)
      requests.push(recorded)
      // Whatever the answer, the client may leave first; a completed answer leaves `aborted` false.
      const clientGone = new AbortController()
      request.signal.addEventListener(
        'abort',
        () => {
          recorded.aborted = true
          clientGone.abort()
        },
        { once: true },
      )
      const failure = (answer: { fail?: FakeFailure; flood?: FakeFlood }) =>
        (answer.fail && Response.json(answer.fail.body, { status: answer.fail.status })) ||
        (answer.flood && floodResponse(answer.flood, recorded))

      if (request.method === 'GET' && path === '/models') {
        const answer = await models.next(recorded)
        return (
          failure(answer) ||
          Response.json({
            object: 'list',
            data: (answer.ids ?? []).map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })),
          })
        )
      }
      if (request.method === 'POST' && path === '/chat/completions') {
        const answer = await chat.next(recorded)
        await pause(answer.headersDelayMs ?? 0, clientGone.signal)
        return failure(answer) || chatCompletion(recorded, answer, clientGone.signal)
      }
      if (request.method === 'POST' && path === '/audio/transcriptions') {
        const answer = await transcription.next(recorded)
        await pause(answer.delayMs ?? 0, clientGone.signal)
        const text = answer.text ?? ''
        if (answer.stall) {
          const pieces = [encoder.encode('{"text": '), encoder.encode(JSON.stringify(text) + '}')]
          return new Response(pacedBody(pieces, clientGone.signal, { stallAfter: 1 }), {
            headers: { 'content-type': 'application/json' },
          })
        }
        return (
          failure(answer) || (recorded.body?.response_format === 'text' ? new Response(text) : Response.json({ text }))
        )
      }
      if (request.method === 'POST' && path === '/audio/speech') {
        const answer = await speech.next(recorded)
        await pause(answer.headersDelayMs ?? 0, clientGone.signal)
        return failure(answer) || speechAnswer(recorded, answer, clientGone.signal)
      }
      if (request.method === 'POST' && path === '/embeddings') {
        const answer = await embeddings.next(recorded)
        await pause(answer.delayMs ?? 0, clientGone.signal)
        const input: string[] =
          typeof recorded.body?.input === 'string' ? [recorded.body.input] : (recorded.body?.input ?? [])
        return (
          failure(answer) ||
          Response.json({
            object: 'list',
            model: recorded.body?.model,
            data: input.map((text, index) => ({
              object: 'embedding',
              index,
              embedding: fakeEmbedding(text, answer.dimension),
            })),
            usage: { prompt_tokens: input.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0), total_tokens: 0 },
          })
        )
      }
      return Response.json({ error: { message: `fake model server: no ${request.method} ${path}` } }, { status: 404 })
    },
  })
  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    requests,
    requestsTo: (path) => requests.filter((request) => request.path === path),
    chat,
    transcription,
    speech,
    models,
    embeddings,
    reset() {
      requests.length = 0
      for (const endpoint of [chat, transcription, speech, models, embeddings]) endpoint.reset()
    },
    stop: () => {
      server.stop(true)
    },
  }
}

/** A base URL where nothing listens (a server started and stopped), for "connection refused". */
export function deadBaseUrl(): string {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const url = `http://127.0.0.1:${server.port}/v1`
  server.stop(true)
  return url
}

/** The ModelServerError `promise` rejects with (fails the test if it resolves or rejects with anything else). */
export async function modelServerFailure(promise: Promise<unknown>): Promise<ModelServerError> {
  const error = await promise.then(
    () => null,
    (caught) => caught,
  )
  expect(error).toBeInstanceOf(ModelServerError)
  return error
}
