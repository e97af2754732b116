/**
 * What a call's chain of stages gives the pipeline that runs it (pipeline.ts): the stages in order, and the parts the
 * pipeline asks about the floor and the outcome. The speech chain (STT → LLM → TTS) and the realtime chain
 * (realtime-chain.ts) each build one.
 */
import type { ConversationStage } from './stages/conversation'
import type { VoiceTurnMetric } from './stages/metrics'
import type { Stage } from './stage'

export type CallChain = {
  stages: Stage[]
  /** The agent's side: what the caller is hearing, and the answering machine's message. */
  voice: {
    heardTurn(): { turn: number; heardText: string } | undefined
    readonly silent: boolean
    whenSilent(): Promise<void>
    say(text: string, signal: AbortSignal): Promise<boolean>
  }
  /** Whether the caller is speaking now. */
  turns: { readonly speaking: boolean }
  answeringMachine: { readonly detectedAfterMs: number | null } | null
  metrics: { readonly turns: VoiceTurnMetric[]; readonly firstAnswerHeldMs: number | null }
  conversationStage: Pick<ConversationStage, 'hear'>
}
