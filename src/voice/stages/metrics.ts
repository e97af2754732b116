/**
 * Per-turn response times, measured by the pipeline itself: from the end of the caller's speech to the first agent
 * audio sent, split into the stop window (the silence waited before the turn was known to be over: the short pause
 * when speculation ended it, else the full window) and the response after it (speech recognition, LLM first text, TTS
 * first audio and start lead, the engine's own share), with what speculation saved. That is the
 * engine's own overhead plus the models' latency, never hidden. Also how long answering-machine detection held the
 * answer to the caller's first turn.
 */
import type { OpenMetric, Stage, StageContext } from '../stage'

/** One caller turn answered by the agent. Times are ms on the transport's clock, durations in ms. */
export type VoiceTurnMetric = {
  /** When the caller stopped speaking (the turn detector knew it `stopWindowMs` later). */
  speechEndedAtMs: number
  /** The silence waited before the turn was known to be over: the pause window (speculation) or the full stop window. */
  stopWindowMs: number
  /** First agent audio sent − end of speech − stop window: the pipeline's and the models' share. */
  responseMs: number
  /** End of turn → transcript: 0 when it was transcribed before (speculation). */
  sttMs: number
  /**
   * What speculation saved: the rest of the stop window not waited (a turn ended early by its words), or the head start
   * of the reply's LLM request (prepared at the pause, taken at the end of the window).
   */
  speculationSavedMs: number
  /** Caller's text given to the conversation → first agent text (LLM time to first token, plus any transition). */
  firstTextMs: number | null
  /**
   * Caller's text given to the conversation → its first whole sentence, ready for speech synthesis: the LLM's share
   * (its first token, then the rest of the sentence as fast as it streams).
   */
  firstSentenceMs: number | null
  /** First sentence ready → its first audio from speech synthesis (TTS time to first byte). */
  firstAudioMs: number | null
  /**
   * First audio → the start lead received (the TTS streaming the first 300 ms of speech, agent-voice.ts: the jitter
   * buffer a reply starts with); 0 when its first piece held the lead. What follows until the audio is sent is the
   * engine's share.
   */
  ttsLeadMs: number
  /** Knowledge-base retrievals inside firstTextMs (embedding the query and searching): 0 when none ran. */
  retrievalMs: number
}

/**
 * The engine's own share of a turn's response: what the models' measured times do not explain (STT, the LLM up to the
 * first whole sentence, TTS up to its first audio and the start lead).
 */
export const engineShareMs = (turn: VoiceTurnMetric) =>
  turn.responseMs -
  turn.sttMs -
  (turn.firstSentenceMs ?? turn.firstTextMs ?? 0) -
  (turn.firstAudioMs ?? 0) -
  turn.ttsLeadMs

export type TurnMetrics = Stage & {
  readonly turns: VoiceTurnMetric[]
  /** null: detection off, or no caller turn while it ran; 0: it had decided by the first turn. */
  readonly firstAnswerHeldMs: number | null
}

type Measuring = {
  metric: OpenMetric
  messageAtMs: number
  retrievalAtMessageMs: number
  firstTextAtMs?: number
  firstSentenceAtMs?: number
  firstSpeechAtMs?: number
  leadAtMs?: number
}

export function measureTurns(options: {
  answeringMachineDetection: boolean
  /** The run's retrieval time so far (a running total), so a turn's share is the difference across it. */
  retrievalMsTotal?: () => number
}): TurnMetrics {
  const retrievalMsTotal = options.retrievalMsTotal ?? (() => 0)
  let context: StageContext
  const turns: VoiceTurnMetric[] = []
  let firstAnswerHeldMs: number | null = null
  let open: Measuring | null = null

  function close(measuring: Measuring, firstAudioAtMs: number): void {
    open = null
    const { metric } = measuring
    turns.push({
      speechEndedAtMs: metric.speechEndedAtMs,
      stopWindowMs: metric.endOfTurnAtMs - metric.speechEndedAtMs,
      responseMs: firstAudioAtMs - metric.endOfTurnAtMs,
      sttMs: metric.sttMs,
      speculationSavedMs: metric.speculationSavedMs,
      firstTextMs: measuring.firstTextAtMs === undefined ? null : measuring.firstTextAtMs - measuring.messageAtMs,
      firstSentenceMs:
        measuring.firstSentenceAtMs === undefined ? null : measuring.firstSentenceAtMs - measuring.messageAtMs,
      firstAudioMs:
        measuring.firstSentenceAtMs === undefined
          ? null
          : (measuring.firstSpeechAtMs ?? firstAudioAtMs) - measuring.firstSentenceAtMs,
      ttsLeadMs: measuring.leadAtMs === undefined ? 0 : measuring.leadAtMs - measuring.firstSpeechAtMs!,
      retrievalMs: retrievalMsTotal() - measuring.retrievalAtMessageMs,
    })
  }

  return {
    name: 'metrics',
    get turns() {
      return turns
    },
    get firstAnswerHeldMs() {
      return firstAnswerHeldMs
    },
    start(given) {
      context = given
    },
    process(frame) {
      const measuring = open
      switch (frame.kind) {
        case 'answer_held':
          firstAnswerHeldMs = frame.heldMs
          return
        case 'user_turn':
          if (options.answeringMachineDetection) firstAnswerHeldMs ??= 0
          open = frame.metric
            ? { metric: frame.metric, messageAtMs: context.now(), retrievalAtMessageMs: retrievalMsTotal() }
            : null
          return
        case 'user_turn_answered':
          // A reply without a word (an empty answer, a cut one) has no response time to measure.
          if (frame.metric && measuring?.metric === frame.metric && measuring.firstTextAtMs === undefined) open = null
          return
        case 'agent_turn_started':
          if (measuring) measuring.firstTextAtMs ??= context.now()
          return
        case 'sentence_started':
          if (measuring) measuring.firstSentenceAtMs ??= context.now()
          return
        case 'sentence_audio':
          if (measuring?.firstSentenceAtMs !== undefined) measuring.firstSpeechAtMs ??= context.now()
          return
        case 'sentence_lead':
          if (measuring?.firstSpeechAtMs !== undefined) measuring.leadAtMs ??= context.now()
          return
        case 'agent_audio':
          if (measuring) close(measuring, frame.atMs)
          return
      }
      return context.push(frame)
    },
  }
}
