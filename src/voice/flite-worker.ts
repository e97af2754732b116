/**
 * Worker thread of the built-in voice (see builtin-voice.ts): synthesises with Flite off the main thread, so a
 * sentence's 50–500 ms of synthesis never holds up the other calls' audio. One Flite per voice, made on first use.
 * Its own entrypoint in scripts/build.ts, so the compiled binary carries it.
 */
import { createFliteTts, type FliteTts, type FliteVoice } from './flite'

export type FliteRequest = { id: number; voice: FliteVoice; text: string }
export type FliteAnswer = { id: number; pcm: Int16Array; sampleRate: number } | { id: number; error: string }

declare const self: Worker

const voices = new Map<FliteVoice, Promise<FliteTts>>()

self.onmessage = async (event: MessageEvent<FliteRequest>) => {
  const { id, voice, text } = event.data
  try {
    let tts = voices.get(voice)
    if (!tts) voices.set(voice, (tts = createFliteTts({ voice })))
    const chunks: { pcm: Int16Array; sampleRate: number }[] = []
    for await (const chunk of (await tts).synthesize(text)) chunks.push(chunk)
    const [first] = chunks
    const pcm = first?.pcm ?? new Int16Array(0)
    self.postMessage({ id, pcm, sampleRate: first?.sampleRate ?? 16_000 } satisfies FliteAnswer, [
      pcm.buffer as ArrayBuffer,
    ])
  } catch (error) {
    self.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies FliteAnswer)
  }
}
