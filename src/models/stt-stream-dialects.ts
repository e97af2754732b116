import type { SttSettings } from './stt'

/**
 * How a server speaks realtime transcription over its socket (stt-stream.ts), chosen by `stt.settings.streaming`:
 *
 * - `openai` (or `true`): the OpenAI Realtime API's transcription mode. `<base URL>/realtime?intent=transcription`,
 *   `transcription_session.update`, pcm16 at 24 kHz, `input_audio_buffer.commit` ends a segment (at least 100 ms of
 *   audio), the text in `conversation.item.input_audio_transcription.completed` (`.delta` pieces, `.failed`), matched to
 *   its commit by `item_id`.
 * - `vllm`: vLLM's `/v1/realtime`. `session.update` with a top-level `model`, pcm16 at 16 kHz, a commit that starts a
 *   transcription before the segment's audio and a `final` commit that ends it, the text in `transcription.done`
 *   (`transcription.delta` pieces). The server runs one transcription at a time and discards audio sent before the
 *   last one is done, so what follows a segment's end waits for its text.
 */
export type StreamDialect = {
  query: Record<string, string>
  /** The socket's PCM rate. */
  rate: number
  session(settings: SttSettings): Record<string, unknown>
  /** Sent before a segment's first audio; null: none. */
  segmentStart: Record<string, unknown> | null
  segmentEnd: Record<string, unknown>
  /** The least audio (16 kHz samples) a segment may be committed with. */
  minSamples: number
  /** What is sent after a segment's end waits for that segment's text. */
  oneAtATime: boolean
  events: { committed: string | null; delta: string; done: string; doneText: string; failed: string | null }
}

export const STREAM_DIALECTS = {
  openai: {
    query: { intent: 'transcription' },
    rate: 24_000,
    session: (settings) => ({
      type: 'transcription_session.update',
      session: {
        input_audio_format: 'pcm16',
        input_audio_transcription: {
          model: settings.model,
          ...(settings.language ? { language: settings.language } : {}),
        },
        turn_detection: null,
      },
    }),
    segmentStart: null,
    segmentEnd: { type: 'input_audio_buffer.commit' },
    minSamples: 1_600,
    oneAtATime: false,
    events: {
      committed: 'input_audio_buffer.committed',
      delta: 'conversation.item.input_audio_transcription.delta',
      done: 'conversation.item.input_audio_transcription.completed',
      doneText: 'transcript',
      failed: 'conversation.item.input_audio_transcription.failed',
    },
  },
  vllm: {
    query: {},
    rate: 16_000,
    session: (settings) => ({ type: 'session.update', model: settings.model }),
    segmentStart: { type: 'input_audio_buffer.commit' },
    segmentEnd: { type: 'input_audio_buffer.commit', final: true },
    minSamples: 1,
    oneAtATime: true,
    events: {
      committed: null,
      delta: 'transcription.delta',
      done: 'transcription.done',
      doneText: 'text',
      failed: null,
    },
  },
} satisfies Record<string, StreamDialect>

/** The dialect `stt.settings.streaming` names; null: not streaming. */
export function streamDialectOf(streaming: unknown): StreamDialect | null {
  if (streaming === true || streaming === 'openai') return STREAM_DIALECTS.openai
  if (streaming === 'vllm') return STREAM_DIALECTS.vllm
  return null
}
