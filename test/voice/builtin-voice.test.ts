import { describe, expect, test } from 'bun:test'
import { createBuiltinVoice } from '../../src/voice/builtin-voice'
import type { FliteVoice } from '../../src/voice/flite'
import { loadNoiseEngine } from '../../src/voice/noise'
import { loadVadEngine } from '../../src/voice/vad'
import { rms } from '../support/audio'

async function collect(client: ReturnType<typeof createBuiltinVoice>, text: string, signal?: AbortSignal) {
  const chunks: { pcm: Int16Array; sampleRate: number }[] = []
  for await (const chunk of client.synthesize(text, { signal })) chunks.push(chunk)
  return chunks
}

describe('built-in voice in worker threads', () => {
  test('speaks 16 kHz speech as builtin|||flite; voices differ; blank text yields nothing', async () => {
    const voice = createBuiltinVoice()
    expect(voice.ref).toEqual({ service: 'builtin', model: 'flite' })
    const [chunk] = await collect(voice, 'Thank you for calling. How can I help you today?')
    expect(chunk.sampleRate).toBe(16000)
    expect(chunk.pcm.length / 16000).toBeGreaterThan(1.5)
    expect(rms(chunk.pcm)).toBeGreaterThan(500)
    const [male] = await collect(
      createBuiltinVoice({ voice: 'rms' }),
      'Thank you for calling. How can I help you today?',
    )
    expect(male.pcm).not.toEqual(chunk.pcm)
    expect(await collect(voice, '  ')).toEqual([])
  })

  test('sentences asked for at once are all spoken, each whole (the stall it spares the event loop is in scripts/bench/voice.ts)', async () => {
    const voice = createBuiltinVoice()
    const sentences = Array.from(
      { length: 6 },
      (_, index) => `This is sentence number ${index + 1}, spoken while the calls go on.`,
    )
    const spoken = await Promise.all(sentences.map((text) => collect(voice, text)))
    expect(spoken.map((chunks) => chunks.length)).toEqual([1, 1, 1, 1, 1, 1])
    expect(spoken.every(([chunk]) => chunk.pcm.length > 2 * 16000)).toBe(true)
  }, 30_000)

  test('an aborted request throws; an unknown voice is refused up front', async () => {
    const controller = new AbortController()
    controller.abort()
    await expect(collect(createBuiltinVoice(), 'Hello.', controller.signal)).rejects.toThrow()
    expect(() => createBuiltinVoice({ voice: 'no_such_voice' as FliteVoice })).toThrow('unknown built-in voice')
  })

  test('servers in one process share one VAD engine and one noise engine', async () => {
    // One each per server was one WebAssembly instance each per test app: with the apps of the whole suite alive in one
    // process, JavaScriptCore's eight fast memories ran out and the built-in voice's per-sentence instances ran
    // bounds-checked, ~5 s a sentence instead of ~0.15 s (the model-failure calls then timed out).
    const engines = await Promise.all(
      Array.from({ length: 3 }, () => Promise.all([loadVadEngine(), loadNoiseEngine()])),
    )
    expect(new Set(engines.map(([vad]) => vad)).size).toBe(1)
    expect(new Set(engines.map(([, noise]) => noise)).size).toBe(1)
  })
})
