/**
 * Answering-machine detection (outbound calls), as two stages: the detector listens to the caller's 8 kHz audio and
 * says `person` or `machine` (or gives up, which counts as a person: a DTMF key shows one too); the answer gate, further
 * on, holds the caller's turns from the conversation until then: the agent must not answer a machine's greeting. The
 * `person` verdict gives the held turns to the conversation as one turn (its reply was prepared meanwhile, so it is
 * under way when released); `machine` drops them, and the detector
 * silences the agent and ends the conversation (`voicemail_detected`). The greeting and the conversation's own speech
 * are not held.
 */
import {
  createVoicemailDetector,
  type VoicemailDetector,
  type VoicemailParameters,
  type VoicemailVerdict,
} from '../voicemail'
import type { CallerTurn, Stage, StageContext } from '../stage'
import { LINE_RATE } from './caller-input'

export type AnsweringMachineDetector = Stage & {
  /** When the machine was found (ms after the start); null while none was. */
  readonly detectedAfterMs: number | null
}

/**
 * Frames stop while the line is silent: a timer gives the detector the time it asked for (a beep's end, a pause), or
 * its expiry, on the caller audio's clock as far as it has been heard (a stalled loop is not silence). It may fire early (sound moved that moment) and then looks again; it is only moved to an earlier moment.
 */
export function detectAnsweringMachine(parameters: Partial<VoicemailParameters> | undefined): AnsweringMachineDetector {
  let context: StageContext
  let detector: VoicemailDetector | null = createVoicemailDetector(parameters)
  let timer: { atMs: number; handle: ReturnType<typeof setTimeout> } | undefined
  let detectedAfterMs: number | null = null

  function onVerdict(verdict: VoicemailVerdict | null, sinceStart: number): void {
    if (verdict === 'machine') return machineFound(sinceStart)
    if (verdict === 'person') void context.push({ kind: 'answering_machine', verdict: 'person', afterMs: sinceStart })
    armTimer()
  }

  function armTimer(): void {
    const current = detector
    if (!current || context.ending()) return
    const atMs = context.startedAtMs + Math.min(current.nextCheckAtMs ?? Infinity, current.expiresAfterMs)
    if (timer && timer.atMs <= atMs) return
    clearTimeout(timer?.handle)
    timer = {
      atMs,
      handle: setTimeout(
        () => {
          timer = undefined
          if (detector !== current || context.ending()) return
          const sinceStart = context.heardUpToMs() - context.startedAtMs
          if (sinceStart >= current.expiresAfterMs) giveUp(sinceStart)
          else onVerdict(current.tick(sinceStart), sinceStart)
        },
        Math.max(0, atMs - context.heardUpToMs()),
      ),
    }
  }

  /** Nothing more can be decided (or a DTMF key showed a person): held turns are answered. */
  function giveUp(sinceStart: number): void {
    detector = null
    clearTimeout(timer?.handle)
    timer = undefined
    void context.push({ kind: 'answering_machine', verdict: 'person', afterMs: sinceStart })
  }

  function machineFound(afterMs: number): void {
    detector = null
    void context.push({ kind: 'answering_machine', verdict: 'machine', afterMs })
    detectedAfterMs = afterMs
    context.silenceAgent()
    void context.conversation.end('voicemail_detected')
  }

  return {
    name: 'answering machine',
    get detectedAfterMs() {
      return detectedAfterMs
    },
    start(given) {
      context = given
      armTimer()
    },
    process(frame) {
      if (detector && frame.kind === 'dtmf') giveUp(context.now() - context.startedAtMs)
      if (detector && frame.kind === 'caller_audio' && frame.sampleRate === LINE_RATE) {
        const sinceStart = frame.atMs - context.startedAtMs
        if (sinceStart > detector.expiresAfterMs) giveUp(sinceStart)
        else onVerdict(detector.push(frame.pcm, sinceStart), sinceStart)
      }
      return context.push(frame)
    },
    stop() {
      clearTimeout(timer?.handle)
    },
  }
}

const heldText = (turns: CallerTurn[]) => turns.map(({ text }) => text).join(' ')

/** Holds caller turns until the detector's verdict; then gives them to the conversation as one turn, or drops them. */
export function answerGate(): Stage {
  let context: StageContext
  let hold: { turns: CallerTurn[]; sinceMs: number | null } | null = { turns: [], sinceMs: null }

  function release(answer: boolean): void {
    const ended = hold
    hold = null
    if (!ended || ended.sinceMs === null) return
    void context.push({ kind: 'answer_held', heldMs: context.now() - ended.sinceMs })
    if (!answer) return
    const { turns: held } = ended
    const turn: CallerTurn = {
      text: heldText(held),
      timing: { startMs: held[0].timing.startMs, endMs: held.at(-1)!.timing.endMs },
      metric: held.at(-1)!.metric,
      source: 'speech',
    }
    // At once, not after the turns queued behind the held ones: a turn still being transcribed was spoken after these.
    void context.push({ kind: 'caller_turn', turn })
  }

  return {
    name: 'answer gate',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind === 'answering_machine') return release(frame.verdict === 'person')
      if (frame.kind !== 'caller_turn' || !hold) return context.push(frame)
      hold.sinceMs ??= context.now()
      hold.turns.push(frame.turn)
      // The reply is prepared while the detector decides: released the moment it says "person".
      context.conversation.prepareReply(heldText(hold.turns))
    },
  }
}
