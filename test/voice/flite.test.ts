import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ModelServerError } from '../../src/models/types.ts'
import { createFliteTts, type FliteTts, type FliteVoice } from '../../src/voice/flite.ts'
import { rms } from '../support/audio.ts'

describe('built-in voice (Flite under WASI)', () => {
  let tts: FliteTts
  beforeAll(async () => {
    tts = await createFliteTts()
  })
  afterAll(() => tts.close())

  async function collect(text: string, client: FliteTts = tts, signal?: AbortSignal) {
    const chunks: { pcm: Int16Array; sampleRate: number }[] = []
    for await (const chunk of client.synthesize(text, { signal })) chunks.push(chunk)
    return chunks
  }

  test('is the TtsClient builtin|||flite and speaks 16 kHz PCM of a plausible length', async () => {
    expect(tts.ref).toEqual({ service: 'builtin', model: 'flite' })
    const [chunk] = await collect('Thank you for calling. How can I help you today?')
    expect(chunk.sampleRate).toBe(16000)
    const seconds = chunk.pcm.length / chunk.sampleRate
    expect(seconds).toBeGreaterThan(1.5)
    expect(seconds).toBeLessThan(6)
    expect(rms(chunk.pcm)).toBeGreaterThan(500)
  })

  test('longer text gives longer speech; other voices speak too', async () => {
    const [short] = await collect('Yes.')
    const [long] = await collect('Yes, I can confirm your appointment on Tuesday at ten in the morning.')
    expect(long.pcm.length).toBeGreaterThan(short.pcm.length * 3)
    const male = await createFliteTts({ voice: 'rms' })
    const [other] = await collect('Yes.', male)
    male.close()
    expect(other.pcm.length).toBeGreaterThan(0)
    expect(other.pcm).not.toEqual(short.pcm)
  })

  test('blank text yields nothing; an aborted request throws before synthesising', async () => {
    expect(await collect('   ')).toEqual([])
    const controller = new AbortController()
    controller.abort()
    await expect(collect('Hello.', tts, controller.signal)).rejects.toThrow()
  })

  test('an unknown voice is refused up front (Flite would silently use its default)', async () => {
    await expect(createFliteTts({ voice: 'no_such_voice' as FliteVoice })).rejects.toThrow('unknown built-in voice')
  })

  test('a synthesis that writes no audio is a ModelServerError, and the process keeps running', async () => {
    const broken = await createFliteTts()
    broken.close() // its work directory is gone: Flite cannot write
    await expect(collect('Hello.', broken)).rejects.toBeInstanceOf(ModelServerError)
    expect(await collect('Still here.')).toHaveLength(1)
  })

  test('text that looks like a command-line flag is spoken, not interpreted', async () => {
    const [chunk] = await collect('-voice kal -o /etc/passwd')
    expect(chunk.pcm.length).toBeGreaterThan(8000)
  })
})
