/**
 * The one interface every stage of a voice call has (pipecat's processors, LiveKit Agents' nodes): frames come in from
 * the stage before, frames go on to the stage after, and the agent being cut off (barge-in) is one signal every stage
 * obeys. A call is the list of its stages (pipeline.ts); a new stage (noise suppression before the turn detector, a
 * speculative end-of-turn analyzer, a realtime speech-to-speech model in place of transcriber + conversation + agent
 * voice) is added by listing it there.
 *
 * Frames flow one way, from the caller's line to the agent's voice. A stage passes on every frame it does not consume,
 * so a later stage (metrics) sees what the earlier ones did. `push` returns what the next stage's `process` returns:
 * a stage that must keep order across asynchronous work (the transcriber: turns reach the conversation in the order
 * they were spoken) awaits it; others ignore it.
 */
import type { Conversation, ConversationEvent, UserTiming } from '../conversation/engine'

/** Per-turn timing being measured (ms on the transport's clock); metrics.ts closes it at the first agent audio. */
export type OpenMetric = {
  speechEndedAtMs: number
  /** When the turn was known to be over: the stop window's end, or the pause's when its words ended the turn. */
  endOfTurnAtMs: number
  /** End of turn → transcript (0 when the speculative transcript was ready before). */
  sttMs: number
  /** How much sooner the turn was answered thanks to speculation (end-of-turn.ts); 0 without it. */
  speculationSavedMs: number
}

/** A transcript asked for before the utterance was over (end-of-turn.ts), and when it came. */
export type EarlyTranscript = Promise<{ text: string; readyAtMs: number }>

/** What the caller said (or keyed) as one turn for the conversation. */
export type CallerTurn = { text: string; timing: UserTiming; metric: OpenMetric | null; source: 'speech' | 'dtmf' }

export type Frame =
  /** Caller audio from the line: µ-law as the transport gave it. */
  | { kind: 'line_audio'; ulaw: Uint8Array; atMs: number }
  /** Caller audio as PCM at `sampleRate`. */
  | { kind: 'caller_audio'; pcm: Int16Array; sampleRate: number; atMs: number }
  /** A key the caller pressed (already checked to be one). */
  | { kind: 'dtmf'; digit: string }
  /** The answering-machine detector decided (or gave up: `person`); `afterMs` since the call's start. */
  | { kind: 'answering_machine'; verdict: 'person' | 'machine'; afterMs: number }
  /** The caller's speech passed the start window (the moment to barge in). */
  | { kind: 'speech_started'; atMs: number }
  /**
   * A finished utterance, 16 kHz PCM; `endedAtMs`: when its end was decided. With `transcript` it was transcribed
   * already (speculation), `speculationSavedMs` what that saved.
   */
  | {
      kind: 'utterance'
      pcm: Int16Array
      startedAtMs: number
      endedAtMs: number
      speechEndedAtMs: number
      transcript?: EarlyTranscript
      speculationSavedMs?: number
    }
  /**
   * The caller paused inside an utterance (turns.ts `pauseMs`): its audio so far, for a speculative end of turn; with
   * `transcript` its text is on its way already (live transcription).
   */
  | {
      kind: 'speech_paused'
      pcm: Int16Array
      startedAtMs: number
      endedAtMs: number
      speechEndedAtMs: number
      transcript?: EarlyTranscript
    }
  /** 16 kHz audio of the utterance being heard, as it comes (for live transcription; turns.ts `audio`). */
  | { kind: 'speech_audio'; pcm: Int16Array }
  /** The caller went on speaking after a pause. */
  | { kind: 'speech_resumed'; atMs: number }
  | { kind: 'caller_turn'; turn: CallerTurn }
  /** The answering-machine hold ended with caller turns kept from the conversation for `heldMs`. */
  | { kind: 'answer_held'; heldMs: number }
  /** The turn was given to the conversation; `answered` once its reply is over. */
  | { kind: 'user_turn'; metric: OpenMetric | null }
  | { kind: 'user_turn_answered'; metric: OpenMetric | null }
  /** An event of the conversation: agent text, turn done, a clip to play. */
  | { kind: 'conversation'; event: Exclude<ConversationEvent, { type: 'ended' }> }
  /** The agent voice took up a new agent turn's text. */
  | { kind: 'agent_turn_started'; turn: number }
  /** A sentence went to speech synthesis. */
  | { kind: 'sentence_started' }
  /** Speech synthesis gave the sentence's first audio (it may be held a moment before it is sent: agent-voice.ts). */
  | { kind: 'sentence_audio' }
  /** Speech starting on a silent line: its start lead (agent-voice.ts) is received, and goes out now. */
  | { kind: 'sentence_lead' }
  /** Agent audio, 8 kHz PCM, to the line; after the output stage: it was sent at `atMs`. */
  | { kind: 'agent_audio'; pcm: Int16Array; atMs: number }

export type Push = (frame: Frame) => void | Promise<void>

/** What the pipeline gives every stage when the call starts. */
export type StageContext = {
  /** Sends a frame to the next stage (at any time: timers too). */
  push: Push
  conversation: Conversation
  /** The transport's clock (monotonic ms). */
  now(): number
  /**
   * How far the caller has been heard, on the caller audio's clock (frames' `atMs`, sample-clock.ts): silence is
   * judged up to here, never at a `now` the event loop has not read the audio up to.
   */
  heardUpToMs(): number
  /** A transport time as a time on the conversation's clock (epoch ms). */
  clockTime(atMs: number): number
  warn(message: string): void
  /** The conversation has ended: stages stop feeding it. */
  ending(): boolean
  /** Settles once the conversation has ended. */
  readonly ended: Promise<void>
  /** The call's start on the transport's clock. */
  readonly startedAtMs: number
  /**
   * The caller takes the floor (speech, a turn, a key): true when the agent is silent or was cut (barge-in), false when
   * the turn being heard may not be interrupted and must be finished.
   */
  yieldToCaller(): boolean
  /** Barge-in on agent turn `turn`: every stage drops the agent's queued speech, the conversation keeps `heardText`. */
  bargeIn(turn: number, heardText: string): void
  /** The agent is silenced without a barge-in (an answering machine, the end): every stage drops queued speech. */
  silenceAgent(): void
  /** The turn the caller is hearing may be cut now (without cutting it). */
  agentInterruptible(): boolean
  /** The caller is speaking now (between `speech_started` and the utterance's end). */
  callerSpeaking(): boolean
}

export interface Stage {
  readonly name: string
  /** The call starts: the stage keeps `context` (its `push` leads to the next stage). */
  start(context: StageContext): void
  /** A frame from the stage before; frames the stage does not consume are pushed on. */
  process(frame: Frame): void | Promise<void>
  /** The agent's speech is cut (barge-in or silence): drop whatever of it is queued. */
  interrupt?(): void
  /** The call is over: clear timers, free resources. */
  stop?(): void
}

/** A stage that only handles frames, with the call's context (no timers, nothing to drop on a cut). */
export function frameStage(name: string, handle: (frame: Frame, context: StageContext) => void | Promise<void>): Stage {
  let context: StageContext
  return {
    name,
    start(given) {
      context = given
    },
    process: (frame) => handle(frame, context),
  }
}

/** Links the stages in order: each one's `push` is the next one's `process`; what the last pushes is dropped. */
export function linkStages(stages: Stage[], context: Omit<StageContext, 'push'>): Push {
  let next: Push = () => undefined
  for (let index = stages.length - 1; index >= 0; index--) {
    const stage = stages[index]
    stage.start({ ...context, push: next })
    next = (frame) => stage.process(frame)
  }
  return next
}
