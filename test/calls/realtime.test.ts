import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { ulawToPcm16 } from '../../src/voice/g711'
import { rms, sine } from '../support/audio'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import { FAKE_REALTIME_USAGE, startFakeRealtime, type FakeRealtime } from '../support/fake-realtime'
import { marksProcessed, placeCall, untilWritten, type PlacedCall } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Calls on a realtime speech-to-speech model (a model configuration's `realtime` section), through the fake Asterisk's
 * media leg and the fake realtime server: the caller's audio reaches the model, the model's audio reaches the line,
 * its function call moves the graph (the next node's prompt is sent with session.update), a barge-in flushes the line
 * and truncates the model's item, and the transcript, usage and recording land on the run. A hostile server (silent,
 * flooding, a 100 MB frame, closing mid-call) ends the call with the model-failure line and `model_error`.
 */

const GREETING = 'Hello, this is Ava from Acme.'
const TIMEOUTS = { firstByteMs: 1_500, idleMs: 1_500, totalMs: 10_000 }

let app: AriVoiceApp
let realtime: FakeRealtime
let configurationUuid: string
beforeAll(async () => {
  app = await startAriVoiceApp({ allow_raw_dial_strings: true }, { modelTimeouts: TIMEOUTS })
  realtime = startFakeRealtime()
  const { t } = app
  const connection = async (baseUrl: string, name: string) => {
    const response = await t.request('POST', '/api/v1/organizations/provider-connections', {
      body: { name, provider: 'openai', base_url: baseUrl, api_key: 'sk-realtime-secret' },
    })
    expect(response.status, response.text).toBe(200)
    return response.body.uuid as string
  }
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: 'Realtime',
      is_default: false,
      llm: { provider_connection_uuid: await connection(app.models.baseUrl, 'Text'), settings: { model: 'fake-llm' } },
      realtime: {
        provider_connection_uuid: await connection(realtime.baseUrl, 'Speech to speech'),
        settings: { model: 'fake-realtime', voice: 'verse', turn_detection: { silence_duration_ms: 300 } },
      },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
  expect(configuration.body.realtime.settings).toMatchObject({ model: 'fake-realtime', voice: 'verse' })
  configurationUuid = configuration.body.uuid
})
afterAll(async () => {
  realtime.stop()
  await app.stop()
})
beforeEach(() => realtime.reset())
afterEach(() => {
  for (const id of app.fake.liveChannelIds()) app.fake.hangup(id)
})

/** Start (greets) → Booking over the edge "Book" → End. */
async function createRealtimeAgent(): Promise<{ id: number; triggerPath: string }> {
  const triggerPath = crypto.randomUUID()
  const definition = {
    nodes: [
      {
        id: '1',
        type: 'startCall',
        position: { x: 0, y: 0 },
        data: { name: 'Start', greeting: GREETING, prompt: 'START PROMPT: find out what the caller wants.' },
      },
      { id: '2', type: 'agentNode', position: { x: 200, y: 0 }, data: { name: 'Booking', prompt: 'BOOKING PROMPT.' } },
      { id: '3', type: 'endCall', position: { x: 400, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
      { id: '4', type: 'trigger', position: { x: 0, y: 200 }, data: { name: 'API', trigger_path: triggerPath } },
    ],
    edges: [
      { id: '1-2', source: '1', target: '2', data: { label: 'Book', condition: 'The caller wants a table' } },
      { id: '2-3', source: '2', target: '3', data: { label: 'Done', condition: 'The booking is done' } },
    ],
  }
  const response = await app.t.request('POST', '/api/v1/workflow/create/definition', {
    body: {
      name: `Realtime ${triggerPath.slice(0, 6)}`,
      workflow_definition: definition,
      workflow_configurations: { model_configuration_uuid: configurationUuid },
    },
  })
  expect(response.status, response.text).toBe(200)
  return { id: response.body.id, triggerPath }
}

const loudFrames = (call: PlacedCall, from = 0) =>
  call.media.played.slice(from).filter((frame) => rms(ulawToPcm16(frame.ulaw)) > 500).length

/** The caller "says" a sentence: a tone the fake transcribes as the word list maps it. */
const sayTone = (call: PlacedCall, hz: number, ms = 600) => call.media.speak(sine(hz, 8000, ms, 8000))

const responseCreates = () => realtime.events.filter((event) => event.type === 'response.create')

describe('a call on a realtime model', () => {
  test('audio both ways, a function call moves the graph, barge-in flushes, transcript and usage on the run', async () => {
    const { t, fake } = app
    realtime.words = { 500: 'I want to book a table', 700: 'What times do you have', 1000: 'Wait' }
    const agent = await createRealtimeAgent()
    const call = await placeCall(t, fake, agent)
    // The greeting is read out by the model, and heard on the line.
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1 && loudFrames(call) > 10, 10_000)
    expect(responseCreates()[0].response.instructions).toContain(GREETING)
    expect(responseCreates()[0].response.tool_choice).toBe('none')
    expect(realtime.connections[0].path).toBe('/v1/realtime?model=fake-realtime')
    expect(realtime.connections[0].authorization).toBe('Bearer sk-realtime-secret')
    expect(realtime.sessions[0]).toMatchObject({
      voice: 'verse',
      input_audio_format: 'pcm16',
      turn_detection: { type: 'server_vad', silence_duration_ms: 300, create_response: false },
    })

    // The caller asks; the model answers and calls the transition function.
    realtime.replies = [{ text: 'Let me book that.', call: {} }]
    sayTone(call, 500)
    await waitFor('the model called the transition', () => realtime.outputs.length === 1, 10_000)
    expect(realtime.appendedSamples).toBeGreaterThan(24_000 * 0.5)
    expect(realtime.outputs[0]).toMatchObject({ call_id: 'call_2' })
    expect(JSON.parse(realtime.outputs[0].output)).toEqual({ status: 'done' })
    await waitFor('the next node answered', () => responseCreates().length >= 3, 10_000)
    const booking = realtime.sessions.find((session) => session.instructions?.includes('BOOKING PROMPT'))
    expect(booking, JSON.stringify(realtime.sessions)).toBeDefined()
    expect(booking!.instructions).not.toContain('START PROMPT')
    expect(booking!.tools.map((tool: { name: string }) => tool.name)).toEqual(['done'])
    await waitFor('the answer heard', () => marksProcessed(call.media) >= 3, 10_000)

    // A long answer, cut by the caller: the line is flushed and the model's item truncated at what was heard.
    realtime.replies = [{ text: 'We have tables at seven, eight and nine tonight.', audioMs: 8_000 }]
    const flushesBefore = call.media.flushes.length
    sayTone(call, 700)
    await waitFor(
      'the long answer playing',
      () => realtime.transcripts.length === 2 && call.media.queuedFrames() > 50,
      10_000,
    )
    sayTone(call, 1000)
    await waitFor('the barge-in', () => realtime.truncates.length === 1, 10_000)
    expect(call.media.flushes.length).toBeGreaterThan(flushesBefore)
    expect(realtime.truncates[0].item_id).toBe('item_4')
    expect(realtime.truncates[0].audio_end_ms).toBeLessThan(8_000)

    await waitFor('the answer to the interruption', () => responseCreates().length >= 5, 10_000)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    const turns = run.logs.transcript.map((turn: Record<string, unknown>) => [turn.role, turn.text, turn.node_id])
    expect(turns.slice(0, 4)).toEqual([
      ['agent', GREETING, '1'],
      ['user', 'I want to book a table', '1'],
      ['agent', 'Let me book that.', '1'],
      ['agent', 'You said: I want to book a table', '2'],
    ])
    const long = run.logs.transcript.find((turn: Record<string, unknown>) => String(turn.text).startsWith('We have'))
    expect(long.interrupted).toBe(true)
    expect(turns).toContainEqual(['user', 'Wait', '2'])
    const usage = run.usage_info.llm['openai|||fake-realtime']
    const responses = responseCreates().length
    expect(usage.total_tokens).toBe(FAKE_REALTIME_USAGE.total_tokens * responses)
    expect(usage.audio_prompt_tokens).toBe(6 * responses)
    expect(usage.audio_completion_tokens).toBe(15 * responses)
    expect(run.initial_context.runtime_configuration).toMatchObject({
      realtime_provider: 'openai',
      realtime_model: 'fake-realtime',
      realtime_voice: 'verse',
    })
    expect(run.recording_url).toBeTruthy()
    expect(JSON.stringify(run)).not.toContain('sk-realtime-secret')
  }, 60_000)

  test('the newer event names (response.output_audio.*) are understood as well', async () => {
    const { t, fake } = app
    realtime.eventNames = 'ga'
    realtime.words = { 500: 'Hello there' }
    const agent = await createRealtimeAgent()
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1 && loudFrames(call) > 10, 10_000)
    sayTone(call, 500)
    await waitFor('the answer heard', () => marksProcessed(call.media) >= 2, 10_000)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    expect(run.logs.transcript.map((turn: Record<string, unknown>) => turn.text)).toEqual([
      GREETING,
      'Hello there',
      'You said: Hello there',
    ])
  }, 40_000)
})

describe.each(['silent', 'flood', 'huge', 'close'] as const)('a hostile realtime server (%s)', (behaviour) => {
  test('the caller hears the model-failure line and the run ends with model_error', async () => {
    const { t, fake } = app
    realtime.behaviour = behaviour
    realtime.words = { 500: 'Hello there' }
    const agent = await createRealtimeAgent()
    const call = await placeCall(t, fake, agent)
    // `close` answers the greeting, then closes when asked for the reply.
    if (behaviour === 'close') {
      await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
      sayTone(call, 500)
    }
    const before = behaviour === 'close' ? call.media.played.length : 0
    await waitFor('hung up by us', () => !fake.liveChannelIds().includes(call.callId), 20_000)
    const run = await untilWritten(t, agent, call.runId)
    // The built-in voice's line (about 3 s): far more than any audio the server could have left.
    expect(loudFrames(call, before), JSON.stringify(run.logs)).toBeGreaterThan(50)
    expect(run.gathered_context.mapped_call_disposition).toBe('model_error')
    expect(run.logs.voice.end_reason).toBe('model_error')
    // The fake runs on this machine, whose failures are not told apart (docs/security.md).
    expect(run.logs.voice.model_failures[0]).toMatchObject({ service: 'llm', kind: 'not_told' })
    expect(JSON.stringify(run.logs)).not.toContain('code 1011')
  }, 60_000)
})
