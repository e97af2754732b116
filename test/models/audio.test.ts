import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createSttClient } from '../../src/models/stt'
import { createTtsClient } from '../../src/models/tts'
import type { TtsClient } from '../../src/models/types'
import { deadBaseUrl, failWith, modelServerFailure, fakeSpeech, startFakeModels } from '../support/fake-models'
import { waitFor } from '../support/wait'

const API_KEY = 'speaches-key-93be1d'
const models = startFakeModels()
afterAll(() => models.stop())
beforeEach(() => models.reset())

const connection = () => ({ provider: 'speaches', baseUrl: models.baseUrl, apiKey: API_KEY })

/** 0.25 s of a ramp at 16 kHz: every sample different, so any reordering or loss shows. */
const utterance = Int16Array.from({ length: 4000 }, (_, index) => ((index * 37) % 65536) - 32768)

describe('STT client', () => {
  test('sends a 16 kHz mono WAV of the samples with model and language, answers the text', async () => {
    models.transcription.queue((request) => ({ text: ` heard ${request.audio?.pcm.length} samples ` }))
    const stt = createSttClient(connection(), { model: 'Systran/faster-whisper-small', language: 'fr' })
    expect(await stt.transcribe(utterance)).toBe('heard 4000 samples')
    expect(stt.ref).toEqual({ service: 'speaches', model: 'Systran/faster-whisper-small' })

    const [sent] = models.requestsTo('/audio/transcriptions')
    expect(sent.headers.get('authorization')).toBe(`Bearer ${API_KEY}`)
    expect(sent.headers.get('content-type')).toStartWith('multipart/form-data')
    expect(sent.body).toMatchObject({ model: 'Systran/faster-whisper-small', language: 'fr' })
    expect(sent.body.file.type).toMatch(/^audio\/(x-)?wav$/)
    expect(sent.body.file.name).toEndWith('.wav')
    expect(sent.audio?.format).toEqual({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 })
    expect(sent.audio?.pcm).toEqual(utterance)
  })

  test('uploads started together each reach the server whole (every upload is laid out in one shared buffer)', async () => {
    const sum = (pcm: Int16Array) => pcm.reduce((total, sample, index) => (total + sample * (index + 1)) % 1_000_003, 0)
    models.transcription.handler = (request) => ({ text: `${request.audio?.pcm.length}:${sum(request.audio!.pcm)}` })
    const stt = createSttClient(connection(), { model: 'm' })
    // longest first: a shorter upload laid out after it overwrites the start of the same buffer
    const utterances = Array.from({ length: 12 }, (_, which) =>
      Int16Array.from({ length: 48_000 - which * 3_000 }, (_, index) => ((index * (which + 3)) % 20_000) - 10_000),
    )
    const heard = await Promise.all(utterances.map((pcm) => stt.transcribe(pcm)))
    expect(heard).toEqual(utterances.map((pcm) => `${pcm.length}:${sum(pcm)}`))
  })

  test('no language field when none is set; a plain-text answer is understood', async () => {
    models.transcription.handler = () => ({ text: 'ignored' })
    models.transcription.queue(() => ({ text: 'plain words' }))
    const stt = createSttClient({ provider: 'openai', baseUrl: models.baseUrl }, { model: 'whisper-1' })
    expect(await stt.transcribe(utterance)).toBe('plain words')
    const [sent] = models.requestsTo('/audio/transcriptions')
    expect('language' in sent.body).toBe(false)
    expect(sent.headers.get('authorization')).toBeNull()
  })

  test('errors and a slow server become ModelServerErrors without the key', async () => {
    models.transcription.queue(failWith(400, { detail: `Invalid language 'xx' for key ${API_KEY}` }), {
      text: 'late',
      delayMs: 5_000,
    })
    const stt = createSttClient(connection(), { model: 'm', language: 'xx' }, { timeouts: { firstByteMs: 100 } })
    const refused = await modelServerFailure(stt.transcribe(utterance))
    expect(refused.status).toBe(400)
    expect(refused.message).toContain("Invalid language 'xx'")
    expect(refused.message).not.toContain(API_KEY)
    expect((await modelServerFailure(stt.transcribe(utterance))).message).toContain('did not answer within 100 ms')
    await waitFor('the server to see the client leave', () => models.requests[1]?.aborted === true)
    const dead = createSttClient({ provider: 'speaches', baseUrl: deadBaseUrl(), apiKey: API_KEY }, { model: 'm' })
    expect((await modelServerFailure(dead.transcribe(utterance))).message).toStartWith('transcription failed:')
  })

  test('aborting stops the upload', async () => {
    models.transcription.queue({ text: 'late', delayMs: 5_000 })
    const stt = createSttClient(connection(), { model: 'm' })
    const controller = new AbortController()
    const pending = stt.transcribe(utterance, { signal: controller.signal })
    await waitFor('the request to arrive', () => models.requests.length === 1)
    controller.abort()
    expect(
      await pending.then(
        () => null,
        (error) => error.name,
      ),
    ).toBe('AbortError')
    await waitFor('the server to see the client leave', () => models.requests[0].aborted)
  })
})

async function synthesized(tts: TtsClient, text: string, signal?: AbortSignal) {
  const chunks: { pcm: Int16Array; sampleRate: number }[] = []
  for await (const chunk of tts.synthesize(text, { signal })) chunks.push(chunk)
  const pcm: Int16Array = new Int16Array(chunks.reduce((total, chunk) => total + chunk.pcm.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    pcm.set(chunk.pcm, offset)
    offset += chunk.pcm.length
  }
  return { chunks, pcm, rates: new Set(chunks.map((chunk) => chunk.sampleRate)) }
}

describe('TTS client', () => {
  const text = 'Hello, how can I help you today?'

  test('asks for 24 kHz pcm and streams the samples in several chunks, none lost across odd chunk sizes', async () => {
    models.speech.queue({ chunkDelayMs: 10 })
    const tts = createTtsClient(connection(), { model: 'kokoro', voice: 'af_heart', speed: 1.1 })
    const { chunks, pcm, rates } = await synthesized(tts, text)
    expect(chunks.length).toBeGreaterThan(1)
    expect([...rates]).toEqual([24_000])
    expect(pcm).toEqual(fakeSpeech(text))
    const [sent] = models.requestsTo('/audio/speech')
    expect(sent.body).toEqual({ model: 'kokoro', voice: 'af_heart', input: text, response_format: 'pcm', speed: 1.1 })
    expect(sent.headers.get('authorization')).toBe(`Bearer ${API_KEY}`)
    expect(tts.ref).toEqual({ service: 'speaches', model: 'kokoro' })
  })

  test('a WAV answer is recognised by its header, even cut into 7-byte pieces, at its own rate', async () => {
    models.speech.queue({ format: 'wav', sampleRate: 22_050, chunkBytes: 7 }, { format: 'wav' })
    const tts = createTtsClient(connection(), { model: 'piper', voice: 'amy' })
    const cut = await synthesized(tts, 'Short one.')
    expect([...cut.rates]).toEqual([22_050])
    expect(cut.pcm).toEqual(fakeSpeech('Short one.', 22_050))
    const whole = await synthesized(tts, text)
    expect([...whole.rates]).toEqual([24_000])
    expect(whole.pcm).toEqual(fakeSpeech(text))
  })

  test('longer text, longer audio', async () => {
    const tts = createTtsClient(connection(), { model: 'kokoro', voice: 'af_heart' })
    const short = await synthesized(tts, 'Hi.')
    const long = await synthesized(tts, text)
    expect(long.pcm.length).toBeGreaterThan(short.pcm.length)
  })

  test('errors, and audio it cannot read, become ModelServerErrors', async () => {
    models.speech.queue(failWith(404, { error: { message: "voice 'zz' not found" } }))
    const tts = createTtsClient(connection(), { model: 'kokoro', voice: 'zz' })
    const missing = await modelServerFailure(synthesized(tts, text))
    expect(missing.status).toBe(404)
    expect(missing.message).toContain("voice 'zz' not found")
    expect(missing.message).toStartWith('speech failed:')

    models.speech.queue({ format: 'mp3' })
    expect((await modelServerFailure(synthesized(tts, text))).message).toContain('audio/mpeg, not pcm or wav')
  })

  test('audio that stops coming is cut by the idle timeout; a reader that pauses is not', async () => {
    models.speech.queue({ chunkBytes: 960, stallAfterChunks: 3 })
    const tts = createTtsClient(connection(), { model: 'kokoro', voice: 'af_heart' }, { timeouts: { idleMs: 150 } })
    const error = await modelServerFailure(synthesized(tts, text))
    expect(error.message).toBe(`speech failed: ${models.baseUrl} sent nothing for 150 ms`)
    await waitFor('the server to see the client leave', () => models.requests[0]?.aborted === true)

    // Playing audio out takes the pipeline longer than the idle timeout between chunks: only waits on the server count.
    models.speech.queue({ chunkBytes: 960 })
    const samples: number[] = []
    for await (const chunk of tts.synthesize('Hi.')) {
      samples.push(chunk.pcm.length)
      await Bun.sleep(300)
    }
    expect(samples.reduce((total, length) => total + length, 0)).toBe(fakeSpeech('Hi.').length)
  })

  test('aborting mid-audio stops the request', async () => {
    models.speech.queue({ delayMs: 5_000 })
    const tts = createTtsClient(connection(), { model: 'kokoro', voice: 'af_heart' })
    const controller = new AbortController()
    const pending = synthesized(tts, text, controller.signal)
    await waitFor('the request to arrive', () => models.requests.length === 1)
    controller.abort()
    expect(
      await pending.then(
        () => null,
        (error) => error.name,
      ),
    ).toBe('AbortError')
    await waitFor('the server to see the client leave', () => models.requests[0].aborted)
  })
})
