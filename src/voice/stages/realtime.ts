/**
 * A call on a realtime speech-to-speech model (models/realtime.ts) instead of transcriber → conversation LLM → agent
 * voice, as two stages around the conversation stage: `listen` gives the caller's audio (24 kHz) to the model and
 * turns what the model reports into the chain's frames (its speech start → `speech_started`, the barge-in moment; its
 * transcription → a caller turn for the conversation); `speak` plays the model's audio (24 → 8 kHz, on to the line
 * output and the recorder) and has the model read out the lines the engine wrote itself (greeting, transition speech,
 * tool messages; recordings play as they are). A barge-in flushes the line and truncates the model's item at what was
 * heard; the engine cancels the response it was streaming. Speech ends as in the speech chain: a line mark, then
 * `agentSpeechEnded` (an end_call's goodbye ends the call once heard).
 */
import { REALTIME_RATE, type RealtimeSession } from '../../models/realtime'
import type { ModelServerError, TokenUsage } from '../../models/types'
import { ulawToPcm16 } from '../g711'
import type { MarkOutcome } from '../media-transport'
import { createResampler } from '../../lib/resample'
import type { Stage, StageContext } from '../stage'
import { LINE_RATE } from './caller-input'

export type RealtimeVoiceOptions = {
  session: RealtimeSession
  /** Tokens of the model's responses that were not replies of the conversation (lines read out). */
  onUsage(usage: TokenUsage): void
  /** The model failed while no reply waited for it (it closed, stopped answering, flooded). */
  onFailure(error: ModelServerError): void
}

export type RealtimeVoice = {
  listen: Stage
  speak: Stage & {
    heardTurn(): { turn: number; heardText: string } | undefined
    readonly silent: boolean
    whenSilent(): Promise<void>
    say(text: string, signal: AbortSignal): Promise<boolean>
  }
  /** The model hears the caller speaking. */
  readonly speaking: boolean
}

type SpeakState = {
  context: StageContext | null
  /** The latest agent turn and its text so far (what the caller hears of it). */
  turn: number | undefined
  turnText: string
  /** Audio sent that no line mark has confirmed heard. */
  pending: boolean
  markSeq: number
  silentWaiters: (() => void)[]
  /** The model's item being played: when its first audio was sent and how much was sent (ms). */
  item: { id: string; startedAtMs: number; sentMs: number } | null
  cutItems: Set<string>
}

export function realtimeVoice(options: RealtimeVoiceOptions, line: Line): RealtimeVoice {
  const toLine = createResampler(REALTIME_RATE, LINE_RATE)
  const state: SpeakState = {
    context: null,
    turn: undefined,
    turnText: '',
    pending: false,
    markSeq: 0,
    silentWaiters: [],
    item: null,
    cutItems: new Set(),
  }
  let speaking = false
  let speechStoppedAtMs: number | null = null
  let listenContext: StageContext
  const playAudio = (pcm: Int16Array, itemId: string) => {
    if (!state.context || state.cutItems.has(itemId)) return
    send(state, toLine.process(pcm), itemId)
  }
  const speak = speakStage(state, options, line)
  const listen: Stage = {
    name: 'realtime listen',
    start(context) {
      listenContext = context
      void options.session.start({
        audio: playAudio,
        speechStarted() {
          speaking = true
          void context.push({ kind: 'speech_started', atMs: context.now() })
        },
        speechStopped() {
          speaking = false
          speechStoppedAtMs = context.now()
        },
        callerSaid(text) {
          const endMs = speechStoppedAtMs === null ? undefined : context.clockTime(speechStoppedAtMs)
          void context.push({
            kind: 'caller_turn',
            turn: { text, timing: { endMs }, metric: null, source: 'speech' },
          })
        },
        responseEnded: (hadAudio) => responseEnded(state, line, hadAudio),
        failed: (error) => options.onFailure(error),
        usage: (usage) => options.onUsage(usage),
      })
    },
    process(frame) {
      if (frame.kind === 'caller_audio' && frame.sampleRate === REALTIME_RATE) {
        if (!listenContext.ending()) options.session.appendAudio(frame.pcm)
        return
      }
      return listenContext.push(frame)
    },
    stop: () => options.session.close(),
  }
  return {
    listen,
    speak,
    get speaking() {
      return speaking
    },
  }
}

type Line = { mark(): Promise<MarkOutcome>; recordings?: ReadonlyMap<string, { ulaw: Uint8Array }> }

function speakStage(state: SpeakState, options: RealtimeVoiceOptions, line: Line): RealtimeVoice['speak'] {
  return {
    name: 'realtime speak',
    start(context) {
      state.context = context
    },
    process(frame) {
      const context = state.context!
      if (frame.kind !== 'conversation' || frame.event.type !== 'agent_text') return context.push(frame)
      const event = frame.event
      if (event.turn !== state.turn) Object.assign(state, { turn: event.turn, turnText: '' })
      state.turnText += event.text
      // The model's own replies are already being spoken; lines the engine wrote are read out (or played).
      if (event.kind === 'reply') return
      const clip = event.recording_id ? line.recordings?.get(event.recording_id) : undefined
      if (clip) {
        send(state, ulawToPcm16(clip.ulaw), `clip-${event.turn}`)
        responseEnded(state, line, true)
      } else options.session.say(event.text)
    },
    interrupt() {
      const { item, context } = state
      if (item && context) {
        state.cutItems.add(item.id)
        const heardMs = Math.min(item.sentMs, context.now() - item.startedAtMs)
        if (!item.id.startsWith('clip-')) options.session.truncate(item.id, heardMs)
      }
      state.item = null
      becomeSilent(state)
    },
    heardTurn() {
      return state.pending && state.turn !== undefined ? { turn: state.turn, heardText: state.turnText } : undefined
    },
    get silent() {
      return !state.pending
    },
    whenSilent() {
      return state.pending ? new Promise((resolve) => state.silentWaiters.push(resolve)) : Promise.resolve()
    },
    // No answering-machine message in this mode (detection is off).
    say: async () => false,
  }
}

function send(state: SpeakState, pcm: Int16Array, itemId: string): void {
  const context = state.context!
  if (pcm.length === 0) return
  const now = context.now()
  if (state.item?.id !== itemId) state.item = { id: itemId, startedAtMs: now, sentMs: 0 }
  state.item.sentMs += (pcm.length / LINE_RATE) * 1000
  state.pending = true
  void context.push({ kind: 'agent_audio', pcm, atMs: now })
}

/** The model finished a response: once the line has played its audio, the engine hears the turn ended. */
function responseEnded(state: SpeakState, line: Line, hadAudio: boolean): void {
  const context = state.context
  if (!context) return
  const turn = state.turn
  if (!hadAudio || !state.pending) {
    if (!state.pending) context.conversation.agentSpeechEnded({ turn })
    return
  }
  const seq = ++state.markSeq
  void line.mark().then((outcome) => {
    if (seq !== state.markSeq) return
    becomeSilent(state)
    if (outcome !== 'flushed') context.conversation.agentSpeechEnded({ turn })
  })
}

function becomeSilent(state: SpeakState): void {
  state.markSeq++
  state.pending = false
  const waiters = state.silentWaiters.splice(0)
  for (const wake of waiters) wake()
}
