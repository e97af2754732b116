/**
 * A voice call: audio between a MediaTransport and a Conversation, as a chain of small stages (pipecat / LiveKit
 * Agents style; the stage interface is stage.ts). No HTTP, no database: the caller gives the transport, the model
 * clients and the Conversation, and persists what `run` returns. The call's stages, in order:
 *
 *   line µ-law → decode → record caller (left) → answering-machine detector → [noise suppression] → 8→16 kHz
 *   → turn detector (WebRTC VAD) → [live transcription (a streaming STT server: audio sent as it is heard)]
 *   → speculative end of turn → DTMF collector → transcriber (STT, in order) → backchannel filter → answer gate
 *   → conversation
 *   → agent voice (sentences, TTS, marks) → line output (record agent (right), µ-law, transport) → turn metrics
 *
 * Interruption is one signal every stage obeys (`floorControl` below, the only place it is decided): when the caller takes
 * the floor (speech past the VAD start window, a turn, a key) while the agent is heard on an interruptible turn
 * (`conversation.canInterrupt`), every stage drops the agent's queued speech (the transport is flushed, the sentence
 * being synthesised aborted, queued sentences dropped) and the conversation is interrupted with the sentences actually
 * played (its LLM stream is aborted). Agent speech that starts while the caller is talking is cut the same way. On a
 * turn that cannot be interrupted (greeting, transition speech, `allow_interrupt: false`) the agent finishes speaking;
 * what the caller said meanwhile is answered after it. With `bargeInMinWords` an interruption waits for the transcript
 * instead: caller speech over an interruptible turn cuts it only if it has that many words, and shorter speech
 * ("mm-hm") is dropped as a backchannel.
 *
 * Caller frames are timed on their own sample clock (sample-clock.ts): a burst read after an event-loop stall keeps its
 * spacing. Asterisk sends no frames while the line is silent, so timers end utterances and give the answering-machine
 * detector its time; they judge silence from the last frame and only as far as the loop has read the socket
 * (`heardUpToMs`), so a stall is not silence. The conversation's `tick` runs every `tickIntervalMs` while nobody speaks
 * (idle reprompt, idle hang-up), skipping one that comes late (a stall). After the conversation ends, a graceful end
 * lets the last words be heard (at most `drainTimeoutMs`), an answering machine gets the workflow's message, then the
 * stages stop and the media closes.
 */
import type { Conversation, ConversationEvent } from '../conversation/engine'
import type { EndReason } from '../conversation/record'
import type { Clock } from '../lib/clock'
import type { SttClient, TtsClient } from '../models/types'
import type { MediaClose, MediaTransport } from './media-transport'
import { createSampleClock, watchEventLoop } from './sample-clock'
import { createCallRecorder, type CallRecorder, type CallRecording } from './recorder'
import type { CallChain } from './chain'
import { realtimeChain } from './realtime-chain'
import type { RealtimeVoiceOptions } from './stages/realtime'
import { linkStages, type Push, type Stage, type StageContext } from './stage'
import { agentVoice } from './stages/agent-voice'
import { answerGate, detectAnsweringMachine } from './stages/answering-machine'
import {
  decodeLine,
  detectTurns,
  LINE_RATE,
  recordCaller,
  resampleCaller,
  suppressNoise,
  VAD_RATE,
} from './stages/caller-input'
import { converse } from './stages/conversation'
import { speculateEndOfTurn, type SpeculationCounts } from './stages/end-of-turn'
import { collectDigits } from './stages/dtmf'
import { lineOutput } from './stages/line-output'
import { measureTurns, type VoiceTurnMetric } from './stages/metrics'
import { dropBackchannels, transcribe } from './stages/transcriber'
import { streams, transcribeLive } from './stages/live-transcription'
import { DEFAULT_TURN_PARAMETERS, type TurnParameters } from './turns'
import type { VadEngine, VadMode } from './vad'
import type { NoiseEngine } from './noise'
import type { VoicemailParameters } from './voicemail'

export { engineShareMs, type VoiceTurnMetric } from './stages/metrics'

export type VoicemailOptions = {
  parameters?: Partial<VoicemailParameters>
  /** Spoken after the beep before hanging up; without it the call ends at the beep. */
  message?: string | null
}

/** A call on speech to text → LLM → text to speech. */
type SpeechModels = {
  stt: SttClient
  /** A model's TTS client, or the built-in voice. */
  tts: TtsClient
  vad: VadEngine
  /** Noise suppression (RNNoise) before the VAD and speech recognition; absent or null: off. */
  noise?: NoiseEngine | null
}

/** A call on a realtime speech-to-speech model (stages/realtime.ts). */
type RealtimeModels = { realtime: RealtimeVoiceOptions }

export type VoicePipelineOptions = (SpeechModels | RealtimeModels) & {
  transport: MediaTransport
  /** The run's knowledge-base retrieval time so far, for each turn's share of it in the metrics. */
  retrievalMsTotal?: () => number
  /** The line audio of the recordings the conversation may play, by `recording_id` (played instead of speech). */
  recordings?: ReadonlyMap<string, { ulaw: Uint8Array }>
  /** WebRTC VAD aggressiveness; 3 (the default) suits telephone lines best. */
  vadMode?: VadMode
  turn?: Partial<TurnParameters>
  /**
   * Caller speech over an interruptible agent turn interrupts it only when its transcript has this many words, and is
   * dropped otherwise (the reference's `min_words` turn start); absent or 0: any speech interrupts once it starts.
   */
  bargeInMinWords?: number
  /** Answering-machine detection (outbound calls); null or absent: off. */
  voicemail?: VoicemailOptions | null
  /** The conversation's clock (epoch ms): utterance times are given to the conversation on it. */
  clock: Clock
  /** The transport's clock (monotonic ms). */
  now?: () => number
  /** How often the conversation's `tick` runs while nobody speaks. */
  tickIntervalMs?: number
  /** Collected DTMF digits are sent after this long without another key ('#' sends at once). */
  dtmfTimeoutMs?: number
  /** After the media closes on its own, how long to wait for `stop` (a hang-up seen elsewhere) before calling it lost. */
  mediaLossGraceMs?: number
  /** A graceful end waits at most this long for the last words to be heard. */
  drainTimeoutMs?: number
  /** Problems the call survives (an STT or TTS failure): for the run's log. */
  onWarning?: (message: string) => void
  /** A file of the call's own for the recording's settled audio (recorder.ts); absent: it stays in memory. */
  recordingSpillPath?: string
  /** Seconds of audio sent to speech recognition, per utterance (usage). */
  onSttAudio?: (seconds: number) => void
  /** Characters sent to speech synthesis, per sentence (usage). */
  onTtsText?: (characters: number) => void
}

export type VoiceCallResult = {
  endReason: EndReason
  /** The media closed by the far end while the call was on and no hang-up explained it. */
  mediaLost: MediaClose | null
  /** Answering machine detected: when (ms after the start) and whether the workflow's message was played. */
  voicemail: { detectedAfterMs: number; messageLeft: boolean } | null
  /** How long answering-machine detection held the answer to the caller's first turn (0: it had decided by then); null: detection off, or no caller turn while it ran. */
  firstAnswerHeldMs: number | null
  recording: CallRecording
  turns: VoiceTurnMetric[]
  /** Speculative turn-taking: pauses transcribed early, LLM requests prepared and dropped, turns ended early. */
  speculation: SpeculationCounts
}

export type VoicePipeline = {
  /** Every event of the Conversation: pass this as (part of) its `onEvent`. */
  conversationEvent(event: ConversationEvent): void
  /** Starts the conversation; resolves when it has ended, its last words were heard, and the media is closed. */
  run(conversation: Conversation): Promise<VoiceCallResult>
  /** A DTMF key the caller pressed (from the call's signalling, e.g. ARI ChannelDtmfReceived). */
  dtmf(digit: string): void
  /** The call is over from outside (caller hung up, max duration): ends the conversation now, stops the audio. */
  stop(reason: EndReason): Promise<void>
}

const DEFAULTS = {
  vadMode: 3 as VadMode,
  tickIntervalMs: 1_000,
  dtmfTimeoutMs: 2_000,
  mediaLossGraceMs: 500,
  drainTimeoutMs: 30_000,
}
/** µ-law line audio: one byte per sample at 8 kHz. */
const LINE_SAMPLES_PER_MS = LINE_RATE / 1000
/** A conversation tick this late shows a stalled event loop (tickWhileQuiet). */
const LATE_TICK_MS = 100
const MEDIA_LOST_REASON: EndReason = 'unexpected_error'
const NO_SPECULATION: SpeculationCounts = { transcribed: 0, prepared: 0, dropped: 0, endedEarly: 0 }

/** How the call ends: the conversation's `ended` event, or `stop` from outside. */
type CallEnd = {
  ending: boolean
  reason: EndReason | null
  graceful: boolean
  stopRequested: boolean
  mediaLost: MediaClose | null
  readonly ended: Promise<void>
  readonly stopped: Promise<void>
  markEnded(): void
  markStopped(): void
}

function createCallEnd(): CallEnd {
  let markEnded = () => {}
  let markStopped = () => {}
  const ended = new Promise<void>((resolve) => {
    markEnded = resolve
  })
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve
  })
  return {
    ending: false,
    reason: null,
    graceful: false,
    stopRequested: false,
    mediaLost: null,
    ended,
    stopped,
    markEnded,
    markStopped,
  }
}

export function createVoicePipeline(options: VoicePipelineOptions): VoicePipeline {
  const { transport, clock } = options
  const now = options.now ?? (() => performance.now())
  const settings = { ...DEFAULTS, ...definedOnly(options) }
  const turnParameters: TurnParameters = { ...DEFAULT_TURN_PARAMETERS, ...options.turn }
  const warn = (message: string) => options.onWarning?.(message)
  const end = createCallEnd()
  const recorder = createCallRecorder(now(), {
    spillPath: options.recordingSpillPath,
    onSpillError: (error) =>
      warn(
        `The call recording's file could not be written (${(error as NodeJS.ErrnoException).code ?? 'error'}): the rest of the call is kept in memory`,
      ),
  })

  const { stages, voice, turns, answeringMachine, metrics, conversationStage, speculation } =
    'realtime' in options
      ? realtimeChain(options.realtime, transport, recorder, options.recordings)
      : speechChain({ ...options, ...settings, turn: turnParameters }, recorder)
  let conversation: Conversation | null = null
  let push: Push | null = null
  const floor = floorControl(stages, voice, () => conversation, warn)
  const loop = watchEventLoop(now)
  const sampleClock = createSampleClock(loop)

  function contextFor(given: Conversation, startedAtMs: number): Omit<StageContext, 'push'> {
    return {
      ...floor,
      conversation: given,
      now,
      heardUpToMs: () => sampleClock.heardUpToMs(loop.heardUpToMs()),
      warn,
      startedAtMs,
      ended: end.ended,
      clockTime: (atMs) => clock.now() - (now() - atMs),
      ending: () => end.ending,
      callerSpeaking: () => turns.speaking,
    }
  }

  async function run(given: Conversation): Promise<VoiceCallResult> {
    conversation = given
    const startedAtMs = now()
    const head = linkStages(stages, contextFor(given, startedAtMs))
    push = head
    transport.onAudio((ulaw, arrivalMs) => {
      const atMs = sampleClock.frameEnd(arrivalMs, ulaw.length / LINE_SAMPLES_PER_MS)
      if (!end.ending) void head({ kind: 'line_audio', ulaw, atMs })
    })
    watchMediaLoss(transport, end, settings.mediaLossGraceMs, (close) => {
      warn(`The media connection closed during the call (code ${close.code}${close.reason ? `: ${close.reason}` : ''})`)
      void given.end(MEDIA_LOST_REASON)
    })
    const stopTicking = tickWhileQuiet(settings.tickIntervalMs, now, () => {
      if (!end.ending && !turns.speaking && voice.silent)
        void given.tick().catch((error) => warn(`The conversation tick failed: ${(error as Error).message}`))
    })
    void given.start().catch((error) => warn(`The conversation failed to start: ${(error as Error).message}`))

    await end.ended
    stopTicking()
    const messageLeft = await finishSpeaking(voice, transport, end, {
      voicemailMessage: answeringMachine?.detectedAfterMs != null ? options.voicemail?.message?.trim() || null : null,
      drainTimeoutMs: settings.drainTimeoutMs,
    })
    if (!voice.silent) floor.silenceAgent()
    for (const stage of stages) stage.stop?.()
    loop.stop()
    const endedAtMs = now()
    transport.close()
    return {
      endReason: end.reason!,
      mediaLost: end.mediaLost,
      voicemail:
        answeringMachine?.detectedAfterMs != null
          ? { detectedAfterMs: answeringMachine.detectedAfterMs, messageLeft }
          : null,
      firstAnswerHeldMs: metrics.firstAnswerHeldMs,
      recording: recorder.finish(endedAtMs),
      turns: metrics.turns,
      speculation: speculation ?? NO_SPECULATION,
    }
  }

  return {
    conversationEvent(event) {
      if (event.type !== 'ended') return conversationStage.hear(event)
      end.reason = event.reason
      end.graceful = event.graceful
      end.ending = true
      end.markEnded()
    },
    run,
    dtmf(digit) {
      if (end.ending || !push || !/^[0-9A-D*#]$/.test(digit)) return
      conversation?.noteUserActivity()
      push({ kind: 'dtmf', digit })
    },
    async stop(reason) {
      end.stopRequested = true
      end.markStopped()
      if (!conversation) return
      await conversation.end(reason)
    },
  }
}

/** The chain of a call on speech to text → conversation LLM → text to speech (the stages the header lists). */
function speechChain(
  options: SpeechModels &
    Pick<
      VoicePipelineOptions,
      'transport' | 'recordings' | 'bargeInMinWords' | 'voicemail' | 'onSttAudio' | 'onTtsText' | 'retrievalMsTotal'
    > &
    typeof DEFAULTS & { turn: TurnParameters },
  recorder: CallRecorder,
): CallChain {
  const { transport } = options
  const waitForWords = Boolean(options.bargeInMinWords)
  const turns = detectTurns(options.vad.createVad(options.vadMode), options.turn, {
    liveAudio: streams(options.stt),
  })
  const answeringMachine = options.voicemail ? detectAnsweringMachine(options.voicemail.parameters) : null
  const voice = agentVoice({
    tts: options.tts,
    mark: () => transport.mark(),
    lineClosed: () => transport.closed,
    cutWhileCallerSpeaks: !waitForWords,
    recordings: options.recordings,
    onTtsText: options.onTtsText,
  })
  const conversationStage = converse({ interruptOnSpeechStart: !waitForWords, agentSilent: () => voice.whenSilent() })
  const metrics = measureTurns({
    answeringMachineDetection: answeringMachine !== null,
    retrievalMsTotal: options.retrievalMsTotal,
  })
  const endOfTurn = speculateEndOfTurn(options.stt, {
    onSttAudio: options.onSttAudio,
    stopMs: options.turn.stopMs,
    endUtterance: () => turns.endUtterance(),
  })
  const stages: Stage[] = [
    ...callerStages(options, { recorder, answeringMachine, turns, endOfTurn, dtmfTimeoutMs: options.dtmfTimeoutMs }),
    ...(options.bargeInMinWords ? [dropBackchannels(options.bargeInMinWords)] : []),
    ...(answeringMachine ? [answerGate()] : []),
    conversationStage,
    voice,
    lineOutput(transport, recorder),
    metrics,
  ]
  return { stages, voice, turns, answeringMachine, metrics, conversationStage, speculation: endOfTurn.counts }
}

/** The caller's side of the chain: line audio → caller turns, up to the transcriber. */
function callerStages(
  options: SpeechModels & Pick<VoicePipelineOptions, 'onSttAudio'>,
  parts: {
    recorder: CallRecorder
    answeringMachine: Stage | null
    turns: Stage
    endOfTurn: Stage
    dtmfTimeoutMs: number
  },
): Stage[] {
  const { noise, stt } = options
  return [
    decodeLine(),
    recordCaller(parts.recorder),
    ...(parts.answeringMachine ? [parts.answeringMachine] : []),
    ...(noise ? [suppressNoise(noise.createSuppressor(LINE_RATE, VAD_RATE), LINE_RATE, VAD_RATE)] : []),
    resampleCaller(LINE_RATE, VAD_RATE),
    parts.turns,
    ...(streams(stt) ? [transcribeLive(stt, { onSttAudio: options.onSttAudio })] : []),
    parts.endOfTurn,
    collectDigits(parts.dtmfTimeoutMs),
    transcribe(options.stt, { onSttAudio: options.onSttAudio }),
  ]
}

/**
 * Barge-in, decided and done here only: the caller takes the floor (`yieldToCaller`) and the agent is cut when the
 * turn the caller hears may be interrupted; every stage then drops the agent's queued speech (`silenceAgent`) and the
 * conversation keeps what was heard.
 */
function floorControl(
  stages: Stage[],
  voice: CallChain['voice'],
  conversation: () => Conversation | null,
  warn: (message: string) => void,
) {
  const silenceAgent = () => {
    for (const stage of stages) stage.interrupt?.()
  }
  function bargeIn(turn: number, heardText: string): void {
    silenceAgent()
    void conversation()
      ?.interrupt({ turn, heardText })
      .catch((error) => warn(`Interrupting the agent failed: ${(error as Error).message}`))
  }
  const interruptible = (turn: number) => conversation()?.canInterrupt(turn) ?? false
  return {
    silenceAgent,
    bargeIn,
    yieldToCaller(): boolean {
      const heard = voice.heardTurn()
      if (!heard) return true
      if (!interruptible(heard.turn)) return false
      bargeIn(heard.turn, heard.heardText)
      return true
    },
    agentInterruptible(): boolean {
      const heard = voice.heardTurn()
      return heard !== undefined && interruptible(heard.turn)
    },
  }
}

/**
 * Runs `tick` (the conversation's idle rules) every `intervalMs`, but skips one that comes late: the event loop was
 * stalled, and what the caller said meanwhile may still be unread in the socket (a stall is not the caller's silence).
 * The loop reads it before the next tick, which runs however late it is, so a busy machine delays the rules, never
 * suspends them.
 */
function tickWhileQuiet(intervalMs: number, now: () => number, tick: () => void): () => void {
  let dueAtMs = now() + intervalMs
  let skipped = false
  const timer = setInterval(() => {
    const late = now() - dueAtMs > LATE_TICK_MS
    dueAtMs = now() + intervalMs
    skipped = late && !skipped
    if (!skipped) tick()
  }, intervalMs)
  return () => clearInterval(timer)
}

/** Options given as undefined keep their defaults. */
function definedOnly(options: VoicePipelineOptions): Partial<typeof DEFAULTS> {
  return Object.fromEntries(
    Object.keys(DEFAULTS).flatMap((key) => {
      const value = options[key as keyof typeof DEFAULTS]
      return value === undefined ? [] : [[key, value]]
    }),
  )
}

/** The media closed by the far end while the call is on, and no hang-up (`stop`) explains it within the grace: lost. */
function watchMediaLoss(
  transport: MediaTransport,
  end: CallEnd,
  graceMs: number,
  onLost: (close: MediaClose) => void,
): void {
  transport.onClose((close) => {
    if (close.initiatedBy === 'app' || end.ending) return
    setTimeout(() => {
      if (end.ending || end.stopRequested) return
      end.mediaLost = close
      onLost(close)
    }, graceMs)
  })
}

/**
 * After the conversation ended: an answering machine gets the workflow's message (true when it was played), a graceful
 * end waits (bounded) for the last words to be heard; a hang-up (`stop`) waits for nothing.
 */
async function finishSpeaking(
  voice: CallChain['voice'],
  transport: MediaTransport,
  end: CallEnd,
  options: { voicemailMessage: string | null; drainTimeoutMs: number },
): Promise<boolean> {
  if (end.stopRequested) return false
  if (options.voicemailMessage) {
    const sent = await voice.say(options.voicemailMessage, new AbortController().signal)
    if (!sent) return false
    const outcome = await Promise.race([transport.mark(), end.stopped.then(() => 'stopped' as const)])
    return outcome === 'played'
  }
  if (!end.graceful) return false
  let drainTimer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    voice.whenSilent(),
    end.stopped,
    new Promise<void>((resolve) => {
      drainTimer = setTimeout(resolve, options.drainTimeoutMs)
    }),
  ])
  clearTimeout(drainTimer)
  return false
}
