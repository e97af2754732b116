/**
 * The chain of a call on a realtime speech-to-speech model (stages/realtime.ts):
 *
 *   line µ-law → decode → record caller (left) → 8 → 24 kHz → realtime listen (the model hears, reports speech and
 *   transcripts) → conversation → realtime speak (the model's audio, lines read out) → line output (record agent
 *   (right), µ-law, transport)
 *
 * No answering-machine detection, turn detector, DTMF collector or per-turn metrics: the model hears the caller itself
 * (docs/models.md lists what this mode leaves out).
 */
import type { CallChain } from './chain'
import type { MediaTransport } from './media-transport'
import { REALTIME_RATE } from '../models/realtime'
import type { CallRecorder } from './recorder'
import { decodeLine, LINE_RATE, recordCaller, resampleCaller } from './stages/caller-input'
import { converse } from './stages/conversation'
import { lineOutput } from './stages/line-output'
import { realtimeVoice, type RealtimeVoiceOptions } from './stages/realtime'

export function realtimeChain(
  options: RealtimeVoiceOptions,
  transport: MediaTransport,
  recorder: CallRecorder,
  recordings?: ReadonlyMap<string, { ulaw: Uint8Array }>,
): CallChain {
  const realtime = realtimeVoice(options, { mark: () => transport.mark(), recordings })
  const conversationStage = converse({ interruptOnSpeechStart: true, agentSilent: () => realtime.speak.whenSilent() })
  return {
    stages: [
      decodeLine(),
      recordCaller(recorder),
      resampleCaller(LINE_RATE, REALTIME_RATE),
      realtime.listen,
      conversationStage,
      realtime.speak,
      lineOutput(transport, recorder),
    ],
    voice: realtime.speak,
    turns: realtime,
    answeringMachine: null,
    metrics: { turns: [], firstAnswerHeldMs: null },
    conversationStage,
  }
}
