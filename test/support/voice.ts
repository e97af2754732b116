/** Caller audio for voice tests: real speech from the built-in voice, on the telephone line's 8 kHz. */
import { createFliteTts, type FliteTts } from '../../src/voice/flite'
import { resample } from '../../src/lib/resample'
import { sine } from './audio'

let voice: Promise<FliteTts> | null = null

/** `text` spoken by Flite, as 8 kHz PCM (what a caller sends over µ-law). Cached per text. */
const spoken = new Map<string, Promise<Int16Array>>()
export function callerSpeech(text: string): Promise<Int16Array> {
  let speech = spoken.get(text)
  if (!speech) {
    speech = (async () => {
      voice ??= createFliteTts({ voice: 'rms' })
      const chunks: Int16Array[] = []
      for await (const chunk of (await voice).synthesize(text)) chunks.push(resample(chunk.pcm, chunk.sampleRate, 8000))
      return concatPcm(chunks)
    })()
    spoken.set(text, speech)
  }
  return speech
}

export function concatPcm(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((total, part) => total + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

export const silence8k = (ms: number) => new Int16Array(ms * 8)

/**
 * An answering machine: a greeting of two sentences, a short pause, a 1 kHz beep. The pause between the sentences
 * (~0.8 s) ends a caller turn (stop window 0.6 s) but not the greeting (pauses up to 1 s).
 */
export async function answeringMachine(): Promise<Int16Array> {
  const [first, second] = await Promise.all([
    callerSpeech('Hi, you have reached Jordan.'),
    callerSpeech('Please leave your name and number after the tone.'),
  ])
  return concatPcm([first, silence8k(450), second, silence8k(300), sine(1000, 8000, 400, 8000)])
}
