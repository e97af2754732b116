import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import { say } from '../support/fake-models'
import { startFakeRealtime, type FakeRealtime } from '../support/fake-realtime'
import { callerSpeech } from '../support/voice'
import { createVoiceAgent, marksProcessed, placeCall, untilWritten } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Streaming speech to text (`stt.settings.streaming: true`): a call on the fake Asterisk whose utterance is transcribed
 * over the fake realtime server's transcription socket (appended, committed, no upload); a server without the socket
 * (the fake model server refuses the upgrade) → the utterance is uploaded and answered; a socket that never answers the
 * commit → the upload path, here failing too, ends in the model-failure handling. Each fallback is warned on the run.
 */

const TIMEOUTS = { firstByteMs: 1_000, idleMs: 1_000, totalMs: 10_000 }
const SENTENCE = 'Can I book a table for two tonight?'
const FALLBACK_WARNING = 'Streaming speech recognition failed'

let app: AriVoiceApp
let realtime: FakeRealtime
beforeAll(async () => {
  app = await startAriVoiceApp({ allow_raw_dial_strings: true }, { modelTimeouts: TIMEOUTS })
  realtime = startFakeRealtime()
})
afterAll(async () => {
  realtime.stop()
  await app.stop()
})
beforeEach(() => {
  realtime.reset()
  app.models.reset()
})
afterEach(() => {
  for (const id of app.fake.liveChannelIds()) app.fake.hangup(id)
})

/** An agent whose STT streams to `sttBaseUrl`; LLM and TTS on the fake model server. */
async function agentStreamingTo(sttBaseUrl: string) {
  const { t, models } = app
  const connection = async (baseUrl: string) => {
    const response = await t.request('POST', '/api/v1/organizations/provider-connections', {
      body: { name: `Server ${crypto.randomUUID().slice(0, 8)}`, provider: 'openai', base_url: baseUrl },
    })
    expect(response.status, response.text).toBe(200)
    return response.body.uuid as string
  }
  const fake = await connection(models.baseUrl)
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: `Streaming ${crypto.randomUUID().slice(0, 8)}`,
      llm: { provider_connection_uuid: fake, settings: { model: 'fake-llm' } },
      stt: {
        provider_connection_uuid: await connection(sttBaseUrl),
        settings: { model: 'fake-stt', language: 'en', streaming: true },
      },
      tts: { provider_connection_uuid: fake, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
  expect(configuration.body.stt.settings.streaming).toBe(true)
  return createVoiceAgent(t, { configurations: { model_configuration_uuid: configuration.body.uuid } })
}

const userMessages = () =>
  app.models
    .requestsTo('/chat/completions')
    .flatMap((request) => request.body.messages.filter((message: any) => message.role === 'user'))
    .map((message: any) => message.content)

/** Places the call, waits for the greeting, and has the caller say a sentence. */
async function callAndSpeak(agent: { id: number; triggerPath: string }) {
  const call = await placeCall(app.t, app.fake, agent)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
  call.media.speak(await callerSpeech(SENTENCE))
  return call
}

describe('streaming speech to text', () => {
  test('the utterance is appended and committed on the transcription socket, never uploaded, and answered', async () => {
    app.models.chat.queue(say('Of course. Which time suits you?'))
    const agent = await agentStreamingTo(realtime.baseUrl)
    const call = await callAndSpeak(agent)
    await waitFor('the answer played', () => marksProcessed(call.media) >= 3, 15_000)
    // The fake transcribes by the dominant tone of what it was sent ("tone <Hz>").
    const [transcript] = realtime.transcripts
    expect(transcript).toStartWith('tone ')
    expect(userMessages()).toContain(transcript)
    expect(realtime.connections.map((connection) => connection.path)).toContain('/v1/realtime?intent=transcription')
    expect(realtime.connections.some((connection) => connection.path.includes('/audio/transcriptions'))).toBe(false)
    expect(app.models.requestsTo('/audio/transcriptions')).toHaveLength(0)
    expect(realtime.sessions[0]).toMatchObject({
      input_audio_format: 'pcm16',
      input_audio_transcription: { model: 'fake-stt', language: 'en' },
      turn_detection: null,
    })
    expect(realtime.events.some((event) => event.type === 'input_audio_buffer.commit')).toBe(true)
    // The sentence (more than a second of speech), at 24 kHz on the socket.
    expect(realtime.appendedSamples).toBeGreaterThan(24_000)
    app.fake.hangup(call.callId)
    const run = await untilWritten(app.t, agent, call.runId)
    expect(JSON.stringify(run.logs.transcript)).toContain(transcript)
    expect(JSON.stringify(run.logs.voice)).not.toContain(FALLBACK_WARNING)
  }, 40_000)

  test('a server without the socket: the utterance is uploaded, the call answers, the fallback is warned', async () => {
    app.models.transcription.handler = () => ({ text: SENTENCE })
    app.models.chat.queue(say('Of course. Which time suits you?'))
    const agent = await agentStreamingTo(app.models.baseUrl)
    const call = await callAndSpeak(agent)
    await waitFor('the answer played', () => marksProcessed(call.media) >= 3, 15_000)

    expect(app.models.requestsTo('/audio/transcriptions').length).toBeGreaterThan(0)
    expect(userMessages()).toContain(SENTENCE)
    app.fake.hangup(call.callId)
    const run = await untilWritten(app.t, agent, call.runId)
    expect(run.gathered_context.mapped_call_disposition).toBe('user_hangup')
    expect(JSON.stringify(run.logs.voice)).toContain(FALLBACK_WARNING)
  }, 40_000)

  test('a socket that never answers the commit: the upload path is taken, and its failure is the model-failure path', async () => {
    realtime.behaviour = 'silent'
    app.models.chat.queue(say('Of course. Which time suits you?'))
    const agent = await agentStreamingTo(realtime.baseUrl)
    const call = await callAndSpeak(agent)
    await waitFor('hung up by us', () => !app.fake.liveChannelIds().includes(call.callId), 20_000)

    expect(realtime.connections.map((connection) => connection.path)).toContain('/v1/realtime?intent=transcription')
    // The fallback upload went to the same server (which has no upload endpoint).
    expect(realtime.connections.map((connection) => connection.path)).toContain('/v1/audio/transcriptions')
    const run = await untilWritten(app.t, agent, call.runId)
    expect(run.gathered_context.mapped_call_disposition).toBe('model_error')
    expect(run.logs.voice.model_failures).toEqual([expect.objectContaining({ service: 'stt' })])
    expect(JSON.stringify(run.logs.voice)).toContain(FALLBACK_WARNING)
  }, 40_000)
})
