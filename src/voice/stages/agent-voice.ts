/**
 * The agent's voice: the conversation's streamed text → sentences → speech synthesis (a model or the built-in voice),
 * one sentence at a time → 8 kHz `agent_audio` frames for the line. After each sentence a mark goes to the transport:
 * when it comes back played, the caller heard that sentence (what a barge-in keeps); after a turn's last sentence the
 * conversation learns the turn was heard (`agentSpeechEnded`: its idle timer starts there).
 *
 * `interrupt` drops everything not yet played: queued sentences, the synthesis under way, the turns being spoken (their
 * late text is ignored). The agent voice also tells the rest of the call which turn the caller is hearing, and when the
 * agent is silent.
 */
import type { ConversationEvent } from '../../conversation/engine'
import type { TtsClient } from '../../models/types'
import type { MarkOutcome } from '../media-transport'
import { ulawToPcm16 } from '../g711'
import { rateConverter, type RateConverter } from '../../lib/resample'
import { createSentenceSplitter, type SentenceSplitter } from '../sentences'
import type { Stage, StageContext } from '../stage'
import { LINE_RATE } from './caller-input'
import { joinPcm } from '../../lib/wav'
import { inSlice } from '../../lib/slices'

/**
 * Speech that starts on a silent line is sent once this much of it is ready (or its sentence is complete): a jitter
 * buffer. Sent at its first piece, the far end would play that piece, then silence until the next one came — a
 * stutter the caller hears whenever the next piece is late (a busy event loop: 100 calls' replies at the same instant;
 * a TTS server that streams unevenly). With a fast TTS the lead is there within milliseconds; it costs at most the
 * time the TTS takes to produce 300 ms of audio, and that wait counts in the engine's share of the response time.
 */
const START_LEAD_SAMPLES = (300 * LINE_RATE) / 1000

/**
 * A reply's speech is read from the TTS while at most this much of it waits to be played, then as the line plays: read
 * as fast as a fast TTS sends it, 100 replies at once (≈ 8 s of speech each) held the event loop for a third of a
 * second with reads and copies of audio due seconds later. A streaming TTS waits meanwhile (TCP backpressure); the
 * wait does not count as the server being idle (models/http.ts), and a sentence (at most 250 characters, about 20 s of
 * speech: voice/sentences.ts) is read well inside the TTS request's 60 s limit.
 */
const READ_AHEAD_MS = 2_000

/** What the agent is saying in one conversation turn, until the caller has heard all of it. */
type TurnSpeech = {
  turn: number
  splitter: SentenceSplitter
  /** The conversation is still streaming the turn's text. */
  streaming: boolean
  /** Sentences waiting for or in synthesis. */
  pending: number
  /** Sentences sent whose mark has not come back. */
  marks: number
  /** Sentences played in full, in order. */
  heard: string[]
}

export type AgentVoiceOptions = {
  tts: TtsClient
  /** The line's marks: resolves once everything sent before it has been played (or never will be). */
  mark(): Promise<MarkOutcome>
  lineClosed(): boolean
  /** Agent speech that starts while the caller is talking is cut at once (off with `bargeInMinWords`). */
  cutWhileCallerSpeaks: boolean
  /** The line audio (8 kHz µ-law) of the recordings the run may play, by `recording_id`: played instead of speech. */
  recordings?: ReadonlyMap<string, { ulaw: Uint8Array }>
  onTtsText?: (characters: number) => void
}

export type AgentVoice = Stage & {
  /** The turn the caller is hearing (the oldest with speech still to play) and what of it was played; undefined when silent. */
  heardTurn(): { turn: number; heardText: string } | undefined
  readonly silent: boolean
  /** Settles once every turn's speech has been heard (or cut). */
  whenSilent(): Promise<void>
  /** Synthesises `text` outside any turn (the voicemail message); true when audio was sent. */
  say(text: string, signal: AbortSignal): Promise<boolean>
}

type VoiceState = {
  options: AgentVoiceOptions
  context: StageContext
  speeches: Map<number, TurnSpeech>
  /** `recordingId`: a recording's turn, played as its stored audio instead of synthesised. */
  sentences: { turn: number; text: string; recordingId?: string }[]
  synthesis: { turn: number; controller: AbortController } | null
  /** Set and cleared synchronously with the loop's last check, so a sentence queued meanwhile is never stranded. */
  speaking: boolean
  /** Agent turns up to this index were cut: their late text is ignored. */
  cutThroughTurn: number
  silentWaiters: (() => void)[]
  /** The sentences' audio to the line's rate: one resampler per call (its filter and work memory), not per sentence. */
  toLine: RateConverter
  /** When the audio sent so far will have played (performance.now() time, an estimate): the next piece is due then. */
  lineRunsDryAtMs: number
}

export function agentVoice(options: AgentVoiceOptions): AgentVoice {
  const state = {
    options,
    speeches: new Map(),
    sentences: [],
    synthesis: null,
    speaking: false,
    cutThroughTurn: -1,
    silentWaiters: [],
    toLine: rateConverter(LINE_RATE),
    lineRunsDryAtMs: 0,
  } as Omit<VoiceState, 'context'> as VoiceState
  return {
    name: 'agent voice',
    start(given) {
      state.context = given
    },
    process(frame) {
      if (frame.kind !== 'conversation') return state.context.push(frame)
      onConversationEvent(state, frame.event)
    },
    interrupt() {
      state.lineRunsDryAtMs = 0
      state.sentences.length = 0
      state.synthesis?.controller.abort()
      for (const turn of state.speeches.keys()) state.cutThroughTurn = Math.max(state.cutThroughTurn, turn)
      state.speeches.clear()
      notifyIfSilent(state)
    },
    stop() {
      state.synthesis?.controller.abort()
    },
    heardTurn() {
      const speech = heardSpeech(state)
      return speech && { turn: speech.turn, heardText: speech.heard.join(' ') }
    },
    get silent() {
      return state.speeches.size === 0
    },
    whenSilent: () => whenSilent(state),
    say: (text, signal) => synthesizeAndSend(state, text, signal, rateConverter(LINE_RATE)),
  }
}

function onConversationEvent(state: VoiceState, event: Exclude<ConversationEvent, { type: 'ended' }>): void {
  if (event.type === 'agent_text') return onAgentText(state, event.turn, event.text, event.recording_id)
  if (event.type === 'agent_turn_done') return onAgentTurnDone(state, event.turn, event.interrupted)
}

function onAgentText(state: VoiceState, turn: number, text: string, recordingId?: string): void {
  const { context } = state
  if (turn <= state.cutThroughTurn || context.ending()) return
  let speech = state.speeches.get(turn)
  if (!speech) {
    speech = { turn, splitter: createSentenceSplitter(), streaming: true, pending: 0, marks: 0, heard: [] }
    state.speeches.set(turn, speech)
    void context.push({ kind: 'agent_turn_started', turn })
    if (state.options.cutWhileCallerSpeaks && context.callerSpeaking() && context.conversation.canInterrupt(turn)) {
      context.bargeIn(turn, '')
      return
    }
  }
  // A recording is one piece: its whole clip, heard (or cut) like a sentence.
  if (recordingId) queueSentence(state, speech, text, recordingId)
  else for (const sentence of speech.splitter.push(text)) queueSentence(state, speech, sentence)
}

function onAgentTurnDone(state: VoiceState, turn: number, interrupted: boolean): void {
  const speech = state.speeches.get(turn)
  if (!speech) return
  speech.streaming = false
  if (interrupted) {
    // Cut by the conversation itself (an ending, a new user message): what was sent may finish, nothing more.
    for (let index = state.sentences.length - 1; index >= 0; index--) {
      if (state.sentences[index].turn !== turn) continue
      state.sentences.splice(index, 1)
      speech.pending -= 1
    }
    if (state.synthesis?.turn === turn) state.synthesis.controller.abort()
  } else {
    const rest = speech.splitter.flush()
    if (rest) queueSentence(state, speech, rest)
  }
  settleTurn(state, speech)
}

function queueSentence(state: VoiceState, speech: TurnSpeech, text: string, recordingId?: string): void {
  speech.pending += 1
  state.sentences.push({ turn: speech.turn, text, recordingId })
  if (state.speaking) return
  state.speaking = true
  void speakSentences(state).finally(() => {
    state.speaking = false
  })
}

async function speakSentences(state: VoiceState): Promise<void> {
  const { sentences, speeches, options } = state
  while (sentences.length > 0 && !options.lineClosed()) {
    const sentence = sentences.shift()!
    const speech = speeches.get(sentence.turn)
    if (!speech) continue
    const controller = new AbortController()
    state.synthesis = { turn: sentence.turn, controller }
    void state.context.push({ kind: 'sentence_started' })
    const sent =
      sentence.recordingId !== undefined
        ? playRecorded(state, sentence.recordingId)
        : await synthesizeAndSend(state, sentence.text, controller.signal, state.toLine)
    state.synthesis = null
    if (speeches.get(sentence.turn) !== speech) continue
    speech.pending -= 1
    if (!sent) {
      settleTurn(state, speech)
      continue
    }
    speech.marks += 1
    void options.mark().then((outcome) => {
      speech.marks -= 1
      if (outcome === 'played') speech.heard.push(sentence.text)
      settleTurn(state, speech)
    })
  }
}

/** Pushes a recording's stored line audio at once (no synthesis, no resampling); false when the run has none. */
function playRecorded(state: VoiceState, recordingId: string): boolean {
  const ulaw = state.options.recordings?.get(recordingId)?.ulaw
  if (!ulaw) {
    state.context.warn(`Recording '${recordingId}' has no audio on this call: not played`)
    return false
  }
  void state.context.push({ kind: 'agent_audio', pcm: ulawToPcm16(ulaw), atMs: state.context.now() })
  return true
}

/** Synthesises `text` and pushes its audio as it comes; true when any audio was pushed. */
async function synthesizeAndSend(
  state: VoiceState,
  text: string,
  signal: AbortSignal,
  toLine: RateConverter,
): Promise<boolean> {
  const { tts } = state.options
  let sent = false
  const send = (pcm: Int16Array) => {
    void state.context.push({ kind: 'agent_audio', pcm, atMs: state.context.now() })
    sent = true
    state.lineRunsDryAtMs = Math.max(performance.now(), state.lineRunsDryAtMs) + (pcm.length * 1000) / LINE_RATE
  }
  // Audio that starts on a silent line waits for a lead (or the whole sentence): see START_LEAD_SAMPLES.
  const lead: Int16Array[] | null = lineSpeaking(state) ? null : []
  let leadSamples = 0
  const sendLead = () => {
    void state.context.push({ kind: 'sentence_lead' })
    send(joinPcm(lead!))
  }
  toLine.restart()
  state.options.onTtsText?.(text.length)
  try {
    for await (const chunk of tts.synthesize(text, { signal })) {
      if (signal.aborted) break
      if (!sent && leadSamples === 0) void state.context.push({ kind: 'sentence_audio' })
      for (const piece of piecesOf(chunk.pcm, Math.ceil(chunk.sampleRate / 2))) {
        if (lead && !sent) {
          lead.push(toLine.convert(piece, chunk.sampleRate))
          leadSamples += lead.at(-1)!.length
          if (leadSamples >= START_LEAD_SAMPLES) sendLead()
        } else {
          // Audio follows what the line is already playing: it can wait a slice (lib/slices.ts) until shortly before
          // the line runs dry, so that other calls' first audio goes out first when many replies arrive at once.
          await inSlice(() => {
            if (!signal.aborted) send(toLine.convert(piece, chunk.sampleRate))
          }, state.lineRunsDryAtMs)
        }
        if (signal.aborted) break
      }
      await untilLineNeedsMore(state, signal)
    }
    if (lead && !sent && leadSamples > 0 && !signal.aborted) sendLead()
  } catch (error) {
    if (!signal.aborted)
      state.context.warn(`Speech synthesis failed (${tts.ref.service}/${tts.ref.model}): ${(error as Error).message}`)
  }
  return sent && !signal.aborted
}

/** Waits while more than READ_AHEAD_MS of sent audio is still to play (or until `signal` aborts: a barge-in, the end). */
function untilLineNeedsMore(state: VoiceState, signal: AbortSignal): Promise<void> {
  const waitMs = state.lineRunsDryAtMs - performance.now() - READ_AHEAD_MS
  if (waitMs <= 0 || signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, waitMs)
    signal.addEventListener('abort', done)
  })
}

/** `pcm` in pieces of at most `size` samples (views, no copies). */
function* piecesOf(pcm: Int16Array, size: number): Generator<Int16Array> {
  for (let start = 0; start < pcm.length; start += size) yield pcm.subarray(start, Math.min(start + size, pcm.length))
}

/** Agent audio was sent that the caller may not have heard yet (a sentence whose mark has not come back). */
const lineSpeaking = (state: VoiceState) => [...state.speeches.values()].some((speech) => speech.marks > 0)

/** A turn's speech is over when its text is complete and every sentence was played (or failed). */
function settleTurn(state: VoiceState, speech: TurnSpeech): void {
  if (state.speeches.get(speech.turn) !== speech || speech.streaming || speech.pending > 0 || speech.marks > 0) return
  state.speeches.delete(speech.turn)
  state.context.conversation.agentSpeechEnded({ turn: speech.turn, atMs: state.context.clockTime(state.context.now()) })
  notifyIfSilent(state)
}

function notifyIfSilent(state: VoiceState): void {
  if (state.speeches.size > 0) return
  const waiters = state.silentWaiters
  state.silentWaiters = []
  for (const resolve of waiters) resolve()
}

const whenSilent = (state: VoiceState) =>
  state.speeches.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => state.silentWaiters.push(resolve))

function heardSpeech(state: VoiceState): TurnSpeech | undefined {
  let oldest: TurnSpeech | undefined
  for (const speech of state.speeches.values()) if (!oldest || speech.turn < oldest.turn) oldest = speech
  return oldest
}
