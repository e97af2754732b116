import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import { say } from '../support/fake-models'
import { startFakeRealtime, type FakeRealtime, type FakeRealtimeBehaviour } from '../support/fake-realtime'
import { callerSpeech } from '../support/voice'
import { createVoiceAgent, marksProcessed, placeCall, turnsOf, untilWritten } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Streaming speech to text (`stt.settings.streaming: true`): calls on the fake Asterisk whose caller audio goes to the
 * fake realtime server's transcription socket while the caller speaks (one socket for the whole call, committed at each
 * end of utterance, never uploaded); a speculation dropped because the caller went on loses and repeats no text; a
 * socket that drops is opened again once (the utterance it held is uploaded), one that cannot be reopened leaves the rest
 * of the call to uploads; a server without the socket (the fake model server refuses the upgrade) → uploads; a socket
 * that never answers the commit → the upload path, here failing too, ends in the model-failure handling.
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
async function agentStreamingTo(
  sttBaseUrl: string,
  agentConfigurations: Record<string, unknown> = {},
  streaming: true | 'vllm' = true,
) {
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
        settings: { model: 'fake-stt', language: 'en', streaming },
      },
      tts: { provider_connection_uuid: fake, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
  expect(configuration.body.stt.settings.streaming).toBe(streaming)
  return createVoiceAgent(t, {
    configurations: { model_configuration_uuid: configuration.body.uuid, ...agentConfigurations },
  })
}

const userMessages = () =>
  app.models
    .requestsTo('/chat/completions')
    .flatMap((request) => request.body.messages.filter((message: any) => message.role === 'user'))
    .map((message: any) => message.content)

const transcriptionSockets = () =>
  realtime.connections.filter((connection) => connection.path === '/v1/realtime?intent=transcription').length
const commits = () => realtime.events.filter((event) => event.type === 'input_audio_buffer.commit').length
const uploads = () => realtime.connections.filter((connection) => connection.path === '/v1/audio/transcriptions').length

/** What each LLM request answered: its last user message. */
const lastUserMessages = () =>
  app.models
    .requestsTo('/chat/completions')
    .map((request) => request.body.messages.filter((message: any) => message.role === 'user').at(-1)?.content)

/** Places the call, waits for the greeting, and has the caller say a sentence. */
async function callAndSpeak(agent: { id: number; triggerPath: string }) {
  const call = await placeCall(app.t, app.fake, agent)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
  call.media.speak(await callerSpeech(SENTENCE))
  return call
}

/** Hangs up; the run, read back, never fell back to uploads. */
async function hangUpStillStreaming(agent: { id: number }, call: { callId: string; runId: number }) {
  app.fake.hangup(call.callId)
  const run = await untilWritten(app.t, agent, call.runId)
  expect(JSON.stringify(run.logs.voice)).not.toContain(FALLBACK_WARNING)
  return run
}

/** A call of two turns on a fake that behaves as `behaviour`, its uploads answering SENTENCE. */
async function twoTurnsWith(behaviour: FakeRealtimeBehaviour) {
  realtime.behaviour = behaviour
  realtime.uploadText = SENTENCE
  app.models.chat.queue(say('Of course. Which time suits you?'), say('Eight is fine.'))
  const agent = await agentStreamingTo(realtime.baseUrl)
  const call = await callAndSpeak(agent)
  await waitFor('the first answer played', () => marksProcessed(call.media) >= 3, 15_000)
  const firstTurns = lastUserMessages()
  call.media.speak(await callerSpeech('For two people at eight.'))
  await waitFor('the second answer played', () => marksProcessed(call.media) >= 4, 15_000)
  return { agent, call, firstTurns }
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

  test("the caller's audio reaches the socket while they speak; one socket for a call of several turns", async () => {
    app.models.chat.queue(say('Of course. Which time suits you?'), say('Eight is fine.'))
    const agent = await agentStreamingTo(realtime.baseUrl)
    const call = await placeCall(app.t, app.fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
    call.media.speak(await callerSpeech(SENTENCE))
    // Half a second of the sentence (of two) is on the socket while the caller is still saying it: nothing committed yet.
    await waitFor('audio appended', () => realtime.appendedSamples >= 12_000, 10_000)
    expect(call.media.callerSpeaking()).toBe(true)
    expect(commits()).toBe(0)
    await waitFor('the first answer played', () => marksProcessed(call.media) >= 3, 15_000)
    call.media.speak(await callerSpeech('For two people at eight.'))
    await waitFor('the second answer played', () => marksProcessed(call.media) >= 4, 15_000)

    expect(transcriptionSockets()).toBe(1)
    expect(realtime.sessions).toHaveLength(1)
    // Each turn is the text of its commits: every transcript once, in order.
    expect(lastUserMessages()).toHaveLength(2)
    expect(lastUserMessages().join(' ')).toBe(realtime.transcripts.join(' '))
    expect(uploads()).toBe(0)
    await hangUpStillStreaming(agent, call)
  }, 40_000)

  test('a speculation dropped because the caller went on: the turn has the text of every part, once', async () => {
    // A long stop window: the caller goes on after the pause's commit, well inside it.
    const agent = await agentStreamingTo(realtime.baseUrl, { user_turn_stop_timeout: 3 })
    app.models.chat.handler = (request) =>
      say(`Heard: ${request.body.messages.filter((message: any) => message.role === 'user').at(-1)?.content}`)
    const call = await placeCall(app.t, app.fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
    call.media.speak(await callerSpeech('I would like to book, um'))
    await waitFor(
      'the pause committed and a reply prepared',
      () => commits() >= 1 && app.models.requestsTo('/chat/completions').length >= 1,
      10_000,
    )
    const committedAtPause = commits()
    expect(committedAtPause).toBeGreaterThanOrEqual(1)
    call.media.speak(await callerSpeech('a table for two tonight.'))
    await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 20_000)

    // Each committed segment was transcribed once, and the turn is all of them in order.
    expect(commits()).toBe(committedAtPause + 1)
    expect(realtime.transcripts).toHaveLength(commits())
    const turn = realtime.transcripts.join(' ')
    expect(lastUserMessages().at(-1)).toBe(turn)
    expect(uploads()).toBe(0)
    const run = await hangUpStillStreaming(agent, call)
    expect(turnsOf(run).filter(([role]: string[]) => role === 'user')).toEqual([['user', turn]])
    expect(run.logs.voice.speculation.llm_requests_dropped).toBeGreaterThanOrEqual(1)
  }, 40_000)

  test("vLLM's dialect (`streaming: 'vllm'`): one socket at /v1/realtime, 16 kHz, each segment started, ended and answered in turn", async () => {
    const agent = await agentStreamingTo(realtime.baseUrl, { user_turn_stop_timeout: 3 }, 'vllm')
    app.models.chat.handler = (request) =>
      say(`Heard: ${request.body.messages.filter((message: any) => message.role === 'user').at(-1)?.content}`)
    const call = await placeCall(app.t, app.fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
    // The caller goes on right after the pause's segment ended, while its text is still being made: the second
    // segment (its start, its audio) must wait for that text, or vLLM would ignore its start and discard its audio.
    realtime.vllmDoneDelayMs = 600
    const rest = await callerSpeech('a table for two tonight.')
    call.media.speak(await callerSpeech('I would like to book, um'))
    await waitFor('a segment ended', () => realtime.events.some((event) => event.final === true), 10_000)
    call.media.speak(rest)
    await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 20_000)

    expect(realtime.connections.filter((connection) => connection.path.startsWith('/v1/realtime'))).toEqual([
      expect.objectContaining({ path: '/v1/realtime' }),
    ])
    expect(realtime.sessions).toEqual([{ model: 'fake-stt' }])
    expect(realtime.ignoredCommits).toBe(0)
    const finals = realtime.events.filter((event) => event.type === 'input_audio_buffer.commit' && event.final)
    expect(finals.length).toBeGreaterThanOrEqual(2)
    expect(realtime.transcripts).toHaveLength(finals.length)
    for (const transcript of realtime.transcripts) expect(transcript).toMatch(/^tone \d+$/)
    expect(lastUserMessages().at(-1)).toBe(realtime.transcripts.join(' '))
    expect(uploads()).toBe(0)
    await hangUpStillStreaming(agent, call)
  }, 40_000)

  test('the socket dropping mid-call is opened again once: the utterance it held is uploaded, the next streamed', async () => {
    const { agent, call, firstTurns } = await twoTurnsWith('drop_once')
    expect(firstTurns).toEqual([SENTENCE])
    expect(transcriptionSockets()).toBe(2)
    expect(uploads()).toBe(1)
    expect(lastUserMessages()).toEqual([SENTENCE, realtime.transcripts.at(-1)])
    expect(realtime.transcripts.at(-1)).toStartWith('tone ')
    app.fake.hangup(call.callId)
    const run = await untilWritten(app.t, agent, call.runId)
    expect(run.gathered_context.mapped_call_disposition).toBe('user_hangup')
  }, 40_000)

  test('a socket that drops and cannot be opened again: the rest of the call uploads and answers, the fallback warned', async () => {
    const { agent, call } = await twoTurnsWith('gone')
    expect(lastUserMessages()).toEqual([SENTENCE, SENTENCE])
    // The socket, and the one attempt to open it again (refused).
    expect(transcriptionSockets()).toBe(2)
    expect(uploads()).toBe(2)
    app.fake.hangup(call.callId)
    const run = await untilWritten(app.t, agent, call.runId)
    expect(run.gathered_context.mapped_call_disposition).toBe('user_hangup')
    expect(JSON.stringify(run.logs.voice)).toContain(FALLBACK_WARNING)
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

  test('a socket that never answers the commit: opened again once, the upload path taken, its failure the model-failure path', async () => {
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
    expect(transcriptionSockets()).toBe(2)
  }, 40_000)
})
