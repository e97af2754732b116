import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ulawToPcm16 } from '../src/voice/g711'
import { noise, rms, sine } from './support/audio'
import { compiledBinary } from './support/compiled-binary'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { say, startFakeModels, type FakeModels } from './support/fake-models'
import { startFakeRealtime, type FakeRealtime } from './support/fake-realtime'
import { startBinaryTestApp, type HttpTestApp } from './support/http-app'
import { createConfiguration } from './support/telephony'
import { callerSpeech } from './support/voice'
import { createVoiceAgent, GREETING, marksProcessed, placeCall, turnsOf, untilWritten } from './support/voice-calls'
import { configureFakeVoiceModels } from './support/voice-models'
import { waitFor } from './support/wait'

/**
 * The voice path as it ships: the compiled binary places a call through the fake Asterisk and talks on its media leg.
 * Its greeting and answer are spoken by the built-in voice (Flite's WASM in worker threads, an entry point of its own
 * in the build), and the caller's speech is found by the WebRTC VAD (fvad's WASM), both embedded in the executable.
 * Then what else only the build can break: RNNoise's WASM denoising a call's audio on its way to streaming speech to
 * text (a WebSocket client), and a call on a realtime speech-to-speech model.
 */

let t: HttpTestApp
let fake: FakeAri
let models: FakeModels
let realtime: FakeRealtime

beforeAll(async () => {
  const binary = compiledBinary()
  models = startFakeModels()
  realtime = startFakeRealtime()
  fake = await startFakeAri()
  // Polling a run must not wait for each request's log line (that rereads the whole output).
  t = await startBinaryTestApp(binary, { waitForLogLines: false })
  await configureFakeVoiceModels(t, models, { tts: 'builtin' })
  await createConfiguration(
    t,
    'pbx',
    {
      provider: 'ari',
      ari_endpoint: fake.url,
      app_name: 'ariuser',
      app_password: 'aripass',
      allow_raw_dial_strings: true,
    },
    { isDefaultOutbound: true },
  )
  await waitFor(
    'ARI connected',
    async () => (await t.request('GET', '/api/v1/health')).body.ari.connected === 1,
    10_000,
  )
}, 120_000)

afterAll(async () => {
  await t?.close()
  await fake?.close()
  models?.stop()
  realtime?.stop()
})

test('a call on the binary: the built-in voice speaks the greeting, the VAD hears the caller, the run keeps the transcript', async () => {
  const question = 'Can I book a table for two tonight?'
  models.transcription.queue({ text: question })
  models.chat.queue(say('Of course.'))
  const agent = await createVoiceAgent(t)
  const call = await placeCall(t, fake, agent)

  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 15_000)
  const greeting = ulawToPcm16(Uint8Array.from(call.media.played.flatMap((frame) => [...frame.ulaw])))
  // About 2 s of speech: the Flite worker ran and its audio reached the line (silence would be 0).
  expect(greeting.length).toBeGreaterThan(8000)
  expect(rms(greeting)).toBeGreaterThan(500)
  expect(models.requestsTo('/audio/speech')).toEqual([])

  call.media.speak(await callerSpeech(question))
  await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 20_000)
  // The VAD cut one utterance out of the caller's audio and the STT got it; the LLM got its text.
  const [transcription] = models.requestsTo('/audio/transcriptions')
  expect(transcription.audio?.format.sampleRate).toBe(16_000)
  expect(transcription.audio!.pcm.length).toBeGreaterThan(16_000)
  expect(models.requestsTo('/chat/completions')[0].body.messages.at(-1)).toEqual({ role: 'user', content: question })
  fake.hangup(call.callId)

  const run = await untilWritten(t, agent, call.runId)
  expect(turnsOf(run)).toEqual([
    ['agent', GREETING],
    ['user', question],
    ['agent', 'Of course.'],
  ])
  expect(run.logs.session.end_reason).toBe('user_hangup')
  expect(run.initial_context.runtime_configuration).toMatchObject({ tts_provider: 'builtin', tts_model: 'flite' })
}, 60_000)

/** A provider connection on `baseUrl`, its uuid. */
async function connectionTo(baseUrl: string): Promise<string> {
  const response = await t.request('POST', '/api/v1/organizations/provider-connections', {
    body: { name: `Server ${crypto.randomUUID().slice(0, 8)}`, provider: 'openai', base_url: baseUrl },
  })
  expect(response.status, response.text).toBe(200)
  return response.body.uuid
}

/** An agent greeting with GREETING on a model configuration of its own (`sections`: its llm, stt, tts, realtime). */
async function agentOn(sections: Record<string, unknown>, configurations: Record<string, unknown> = {}) {
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: { name: `Binary ${crypto.randomUUID().slice(0, 8)}`, is_default: false, ...sections },
  })
  expect(configuration.status, configuration.text).toBe(200)
  return createVoiceAgent(t, {
    configurations: { model_configuration_uuid: configuration.body.uuid, ...configurations },
  })
}

/** The quietest 100 ms of `pcm` (at `rate`): the noise floor. */
function noiseFloor(pcm: Int16Array, rate: number): number {
  const window = rate / 10
  let quietest = Number.POSITIVE_INFINITY
  for (let at = 0; at + window <= pcm.length; at += window / 2)
    quietest = Math.min(quietest, rms(pcm.subarray(at, at + window)))
  return quietest
}

test('noise suppression on: RNNoise cleans the caller audio that streaming speech to text gets over its socket', async () => {
  realtime.reset()
  const uploadsBefore = models.requestsTo('/audio/transcriptions').length
  models.chat.queue(say('Of course.'))
  const fakeModels = await connectionTo(models.baseUrl)
  const agent = await agentOn(
    {
      llm: { provider_connection_uuid: fakeModels, settings: { model: 'fake-llm' } },
      stt: {
        provider_connection_uuid: await connectionTo(realtime.baseUrl),
        settings: { model: 'fake-stt', streaming: true },
      },
      tts: { provider_connection_uuid: fakeModels, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
    { noise_suppression: true },
  )
  const call = await placeCall(t, fake, agent)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 15_000)
  // A hissing line: a second of hiss (RNNoise learns it), the question over the hiss, hiss again.
  const speech = await callerSpeech('A table for two.')
  const hiss = noise(8000, 1500 + speech.length / 8, 1500)
  const noisy = hiss.map((sample, index) => Math.max(-32768, Math.min(32767, sample + (speech[index - 8000] ?? 0))))
  call.media.speak(noisy)
  await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 20_000)
  fake.hangup(call.callId)

  expect(realtime.connections.map((connection) => connection.path)).toContain('/v1/realtime?intent=transcription')
  expect(realtime.transcripts[0]).toStartWith('tone ')
  expect(models.requestsTo('/audio/transcriptions')).toHaveLength(uploadsBefore)
  // Without the suppressor every moment of the utterance carries the hiss; with it the pauses are near silence.
  const [utterance] = realtime.committed
  expect(utterance.length).toBeGreaterThan(24_000 / 2)
  expect(noiseFloor(utterance, 24_000)).toBeLessThan(rms(hiss) / 4)
  const run = await untilWritten(t, agent, call.runId)
  expect(turnsOf(run)[1]).toEqual(['user', realtime.transcripts[0]])
}, 60_000)

test('a realtime speech-to-speech model answers a call', async () => {
  realtime.reset()
  realtime.words = { 500: 'Hello there' }
  const agent = await agentOn({
    llm: { provider_connection_uuid: await connectionTo(models.baseUrl), settings: { model: 'fake-llm' } },
    realtime: {
      provider_connection_uuid: await connectionTo(realtime.baseUrl),
      settings: { model: 'fake-realtime', voice: 'verse' },
    },
  })
  const call = await placeCall(t, fake, agent)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 15_000)
  call.media.speak(sine(500, 8000, 600, 8000))
  await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 15_000)
  fake.hangup(call.callId)
  // The model's own audio (a tone) reached the line.
  expect(call.media.played.filter((frame) => rms(ulawToPcm16(frame.ulaw)) > 500).length).toBeGreaterThan(10)
  expect(realtime.connections[0].path).toBe('/v1/realtime?model=fake-realtime')
  const run = await untilWritten(t, agent, call.runId)
  expect(turnsOf(run)).toEqual([
    ['agent', GREETING],
    ['user', 'Hello there'],
    ['agent', 'You said: Hello there'],
  ])
}, 60_000)
