import { pcmBytes, wavHeader } from '../lib/wav'
import { parseJsonAnswer, readAnswer, requestModel, type ModelConnection, type ModelTimeouts } from './http'
import { multipartBody } from './multipart'
import { ModelServerError, type SttClient } from './types'

export type SttSettings = { model: string; language?: string }

export type SttClientOptions = {
  /** Defaults: 15 s to the response headers, 15 s without a piece of the answer, 60 s in all. */
  timeouts?: Partial<ModelTimeouts>
}

const DEFAULT_TIMEOUTS: ModelTimeouts = { firstByteMs: 15_000, idleMs: 15_000, totalMs: 60_000 }

export const STT_SAMPLE_RATE = 16_000

/** Speech to text behind any OpenAI-compatible `/audio/transcriptions` (whisper servers, speaches, hosted ones). */
export function createSttClient(
  connection: ModelConnection,
  settings: SttSettings,
  options: SttClientOptions = {},
): SttClient {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  return {
    ref: { service: connection.provider, model: settings.model },
    async transcribe(pcm16k, { signal } = {}) {
      const what = 'transcription'
      const form = multipartBody([
        {
          name: 'file',
          filename: 'speech.wav',
          contentType: 'audio/wav',
          bytes: [wavHeader(pcm16k.length, STT_SAMPLE_RATE), pcmBytes(pcm16k)],
        },
        { name: 'model', value: settings.model },
        ...(settings.language ? [{ name: 'language', value: settings.language }] : []),
        { name: 'response_format', value: 'json' },
      ])
      const exchange = await requestModel(connection, {
        what,
        path: '/audio/transcriptions',
        body: form,
        timeouts,
        signal,
      })
      return readAnswer(exchange, (text) => {
        // Asked for JSON; a server that ignores response_format answers plain text.
        if (!text.trimStart().startsWith('{')) return text.trim()
        const recognised = parseJsonAnswer(text, what)?.text
        if (typeof recognised !== 'string') throw new ModelServerError(`${what} failed: the answer has no text`)
        return recognised.trim()
      })
    },
  }
}
