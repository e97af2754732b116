// Voice pipeline timing: `bun scripts/bench/voice.ts [latency calls] [load calls]` (defaults 20 and 100); pin it to one
// core with `taskset -c 1 bun scripts/bench/voice.ts`. Conversations run through the fake chan_websocket endpoint with
// instant fake STT/LLM/TTS. The fake PBX with its scripted callers, and the fake models, run in two child processes
// (this file with --fake-pbx, --fake-models), so the CPU measured here is Ringbase's alone (pipeline, VAD, resampling,
// codecs, model clients and conversations) and the models are not slowed by the fake PBX's load.
//
// Each call: the greeting, then the caller speaks (real speech from the built-in voice) at 1.5 s and 14 s, each time
// answered with a 5-sentence reply (~8 s of audio); the call is hung up at 26 s.
// Reported: per turn, end of caller speech → first agent audio sent (`voice_to_voice_ms`, first answer and later ones;
// goal p50 ≤ 600 ms), split into the stop window waited (the pause window when speculation ended the turn early, else
// the full window), what speculation saved, and the response after it (`response_ms`): the models' first bytes (STT
// answer, LLM first text, TTS first audio, as the fakes answered over HTTP), the TTS streaming the 300 ms start lead
// (`tts_lead_ms`; `tts_lead_sent_by_fake_ms` is the same lead as the fake sent it, matched per turn, and
// `engine_overhead_with_ringbase_share_of_lead_ms` counts only the rest of it) and the rest (`engine_overhead_ms`, goal
// p99 < 50 ms; < 100 ms under load); the LLM requests sent per answered turn (speculation's cost); with `load calls`
// simultaneous calls, the share of one core per call (goal < 2 %) and agent audio played late (frames missing inside
// an agent turn because a chunk came late: goal 0), once with callers spread and once all stopping at the same instant. Last, the built-in voice: how long Flite holds the event
// loop when it synthesises in this thread, and when it runs in its worker threads (builtin-voice.ts).
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { AgentDefinition } from '../../src/definition/definition'
import { createConversation } from '../../src/conversation/engine'
import { systemClock } from '../../src/lib/clock'
import { createLlmClient } from '../../src/models/llm'
import { createSttClient } from '../../src/models/stt'
import { createTtsClient } from '../../src/models/tts'
import { connectAriMedia } from '../../src/voice/ari-media'
import { createVoicePipeline, engineShareMs, type VoiceCallResult } from '../../src/voice/pipeline'
import { createBuiltinVoice } from '../../src/voice/builtin-voice'
import { createFliteTts } from '../../src/voice/flite'
import type { TtsClient } from '../../src/models/types'
import { loadVadEngine, type VadEngine } from '../../src/voice/vad'
import { startFakeAriMedia, type FakeMediaChannel } from '../../test/support/fake-ari-media'
import {
  FAKE_SPEECH_PIECE_BYTES,
  FAKE_SPEECH_RATE,
  type FakeModelRequest,
  say,
  startFakeModels,
} from '../../test/support/fake-models'
import { callerSpeech } from '../../test/support/voice'

const UTTERANCE = 'Can I book a table for two tonight at eight?'
const SPEAK_AT_MS = [1_500, 14_000]
const CALL_MS = 26_000
const GREETING = 'Hello, this is Ava from Acme.'
const REPLY_FIRST_SENTENCE = 'Of course, I can help you with that booking tonight.'
const REPLY =
  `${REPLY_FIRST_SENTENCE} We have a quiet table by the window at eight. ` +
  'It seats two people comfortably and looks over the garden. Would you like me to hold it under your name for you? ' +
  'I can also send a confirmation to your phone once it is booked.'
const FRAME_MS = 20

// ---------------------------------------------------------------------------------------------------------------
// The children: the fake PBX (chan_websocket and the scripted callers) in one, the fake models in another, so that
// "instant" models are not slowed by the fake PBX's own load. Each has a control server and watches its event loop.

/** Stalls (over 100 ms without running a 10 ms timer) of this process's event loop since the last reset. */
function watchStalls() {
  let stalls: number[] = []
  let lastTick = performance.now()
  setInterval(() => {
    const now = performance.now()
    if (now - lastTick > 110) stalls.push(Math.round(now - lastTick))
    lastTick = now
  }, 10)
  return {
    get stalls() {
      return stalls
    },
    reset: () => {
      stalls = []
    },
  }
}

/** A child's control server: its routes, plus `POST /reset`; prints `READY <service url> <control url>`. */
function serveControl(
  serviceUrl: string,
  routes: (request: Request, path: string) => Promise<Response | null>,
  reset: () => void,
) {
  const control = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      if (request.method === 'POST' && path === '/reset') {
        reset()
        return Response.json({})
      }
      return (await routes(request, path)) ?? new Response('not found', { status: 404 })
    },
  })
  console.log(`READY ${serviceUrl} http://127.0.0.1:${control.port}`)
}

/**
 * The fake TTS's own share of each reply's start lead, per call (its voice names the call) in order: its first piece
 * of audio handed to the connection → the piece that completes the first 300 ms (agent-voice.ts), for the replies'
 * first sentences. A fake that shares the machine's cores with Ringbase is itself late when 100 answers are due at
 * once; this tells its delay from Ringbase's, turn by turn.
 */
function replyLeadsSentMs(speeches: FakeModelRequest[]): Record<string, number[]> {
  const leadPiece = Math.ceil((0.3 * FAKE_SPEECH_RATE * 2) / FAKE_SPEECH_PIECE_BYTES) - 1
  const leads: Record<string, number[]> = {}
  for (const { body, piecesSentAtMs: sentAt } of speeches) {
    if (body?.input !== REPLY_FIRST_SENTENCE) continue
    leads[body.voice] ??= []
    leads[body.voice].push(sentAt.length > leadPiece ? sentAt[leadPiece] - sentAt[0] : Number.NaN)
  }
  return leads
}

async function runFakeModels(): Promise<void> {
  const models = startFakeModels()
  models.chat.handler = () => say(REPLY)
  models.transcription.handler = () => ({ text: UTTERANCE })
  const loop = watchStalls()
  serveControl(
    models.baseUrl,
    async (request, path) =>
      request.method === 'GET' && path === '/stats'
        ? Response.json({
            llmRequests: models.requestsTo('/chat/completions').length,
            replyLeadsSentMs: replyLeadsSentMs(models.requestsTo('/audio/speech')),
            stalls: loop.stalls,
          })
        : null,
    () => {
      models.requests.length = 0
      loop.reset()
    },
  )
}

async function runFakePbx(): Promise<void> {
  const media = startFakeAriMedia()
  const speech = await callerSpeech(UTTERANCE)
  const channels = new Map<string, { channel: FakeMediaChannel; spokeAt: number[] }>()
  const loop = watchStalls()

  /**
   * Frames missing inside agent turns: each turn is the played stretch between two caller utterances. A gap's place
   * (ms from the turn's first frame) tells a stutter at the start of a reply from one between its sentences.
   */
  function lateFrames(entry: { channel: FakeMediaChannel; spokeAt: number[] }) {
    const bounds = [...entry.spokeAt, Infinity]
    let late = 0
    const gapsAtMs: number[] = []
    let previous: number | null = null
    let turnStart = 0
    let window = 0
    for (const { atMs } of entry.channel.played) {
      while (atMs >= bounds[window]) {
        window++
        previous = null
      }
      if (previous === null) turnStart = atMs
      else if (atMs - previous > FRAME_MS + 1) {
        late += Math.round((atMs - previous) / FRAME_MS) - 1
        gapsAtMs.push(previous - turnStart)
      }
      previous = atMs
    }
    return { played: entry.channel.played.length, late, gapsAtMs }
  }

  serveControl(
    media.url,
    async (request, path) => {
      if (request.method === 'POST' && path === '/channels') {
        // `speakAt`: epoch ms at which the caller speaks (every caller of a phase at the same instants); else offsets
        // from the connection
        const { speakAt } = (await request.json()) as { speakAt?: number[] }
        const channel = media.addChannel()
        const entry = { channel, spokeAt: [] as number[] }
        channels.set(channel.connectionId, entry)
        void channel.connected.then(() => {
          for (const delayMs of speakAt ? speakAt.map((at) => at - Date.now()) : SPEAK_AT_MS) {
            setTimeout(() => {
              entry.spokeAt.push(performance.now())
              channel.speak(speech)
            }, delayMs)
          }
        })
        return Response.json({ connectionId: channel.connectionId })
      }
      if (request.method === 'GET' && path === '/stats') {
        const all = [...channels.values()].map(lateFrames)
        return Response.json({
          played: all.reduce((n, s) => n + s.played, 0),
          late: all.reduce((n, s) => n + s.late, 0),
          lateGapsAtMs: all.flatMap((s) => s.gapsAtMs),
          calls: all.length,
          stalls: loop.stalls,
        })
      }
      return null
    },
    () => {
      channels.clear()
      loop.reset()
    },
  )
}

// ---------------------------------------------------------------------------------------------------------------
// The parent: the calls

const definition: AgentDefinition = {
  nodes: [
    {
      id: '1',
      type: 'startCall',
      position: { x: 0, y: 0 },
      data: { name: 'Start', greeting: GREETING, prompt: 'Help the caller book a table.' },
    },
  ],
  edges: [],
}

type Child = { url: string; control: string; stop(): void }
type Endpoints = { pbx: Child; models: Child }

/** A fakes child (`role`: pbx or models); it may use every core (this process may be pinned to one: its CPU is measured). */
async function startChild(role: 'pbx' | 'models'): Promise<Child> {
  const command = [process.execPath, import.meta.path, `--fake-${role}`]
  const everyCore = Bun.which('taskset') ? ['taskset', '-c', `0-${navigator.hardwareConcurrency - 1}`] : []
  const child = Bun.spawn([...everyCore, ...command], { stdout: 'pipe', stderr: 'inherit' })
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the fake ${role} process ended before it was ready`)
    text += new TextDecoder().decode(value)
  }
  const [, url, control] = text.trim().split(/\s+/)
  return { url, control, stop: () => child.kill() }
}

async function oneCall(
  endpoints: Endpoints,
  vad: VadEngine,
  voice: string,
  speakAt?: number[],
): Promise<VoiceCallResult> {
  const created = await fetch(`${endpoints.pbx.control}/channels`, {
    method: 'POST',
    body: JSON.stringify({ speakAt }),
  })
  const { connectionId } = (await created.json()) as { connectionId: string }
  const transport = await connectAriMedia({ endpoint: endpoints.pbx.url, connectionId })
  const connection = { provider: 'openai', baseUrl: endpoints.models.url }
  const pipeline = createVoicePipeline({
    transport,
    vad,
    clock: systemClock,
    stt: createSttClient(connection, { model: 'fake-stt' }),
    tts: createTtsClient(connection, { model: 'fake-tts', voice }),
  })
  const conversation = createConversation({
    definition,
    configurations: { max_call_duration_seconds: 600, max_user_idle_timeout_seconds: 60 },
    variables: {},
    llm: createLlmClient(connection, { model: 'fake-llm' }),
    clock: systemClock,
    onEvent: pipeline.conversationEvent,
  })
  const hangup = setTimeout(() => void pipeline.stop('user_hangup'), CALL_MS)
  const result = await pipeline.run(conversation)
  clearTimeout(hangup)
  return result
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
const ms = (value: number) => Math.round(value * 10) / 10

function distribution(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    n: sorted.length,
    p50: ms(percentile(sorted, 50)),
    p90: ms(percentile(sorted, 90)),
    p99: ms(percentile(sorted, 99)),
    max: ms(sorted.at(-1) ?? NaN),
  }
}

/** `together`: every caller speaks at the same instants (all stop at once), else at offsets from its own start. */
async function phase(name: string, calls: number, endpoints: Endpoints, vad: VadEngine, together = false) {
  await Promise.all(
    [endpoints.pbx, endpoints.models].map((child) => fetch(`${child.control}/reset`, { method: 'POST' })),
  )
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const cpuBefore = process.cpuUsage()
  const startedAt = performance.now()
  // when the event loop stalled (more than 100 ms without running a 10 ms timer), from the phase's start, and the CPU
  // this process used meanwhile (about gap_ms: its own work; far less: it waited for a core the machine gave elsewhere)
  const stalls: { at_ms: number; gap_ms: number; cpu_ms: number }[] = []
  let lastTick = startedAt
  let lastCpu = process.cpuUsage()
  const stallWatch = setInterval(() => {
    const now = performance.now()
    const cpuNow = process.cpuUsage()
    if (now - lastTick > 110) {
      const cpuMs = (cpuNow.user - lastCpu.user + cpuNow.system - lastCpu.system) / 1000
      stalls.push({
        at_ms: Math.round(lastTick - startedAt),
        gap_ms: Math.round(now - lastTick),
        cpu_ms: Math.round(cpuMs),
      })
    }
    lastTick = now
    lastCpu = cpuNow
  }, 10)
  const speakAt = together ? SPEAK_AT_MS.map((at) => Date.now() + 2_000 + at) : undefined
  // calls start spread over two seconds, as a dialer would ramp up
  const results = await Promise.all(
    Array.from({ length: calls }, async (_, index) => {
      await Bun.sleep((index * 2_000) / calls)
      return oneCall(endpoints, vad, `call-${index}`, speakAt)
    }),
  )
  const wallMs = performance.now() - startedAt
  const cpu = process.cpuUsage(cpuBefore)
  loop.disable()
  clearInterval(stallWatch)
  const pbx = (await (await fetch(`${endpoints.pbx.control}/stats`)).json()) as {
    played: number
    late: number
    lateGapsAtMs: number[]
    stalls: number[]
  }
  const models = (await (await fetch(`${endpoints.models.control}/stats`)).json()) as {
    llmRequests: number
    replyLeadsSentMs: Record<string, number[]>
    stalls: number[]
  }
  const turns = results.flatMap((result) => result.turns)
  // each turn's start lead beside the same lead as the fake TTS sent it (NaN: not found)
  const leads = results.flatMap((result, index) =>
    result.turns.map((turn, at) => ({ turn, sentMs: models.replyLeadsSentMs[`call-${index}`]?.[at] ?? Number.NaN })),
  )
  const matched = leads.filter(({ sentMs }) => !Number.isNaN(sentMs))
  const speculation = results.map((result) => result.speculation)
  const sum = (key: keyof VoiceCallResult['speculation']) => speculation.reduce((n, counts) => n + counts[key], 0)
  const coreShare = (cpu.user + cpu.system) / 1000 / wallMs
  console.log(
    JSON.stringify(
      {
        phase: name,
        calls,
        turns: turns.length,
        voice_to_voice_ms: distribution(turns.map((turn) => turn.stopWindowMs + turn.responseMs)),
        first_answer_voice_to_voice_ms: distribution(
          results.flatMap(({ turns: [first] }) => (first ? [first.stopWindowMs + first.responseMs] : [])),
        ),
        later_answers_voice_to_voice_ms: distribution(
          results.flatMap(({ turns: [, ...later] }) => later.map((turn) => turn.stopWindowMs + turn.responseMs)),
        ),
        stop_window_ms: distribution(turns.map((turn) => turn.stopWindowMs)),
        speculation_saved_ms: distribution(turns.map((turn) => turn.speculationSavedMs)),
        response_ms: distribution(turns.map((turn) => turn.responseMs)),
        stt_ms: distribution(turns.map((turn) => turn.sttMs)),
        first_text_ms: distribution(turns.flatMap((turn) => (turn.firstTextMs === null ? [] : [turn.firstTextMs]))),
        first_sentence_ms: distribution(
          turns.flatMap((turn) => (turn.firstSentenceMs === null ? [] : [turn.firstSentenceMs])),
        ),
        first_audio_ms: distribution(turns.flatMap((turn) => (turn.firstAudioMs === null ? [] : [turn.firstAudioMs]))),
        tts_lead_ms: distribution(turns.map((turn) => turn.ttsLeadMs)),
        // the same leads as the fake TTS sent them (its first piece → the piece completing 300 ms): the fake's own delay
        tts_lead_sent_by_fake_ms: distribution(matched.map(({ sentMs }) => sentMs)),
        tts_leads_matched: `${matched.length} of ${turns.length}`,
        engine_overhead_ms: distribution(turns.map(engineShareMs)),
        // as measured before the start lead was its own share
        engine_overhead_with_start_lead_ms: distribution(turns.map((turn) => engineShareMs(turn) + turn.ttsLeadMs)),
        // with, of each turn's start lead, what the fake TTS's own delay does not explain (Ringbase reading it late)
        engine_overhead_with_ringbase_share_of_lead_ms: distribution(
          matched.map(({ turn, sentMs }) => engineShareMs(turn) + turn.ttsLeadMs - sentMs),
        ),
        // the cost of speculation: LLM requests sent per answered turn (1 without it)
        llm_requests: models.llmRequests,
        llm_requests_per_turn: Math.round((models.llmRequests / Math.max(1, turns.length)) * 100) / 100,
        speculation: {
          pauses_transcribed: sum('transcribed'),
          llm_requests_prepared: sum('prepared'),
          llm_requests_dropped: sum('dropped'),
          turns_ended_early: sum('endedEarly'),
        },
        cpu_cores_used: Math.round(coreShare * 1000) / 1000,
        cpu_percent_of_a_core_per_call: Math.round((coreShare / calls) * 100_000) / 1000,
        agent_frames_played: pbx.played,
        agent_frames_late: pbx.late,
        // where in the agent's turn the audio ran out: ms from the turn's first frame to each gap
        agent_audio_gaps_at_ms: distribution(pbx.lateGapsAtMs),
        event_loop_stalls: stalls,
        // the fakes' event loops: stalls there delay the models' answers or the caller's audio, not Ringbase
        fake_models_event_loop_stalls_ms: models.stalls,
        fake_pbx_event_loop_stalls_ms: pbx.stalls,
        event_loop_delay_ms: { p99: ms(loop.percentile(99) / 1e6), max: ms(loop.max / 1e6) },
      },
      null,
      2,
    ),
  )
}

/** The longest the event loop went without running a 5 ms timer while 6 sentences were synthesised at once. */
async function longestStall(tts: TtsClient): Promise<number> {
  const sentences = Array.from(
    { length: 6 },
    (_, index) => `This is sentence number ${index + 1}, spoken while the calls go on.`,
  )
  let last = performance.now()
  let longest = 0
  const timer = setInterval(() => {
    const at = performance.now()
    longest = Math.max(longest, at - last)
    last = at
  }, 5)
  await Promise.all(
    sentences.map(async (text) => {
      for await (const _ of tts.synthesize(text)) {
        /* drained */
      }
    }),
  )
  await Bun.sleep(10)
  clearInterval(timer)
  return ms(longest)
}

async function builtinVoiceStalls() {
  const inThread = await createFliteTts()
  const inWorkers = createBuiltinVoice()
  await longestStall(inWorkers) // starts the workers
  const rounds = [0, 1, 2]
  const stalls = { in_thread: [] as number[], in_workers: [] as number[] }
  for (const _ of rounds) {
    stalls.in_thread.push(await longestStall(inThread))
    stalls.in_workers.push(await longestStall(inWorkers))
  }
  inThread.close()
  console.log(JSON.stringify({ phase: 'builtin-voice', longest_event_loop_stall_ms: stalls }, null, 2))
}

if (process.argv.includes('--fake-pbx')) {
  await runFakePbx()
} else if (process.argv.includes('--fake-models')) {
  await runFakeModels()
} else {
  const latencyCalls = Number(process.argv[2] ?? 20)
  const loadCalls = Number(process.argv[3] ?? 100)
  const endpoints = { pbx: await startChild('pbx'), models: await startChild('models') }
  try {
    const vad = await loadVadEngine()
    await phase('warm-up', 2, endpoints, vad)
    await phase('latency', latencyCalls, endpoints, vad)
    await phase('load', loadCalls, endpoints, vad)
    await phase('load, all callers stop at once', loadCalls, endpoints, vad, true)
    await builtinVoiceStalls()
  } finally {
    endpoints.pbx.stop()
    endpoints.models.stop()
  }
}
