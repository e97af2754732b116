/**
 * A fake realtime speech-to-speech server (the OpenAI Realtime API over WebSocket) on 127.0.0.1, for calls whose model
 * configuration has a `realtime` section. It speaks `session.update`, `input_audio_buffer.*`, `response.*` and
 * `conversation.item.*`:
 *
 * - Caller audio (24 kHz) is heard with a plain energy detector: the first loud chunk sends `speech_started`, 250 ms
 *   without a loud chunk ends the turn (`speech_stopped`, `committed`, then the transcription). The transcription is
 *   deterministic: the dominant frequency of the turn's audio, rounded to 50 Hz, looked up in `words` (else
 *   `tone <Hz>`), so a test says a sentence by sending a tone.
 * - `response.create` answers with the next scripted reply (`replies`), or by default: a line to read out
 *   (instructions "…: <text>") is said as it is; otherwise "You said: <last transcript>". A reply is audio (a 24 kHz
 *   tone, 40 ms per character unless `audioMs`), its transcript, an optional function call, then `response.done` with
 *   usage (text and audio tokens).
 * - A transcription session (`transcription_session.update`, the `?intent=transcription` socket of streaming speech
 *   to text) keeps every appended chunk and, at `input_audio_buffer.commit`, answers the same deterministic
 *   transcription as a `.delta` then `.completed` (`silent`: never answers the commit).
 * - `behaviour` makes it hostile: `silent` (never answers), `flood` (events without end), `huge` (a 100 MB frame at
 *   the first response), `close` (closes the socket at the second response), `drop_once` (closes the transcription
 *   socket at its first commit, unanswered; later sockets behave), `gone` (the same, and refuses every later socket).
 * - vLLM's dialect (a `session.update` with a top-level `model`, 16 kHz audio): a commit starts a transcription
 *   (`ignoredCommits` counts those sent while one runs, which vLLM ignores), a `final` commit ends it and, 50 ms later
 *   (`vllmDoneDelayMs`) `transcription.delta` then `transcription.done` answer the same deterministic transcription of the audio since the
 *   last one, and the audio queue is emptied then (vLLM discards audio sent before the last transcription is done).
 * - `uploadText`: when set, `POST <base>/audio/transcriptions` (the file-upload path) answers `{text: uploadText}`.
 *
 * Everything received is recorded: `events` (appends only counted in `appendedSamples`), `sessions` (each
 * `session.update`'s session), `truncates`, `cancels`, `outputs` (function_call_output items).
 */
import type { Server, ServerWebSocket } from 'bun'
import { rms, sine, toneAmplitude } from './audio'
import { concatPcm } from './voice'

export type FakeRealtimeReply = {
  text?: string
  audioMs?: number
  /** A function call after the speech; without `name`, the first function of the session. */
  call?: { name?: string; arguments?: string }
}

export type FakeRealtimeBehaviour = 'normal' | 'silent' | 'flood' | 'huge' | 'close' | 'drop_once' | 'gone'

export type FakeRealtime = {
  /** `http://127.0.0.1:<port>/v1`: a provider connection's base URL. */
  readonly baseUrl: string
  behaviour: FakeRealtimeBehaviour
  /** `ga`: the newer event names (`response.output_audio.delta`, …). */
  eventNames: 'beta' | 'ga'
  replies: FakeRealtimeReply[]
  words: Record<number, string>
  uploadText: string | null
  /** How long a vLLM transcription takes after its `final` commit. */
  vllmDoneDelayMs: number
  readonly events: Record<string, any>[]
  readonly sessions: Record<string, any>[]
  readonly truncates: Record<string, any>[]
  readonly cancels: Record<string, any>[]
  readonly outputs: Record<string, any>[]
  readonly transcripts: string[]
  /** The audio of each commit of a transcription session, whole, as it was appended (24 kHz; vLLM's 16 kHz). */
  readonly committed: Int16Array[]
  readonly appendedSamples: number
  readonly ignoredCommits: number
  /** The URL paths and headers the app connected with. */
  readonly connections: { path: string; host: string | null; authorization: string | null }[]
  reset(): void
  stop(): void
}

const RATE = 24_000
const LOUD = 500
const TURN_END_MS = 250

type Socket = ServerWebSocket<{ id: number }>

type Connection = {
  socket: Socket
  heard: Int16Array[]
  speaking: boolean
  turnTimer: ReturnType<typeof setTimeout> | undefined
  tools: { name: string }[]
  /** A transcription session: appended audio waits for the commit, no turn detection. */
  transcribing: boolean
  /** A vLLM session (16 kHz); `generating` while a transcription runs. */
  vllm: boolean
  generating: boolean
  uncommitted: Int16Array[]
  responses: number
  item: number
}

export function startFakeRealtime(): FakeRealtime {
  let appendedSamples = 0
  let ignoredCommits = 0
  const fake = {
    behaviour: 'normal' as FakeRealtimeBehaviour,
    eventNames: 'beta' as 'beta' | 'ga',
    replies: [] as FakeRealtimeReply[],
    words: {} as Record<number, string>,
    uploadText: null as string | null,
    vllmDoneDelayMs: 50,
    events: [] as Record<string, any>[],
    sessions: [] as Record<string, any>[],
    truncates: [] as Record<string, any>[],
    cancels: [] as Record<string, any>[],
    outputs: [] as Record<string, any>[],
    transcripts: [] as string[],
    committed: [] as Int16Array[],
    connections: [] as { path: string; host: string | null; authorization: string | null }[],
  }
  const connections = new Map<Socket, Connection>()
  const timers = new Set<ReturnType<typeof setInterval>>()
  let nextId = 0
  /** A `drop_once` / `gone` socket was closed. */
  let dropped = false
  const server: Server<{ id: number }> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request, srv) {
      const url = new URL(request.url)
      fake.connections.push({
        path: `${url.pathname}${url.search}`,
        host: request.headers.get('host'),
        authorization: request.headers.get('authorization'),
      })
      if (fake.uploadText !== null && url.pathname.endsWith('/audio/transcriptions'))
        return Response.json({ text: fake.uploadText })
      if (fake.behaviour === 'gone' && dropped) return new Response('gone', { status: 503 })
      if (srv.upgrade(request, { data: { id: nextId++ } })) return undefined
      return new Response('not a websocket', { status: 400 })
    },
    websocket: {
      maxPayloadLength: 256 * 1024 * 1024,
      open(socket) {
        const connection: Connection = {
          socket,
          heard: [],
          speaking: false,
          turnTimer: undefined,
          tools: [],
          transcribing: false,
          vllm: false,
          generating: false,
          uncommitted: [],
          responses: 0,
          item: 0,
        }
        connections.set(socket, connection)
        if (fake.behaviour === 'flood') {
          const timer = setInterval(() => {
            for (let index = 0; index < 500; index++) send(connection, { type: 'rate_limits.updated', rate_limits: [] })
          }, 1)
          timers.add(timer)
        }
      },
      message(socket, message) {
        const connection = connections.get(socket)
        if (!connection || fake.behaviour === 'silent') return
        handle(connection, JSON.parse(String(message)))
      },
      close(socket) {
        const connection = connections.get(socket)
        clearTimeout(connection?.turnTimer)
        connections.delete(socket)
      },
    },
  })

  function send(connection: Connection, event: Record<string, unknown>): void {
    if (connection.socket.readyState === 1) connection.socket.send(JSON.stringify(event))
  }

  function handle(connection: Connection, event: Record<string, any>): void {
    if (event.type === 'input_audio_buffer.append') return hear(connection, event.audio)
    fake.events.push(event)
    if (event.type === 'session.update' && typeof event.model === 'string' && !event.session) {
      fake.sessions.push({ model: event.model })
      Object.assign(connection, { vllm: true, transcribing: true })
    } else if (event.type === 'input_audio_buffer.commit' && connection.vllm)
      vllmCommit(connection, event.final === true)
    else if (event.type === 'transcription_session.update') {
      fake.sessions.push(event.session)
      connection.transcribing = true
      send(connection, { type: 'transcription_session.updated', session: event.session })
    } else if (event.type === 'input_audio_buffer.commit' && connection.transcribing) {
      if ((fake.behaviour === 'drop_once' || fake.behaviour === 'gone') && !dropped) {
        dropped = true
        return connection.socket.close(1011, 'dropped')
      }
      commitTranscription(connection)
    } else if (event.type === 'session.update') {
      fake.sessions.push(event.session)
      if (Array.isArray(event.session?.tools)) connection.tools = event.session.tools
      send(connection, { type: 'session.updated', session: event.session })
    } else if (event.type === 'conversation.item.truncate') fake.truncates.push(event)
    else if (event.type === 'response.cancel') fake.cancels.push(event)
    else if (event.type === 'conversation.item.create' && event.item?.type === 'function_call_output')
      fake.outputs.push(event.item)
    else if (event.type === 'response.create') respond(connection, event.response ?? {})
  }

  function hear(connection: Connection, audio: string): void {
    const bytes = Buffer.from(audio, 'base64')
    const pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))
    appendedSamples += pcm.length
    if (connection.transcribing) return void connection.uncommitted.push(pcm)
    if (rms(pcm) < LOUD) return
    if (!connection.speaking) {
      connection.speaking = true
      connection.heard = []
      send(connection, {
        type: 'input_audio_buffer.speech_started',
        audio_start_ms: 0,
        item_id: `in_${connection.item}`,
      })
    }
    connection.heard.push(pcm)
    clearTimeout(connection.turnTimer)
    connection.turnTimer = setTimeout(() => endTurn(connection), TURN_END_MS)
  }

  function vllmCommit(connection: Connection, final: boolean): void {
    if (!final) {
      if (connection.generating) ignoredCommits++
      connection.generating = true
      return
    }
    if (!connection.generating) return
    const audio = connection.uncommitted.splice(0)
    fake.committed.push(concatPcm(audio))
    const heard = audio.filter((chunk) => rms(chunk) >= LOUD)
    setTimeout(() => {
      const transcript = transcriptOf(heard, 16_000)
      connection.uncommitted.length = 0
      connection.generating = false
      send(connection, { type: 'transcription.delta', delta: transcript })
      send(connection, { type: 'transcription.done', text: transcript, usage: { prompt_tokens: 1 } })
    }, fake.vllmDoneDelayMs)
  }

  function commitTranscription(connection: Connection): void {
    const itemId = `in_${connection.item++}`
    send(connection, { type: 'input_audio_buffer.committed', item_id: itemId })
    const audio = connection.uncommitted.splice(0)
    fake.committed.push(concatPcm(audio))
    const transcript = transcriptOf(audio.filter((chunk) => rms(chunk) >= LOUD))
    send(connection, { type: 'conversation.item.input_audio_transcription.delta', item_id: itemId, delta: transcript })
    send(connection, {
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: itemId,
      content_index: 0,
      transcript,
    })
  }

  /** What the fake hears in `heard`: its first 200 ms' dominant tone, through `words`. */
  function transcriptOf(heard: Int16Array[], rate = RATE): string {
    const hz = strongestTone(concatPcm(heard).subarray(0, rate / 5), rate)
    const transcript = fake.words[hz] ?? `tone ${hz}`
    fake.transcripts.push(transcript)
    return transcript
  }

  function endTurn(connection: Connection): void {
    connection.speaking = false
    const itemId = `in_${connection.item++}`
    send(connection, { type: 'input_audio_buffer.speech_stopped', audio_end_ms: 0, item_id: itemId })
    send(connection, { type: 'input_audio_buffer.committed', item_id: itemId })
    const transcript = transcriptOf(connection.heard)
    send(connection, {
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: itemId,
      content_index: 0,
      transcript,
    })
  }

  function respond(connection: Connection, request: Record<string, any>): void {
    connection.responses++
    if (fake.behaviour === 'huge') {
      connection.socket.send(JSON.stringify({ type: 'response.created', padding: 'x'.repeat(100 * 1024 * 1024) }))
      return
    }
    if (fake.behaviour === 'close' && connection.responses === 2) return connection.socket.close(1011, 'gone')
    const line = typeof request.instructions === 'string' ? /: (.*)$/s.exec(request.instructions)?.[1] : undefined
    const reply = line !== undefined ? { text: line } : (fake.replies.shift() ?? { text: defaultReply() })
    const responseId = `resp_${connection.responses}`
    const itemId = `item_${connection.responses}`
    const names = fake.eventNames === 'ga' ? GA : BETA
    send(connection, { type: 'response.created', response: { id: responseId, status: 'in_progress' } })
    const text = reply.text ?? ''
    if (text) {
      const audio = sine(300, RATE, reply.audioMs ?? Math.min(3_000, 40 * text.length), 8_000)
      for (let offset = 0; offset < audio.length; offset += RATE / 10) {
        const chunk = audio.subarray(offset, offset + RATE / 10)
        const delta = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('base64')
        send(connection, { type: names.audio, response_id: responseId, item_id: itemId, delta })
      }
      for (const word of text.split(/(?<= )/))
        send(connection, { type: names.transcriptDelta, response_id: responseId, item_id: itemId, delta: word })
      send(connection, { type: names.transcriptDone, response_id: responseId, item_id: itemId, transcript: text })
    }
    if (reply.call) {
      const name = reply.call.name ?? connection.tools[0]?.name ?? 'none'
      send(connection, {
        type: 'response.output_item.done',
        response_id: responseId,
        item: {
          id: `call_item_${connection.responses}`,
          type: 'function_call',
          call_id: `call_${connection.responses}`,
          name,
          arguments: reply.call.arguments ?? '{}',
        },
      })
    }
    send(connection, { type: 'response.done', response: { id: responseId, status: 'completed', usage: USAGE } })
  }

  const defaultReply = () => `You said: ${fake.transcripts.at(-1) ?? 'nothing'}`

  Object.defineProperty(fake, 'appendedSamples', { get: () => appendedSamples })
  Object.defineProperty(fake, 'ignoredCommits', { get: () => ignoredCommits })
  return Object.assign(fake as typeof fake & { readonly appendedSamples: number; readonly ignoredCommits: number }, {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    reset() {
      Object.assign(fake, {
        behaviour: 'normal',
        eventNames: 'beta',
        replies: [],
        words: {},
        uploadText: null,
        vllmDoneDelayMs: 50,
      })
      dropped = false
      for (const list of [
        fake.events,
        fake.sessions,
        fake.truncates,
        fake.cancels,
        fake.outputs,
        fake.transcripts,
        fake.committed,
      ])
        list.length = 0
      fake.connections.length = 0
      appendedSamples = 0
      ignoredCommits = 0
    },
    stop() {
      for (const timer of timers) clearInterval(timer)
      server.stop(true)
    },
  })
}

const BETA = {
  audio: 'response.audio.delta',
  transcriptDelta: 'response.audio_transcript.delta',
  transcriptDone: 'response.audio_transcript.done',
}
const GA = {
  audio: 'response.output_audio.delta',
  transcriptDelta: 'response.output_audio_transcript.delta',
  transcriptDone: 'response.output_audio_transcript.done',
}

/** What every response reports: 10 in (6 audio), 20 out (15 audio). */
export const FAKE_REALTIME_USAGE = {
  input_tokens: 10,
  output_tokens: 20,
  total_tokens: 30,
  input_token_details: { text_tokens: 4, audio_tokens: 6 },
  output_token_details: { text_tokens: 5, audio_tokens: 15 },
}
const USAGE = FAKE_REALTIME_USAGE

/** The strongest of the tones a test sends (100 Hz to 3 kHz, 50 Hz steps). */
function strongestTone(samples: Int16Array, rate: number): number {
  let best = 0
  let bestAmplitude = -1
  for (let hz = 100; hz <= 3_000; hz += 50) {
    const amplitude = toneAmplitude(samples, hz, rate)
    if (amplitude > bestAmplitude) [best, bestAmplitude] = [hz, amplitude]
  }
  return best
}
