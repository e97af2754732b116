/**
 * Per-turn response times, measured by the pipeline itself: from the end of the caller's speech to the first agent
 * audio sent, minus the stop window (the silence the turn detector must hear before the turn is over). That is the
 * engine's own overhead plus the models' latency, never hidden. Also how long answering-machine detection held the
 * answer to the caller's first turn.
 */
import type { OpenMetric, Stage, StageContext } from '../stage'

/** One caller turn answered by the agent. Times are ms on the transport's clock, durations in ms. */
export type VoiceTurnMetric = {
  /** When the caller stopped speaking (the turn detector knew it `stop window` later). */
  speechEndedAtMs: number
  /** First agent audio sent − end of speech − stop window: the pipeline's and the models' share. */
  responseMs: number
  sttMs: number
  /** Caller's text given to the conversation → first agent text (LLM time to first token, plus any transition). */
  firstTextMs: number | null
  /** First sentence ready → its first audio (TTS time to first byte, resampling, encoding). */
  firstAudioMs: number | null
  /** Knowledge-base retrievals inside firstTextMs (embedding the query and searching): 0 when none ran. */
  retrievalMs: number
}

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
      responseMs: firstAudioAtMs - metric.endOfTurnAtMs,
      sttMs: metric.sttMs,
      firstTextMs: measuring.firstTextAtMs === undefined ? null : measuring.firstTextAtMs - measuring.messageAtMs,
      firstAudioMs: measuring.firstSentenceAtMs === undefined ? null : firstAudioAtMs - measuring.firstSentenceAtMs,
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
        case 'agent_audio':
          if (measuring) close(measuring, frame.atMs)
          return
      }
      return context.push(frame)
    },
  }
}
