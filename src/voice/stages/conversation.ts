/**
 * The conversation's place in the chain: caller turns go in (each once the agent may be cut, or has finished a turn
 * that may not be), its events come out as frames for the agent voice. The caller starting to speak counts as
 * activity (the idle rule) and takes the floor, unless barge-in waits for words (`bargeInMinWords`: the backchannel
 * stage decides on the transcript instead).
 */
import type { ConversationEvent } from '../../conversation/engine'
import type { CallerTurn, Stage, StageContext } from '../stage'

export type ConversationStage = Stage & {
  /** An event of the conversation (not its end, which the pipeline handles): goes on to the agent voice. */
  hear(event: Exclude<ConversationEvent, { type: 'ended' }>): void
}

export function converse(options: {
  interruptOnSpeechStart: boolean
  agentSilent: () => Promise<void>
}): ConversationStage {
  let context: StageContext

  /** Gives the caller's turn to the conversation once the agent may be cut or has finished its turn. */
  async function tell({ text, timing, metric }: CallerTurn): Promise<void> {
    if (!context.yieldToCaller()) await Promise.race([options.agentSilent(), context.ended])
    if (context.ending()) return
    void context.push({ kind: 'user_turn', metric })
    void context.conversation
      .userMessage(text, timing)
      .then(() => context.push({ kind: 'user_turn_answered', metric }))
      .catch((error) => context.warn(`The conversation failed on the caller's turn: ${(error as Error).message}`))
  }

  return {
    name: 'conversation',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind === 'caller_turn') return tell(frame.turn)
      if (frame.kind !== 'speech_started') return context.push(frame)
      context.conversation.noteUserActivity(context.clockTime(frame.atMs))
      if (options.interruptOnSpeechStart) context.yieldToCaller()
    },
    hear(event) {
      void context.push({ kind: 'conversation', event })
    },
  }
}
