import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { decodeWav } from '../../src/lib/wav'
import { ulawToPcm16 } from '../../src/voice/g711'
import { loudestWindow, rms, toneAmplitude } from '../support/audio'
import type { TestApp } from '../support/app'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import type { FakeAri } from '../support/fake-ari'
import type { FakeMediaChannel } from '../support/fake-ari-media'
import { callTool, say, type FakeModels } from '../support/fake-models'
import { addPhoneNumber } from '../support/telephony'
import { answeringMachine, callerSpeech, concatPcm, silence8k } from '../support/voice'
import {
  createVoiceAgent,
  FOUR_SENTENCE_REPLY,
  GREETING,
  marksProcessed,
  placeCall,
  runDetail,
  turnsOf,
  untilWritten,
} from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Voice calls end to end, black-box where there is HTTP: agents, model servers and the ARI configuration are set up
 * through the API; calls start through the public trigger (outbound) or the fake Asterisk's dialplan (inbound);
 * the fake Asterisk replays recorded ARI traffic and serves the chan_websocket media endpoint; STT, LLM and TTS are the
 * fake OpenAI-compatible server; the run is read back through the API.
 */

let t: TestApp
let fake: FakeAri
let models: FakeModels
let configurationId: number
let app: AriVoiceApp

beforeAll(async () => {
  app = await startAriVoiceApp({ allow_raw_dial_strings: true })
  ;({ t, fake, models, configurationId } = app)
})
afterAll(() => app.stop())
beforeEach(() => {
  models.reset()
  models.transcription.handler = () => ({ text: '' })
})
/** A test that failed half-way leaves no call up for the next one. */
afterEach(() => {
  for (const id of fake.liveChannelIds()) fake.hangup(id)
})

const speechInputs = () => models.requestsTo('/audio/speech').map((request) => request.body.input)
const hungUpByUs = (callId: string) =>
  fake.requests.some((request) => request.method === 'DELETE' && request.path === `/ari/channels/${callId}`)

describe('outbound voice calls through ARI', () => {
  test('greeting heard, an utterance transcribed and answered, hang-up: the run has transcript, usage, response times and the recordings', async () => {
    t.ctx.sqlite.run('CREATE TEMP TABLE IF NOT EXISTS final_writes (run_id INTEGER)')
    t.ctx.sqlite.run(`CREATE TEMP TRIGGER IF NOT EXISTS count_final_writes AFTER UPDATE OF state, completed_at, usage_info, cost_info
      ON main.workflow_runs WHEN new.state = 'completed' BEGIN INSERT INTO final_writes VALUES (new.id); END`)
    const agent = await createVoiceAgent(t)
    models.transcription.queue({ text: 'Can I book a table for two tonight?' })
    models.chat.queue(say('Of course. Which time suits you?'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    expect(speechInputs()).toEqual([GREETING])
    expect(toneAmplitude(ulawToPcm16(call.media.played[5].ulaw), 440, 8000)).toBeGreaterThan(1000)

    call.media.speak(await callerSpeech('Can I book a table for two tonight?'))
    await waitFor('the answer played', () => marksProcessed(call.media) >= 3, 10_000)
    expect(speechInputs()).toEqual([GREETING, 'Of course.', 'Which time suits you?'])
    expect(models.requestsTo('/audio/transcriptions')[0].audio?.format.sampleRate).toBe(16_000)
    fake.hangup(call.callId)

    const run = await untilWritten(t, agent, call.runId)
    expect(turnsOf(run)).toEqual([
      ['agent', GREETING],
      ['user', 'Can I book a table for two tonight?'],
      ['agent', 'Of course. Which time suits you?'],
    ])
    const [, userTurn, answer] = run.logs.transcript
    expect(userTurn.start_ms).toBeGreaterThan(0)
    expect(userTurn.end_ms).toBeLessThan(answer.start_ms)
    expect(run.logs.telephony).toMatchObject({ outcome: 'completed', hangup_cause: 16 })
    expect(run.logs.session.end_reason).toBe('user_hangup')
    // the call's end and the conversation's results reach the run in one final write
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM final_writes WHERE run_id = ?').get(call.runId)).toEqual({
      n: 1,
    })
    expect(run.logs.voice.turns).toHaveLength(1)
    expect(run.logs.voice.turns[0].response_ms).toBeGreaterThanOrEqual(0)
    // an outbound call: answering-machine detection held the first answer for as long as it was undecided
    expect(run.logs.voice.first_answer_held_ms).toEqual(expect.any(Number))
    expect(Object.keys(run.usage_info.stt)).toEqual(['openai|||fake-stt'])
    expect(Object.values(run.usage_info.tts)).toEqual([
      GREETING.length + 'Of course.'.length + 'Which time suits you?'.length,
    ])

    // recordings: stored, linked and downloadable without a key; stereo left caller / right agent, and one track each
    expect(run.recording_url).toBe(`recordings/1/${call.runId}.wav`)
    expect(run.user_recording_url).toBe(`recordings/1/${call.runId}/user.wav`)
    expect(run.bot_recording_url).toBe(`recordings/1/${call.runId}/bot.wav`)
    const download = await t.request('GET', new URL(run.bot_recording_public_url).pathname, { key: null })
    expect(download.status).toBe(200)
    const stereo = decodeWav(await (await t.ctx.objects.get(run.recording_url))!.bytes())
    expect(stereo.format).toMatchObject({ channels: 2, sampleRate: 8000 })
    const left = stereo.pcm.filter((_, index) => index % 2 === 0)
    const right = stereo.pcm.filter((_, index) => index % 2 === 1)
    expect(rms(left)).toBeGreaterThan(100)
    expect(toneAmplitude(loudestWindow(right, 800), 440, 8000)).toBeGreaterThan(4000)
    const user = decodeWav(await (await t.ctx.objects.get(run.user_recording_url))!.bytes())
    expect(user.format.channels).toBe(1)
    expect(user.pcm).toEqual(left)
    // the PBX did not record anything: Ringbase did
    expect(fake.requests.some((request) => request.path.endsWith('/record'))).toBe(false)
  }, 30_000)

  test('barge-in: caller speech over the reply flushes it within one frame; the transcript keeps what was heard', async () => {
    const agent = await createVoiceAgent(t)
    const reply = FOUR_SENTENCE_REPLY
    models.transcription.queue({ text: 'Tables please.' }, { text: 'Seven works.' })
    models.chat.queue(say(reply.join(' ')), say('Great.'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    call.media.speak(await callerSpeech('Tables please.'))
    await waitFor('the first sentence of the reply played', () => marksProcessed(call.media) >= 2, 10_000)
    call.media.speak(await callerSpeech('Seven works.'))
    await waitFor('a flush', () => call.media.flushes.length === 1, 5_000)
    const flushedAt = call.media.flushes[0]
    await waitFor('the answer to the barge-in', () => speechInputs().includes('Great.'), 10_000)
    const replayFrames = call.media.played.filter(({ atMs }) => atMs > flushedAt && atMs < flushedAt + 300)
    expect(replayFrames.length).toBeLessThanOrEqual(1)
    fake.hangup(call.callId)

    const run = await untilWritten(t, agent, call.runId)
    const cut = run.logs.transcript[2]
    expect(cut).toMatchObject({ role: 'agent', interrupted: true })
    expect(reply.join(' ').startsWith(cut.text)).toBe(true)
    expect(cut.text.length).toBeLessThan(reply.join(' ').length)
    expect(turnsOf(run).slice(3)).toEqual([
      ['user', 'Seven works.'],
      ['agent', 'Great.'],
    ])
  }, 30_000)

  test('silence: a reprompt, then the goodbye is played and the call hung up (user_idle_max_duration_exceeded)', async () => {
    const agent = await createVoiceAgent(t, {
      configurations: { max_user_idle_timeout_seconds: 0.3, user_idle_reprompts: 1 },
    })
    models.chat.queue(say('Are you still there?'), say('Goodbye for now.'))
    const call = await placeCall(t, fake, agent)
    const run = await untilWritten(t, agent, call.runId)
    expect(speechInputs()).toEqual([GREETING, 'Are you still there?', 'Goodbye for now.'])
    expect(marksProcessed(call.media)).toBe(3)
    expect(hungUpByUs(call.callId)).toBe(true)
    expect(run.logs.session.end_reason).toBe('user_idle_max_duration_exceeded')
    expect(run.gathered_context.mapped_call_disposition).toBe('user_idle_max_duration_exceeded')
  }, 30_000)

  test("DTMF keys reach the conversation as the caller's turn", async () => {
    const agent = await createVoiceAgent(t)
    models.chat.queue(say('Thanks, account found.'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    for (const digit of ['1', '2', '#']) fake.dtmf(call.callId, digit)
    await waitFor('the answer', () => speechInputs().includes('Thanks, account found.'), 5_000)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    expect(turnsOf(run)).toEqual([
      ['agent', GREETING],
      ['user', 'DTMF: 12#'],
      ['agent', 'Thanks, account found.'],
    ])
  }, 30_000)

  test("an answering machine: the outcome is voicemail (retry policy), the workflow's message is left after the beep, then the call is hung up", async () => {
    const agent = await createVoiceAgent(t, {
      configurations: { voicemail_detection: { message: 'Hi {{first_name}}, please call Acme back.' } },
    })
    const call = await placeCall(t, fake, agent, { first_name: 'Jordan' })
    call.media.speak(await answeringMachine())
    const run = await untilWritten(t, agent, call.runId)
    expect(run.logs.telephony.outcome).toBe('voicemail')
    expect(run.gathered_context.mapped_call_disposition).toBe('voicemail_detected')
    expect(run.logs.voice.voicemail).toMatchObject({ message_left: true })
    expect(speechInputs().at(-1)).toBe('Hi Jordan, please call Acme back.')
    expect(hungUpByUs(call.callId)).toBe(true)
  }, 30_000)

  test("the agent's turn settings: its stop window joins two sentences a 1.2 s pause apart; turn_analyzer is warned about; no detection, no hold", async () => {
    const agent = await createVoiceAgent(t, {
      configurations: {
        user_turn_stop_timeout: 1.5,
        turn_stop_strategy: 'turn_analyzer',
        voicemail_detection: { enabled: false },
      },
    })
    models.transcription.queue({ text: 'Hello? Who is this?' })
    models.chat.queue(say('This is Ava from Acme.'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    call.media.speak(concatPcm([await callerSpeech('Hello?'), silence8k(800), await callerSpeech('Who is this?')]))
    await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 10_000)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    expect(models.requestsTo('/audio/transcriptions')).toHaveLength(1)
    expect(turnsOf(run)).toEqual([
      ['agent', GREETING],
      ['user', 'Hello? Who is this?'],
      ['agent', 'This is Ava from Acme.'],
    ])
    expect(run.logs.voice.warnings).toEqual([expect.stringContaining('turn_analyzer')])
    expect(run.logs.voice).not.toHaveProperty('first_answer_held_ms')
  }, 30_000)

  test('the media socket dropping mid-call is logged on the run and the call is hung up', async () => {
    const agent = await createVoiceAgent(t)
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    call.media.drop()
    const run = await untilWritten(t, agent, call.runId)
    expect(hungUpByUs(call.callId)).toBe(true)
    expect(run.logs.telephony.provider_status).toBe('media_lost')
    expect(run.logs.voice.media_lost).toBeDefined()
    expect(run.logs.session.end_reason).toBe('unexpected_error')
  }, 30_000)

  test('a transfer_call tool: its message is said, the destination joins the caller, the media leg goes; the call stays up until the destination hangs up', async () => {
    const tool = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Front desk',
        definition: {
          type: 'transfer_call',
          config: {
            destination: '{{desk_line}}',
            timeout: 20,
            messageType: 'custom',
            customMessage: 'Putting you through.',
          },
        },
      },
    })
    expect(tool.status, tool.text).toBe(200)
    const agent = await createVoiceAgent(t, { start: { tool_uuids: [tool.body.tool_uuid] } })
    models.chat.queue(callTool('front_desk', {}))
    const call = await placeCall(t, fake, agent, { desk_line: 'Local/102@test' })
    const destinationId = `${call.callId}-transfer`
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    for (const digit of ['0', '#']) fake.dtmf(call.callId, digit)

    await waitFor(
      "the destination in the caller's bridge",
      () => fake.bridgeChannels(`ringbase-${call.callId}`)?.includes(destinationId) === true,
      10_000,
    )
    await waitFor('the media leg hung up', () => !fake.liveChannelIds().includes(`${call.callId}-media`), 5_000)
    expect(fake.bridgeChannels(`ringbase-${call.callId}`)).toEqual([call.callId, destinationId])
    expect(speechInputs()).toEqual([GREETING, 'Putting you through.'])
    // the conversation is over (its log written) and the caller is still with the destination
    await waitFor(
      'the conversation over',
      async () => (await runDetail(t, agent, call.runId)).logs.voice !== undefined,
      10_000,
    )
    await Bun.sleep(300) // time for a wrong hang-up after the conversation to reach the fake
    expect(fake.liveChannelIds()).toContain(call.callId)
    expect(hungUpByUs(call.callId)).toBe(false)
    expect((await runDetail(t, agent, call.runId)).is_completed).toBe(false)

    fake.hangup(destinationId)
    const run = await untilWritten(t, agent, call.runId)
    expect(hungUpByUs(call.callId)).toBe(true)
    expect(run.gathered_context).toMatchObject({
      call_disposition: 'call_transferred',
      transfer_destination: 'Local/102@test',
    })
    expect(run.logs.session.end_reason).toBe('call_transferred')
    expect(run.logs.telephony).toMatchObject({ outcome: 'completed', transfer: { destination: 'Local/102@test' } })
    expect(run.logs.telephony.provider_status).toBeUndefined()
    expect(run.logs.voice.media_lost).toBeUndefined()
    expect(run.logs.tool_calls).toMatchObject([
      { function_name: 'front_desk', type: 'transfer_call', status: 'success' },
    ])
    // Ringbase's recording covers the conversation with the agent, up to the transfer
    expect(run.recording_url).toBe(`recordings/1/${call.runId}.wav`)
  }, 30_000)
})

describe("the call's time limit", () => {
  test("the agent's max call duration ends the conversation and hangs the call up (calls/time-limit.ts)", async () => {
    const agent = await createVoiceAgent(t, { configurations: { max_call_duration_seconds: 1 } })
    const call = await placeCall(t, fake, agent)
    const run = await untilWritten(t, agent, call.runId)
    expect(hungUpByUs(call.callId)).toBe(true)
    expect(run.logs.telephony).toMatchObject({ outcome: 'completed', provider_status: 'max_call_duration' })
    expect(run.logs.session.end_reason).toBe('call_duration_exceeded')
    expect(run.gathered_context.mapped_call_disposition).toBe('call_duration_exceeded')
  }, 30_000)
})

describe('inbound voice calls through ARI', () => {
  test('a call into our Stasis app is routed by the number dialled to its inbound agent, answered, and talked to', async () => {
    const agent = await createVoiceAgent(t)
    await addPhoneNumber(t, configurationId, { address: '+15551230000', inbound_workflow_id: agent.id })
    const channelId = fake.inboundCall({ exten: '+15551230000', callerNumber: '+15559870000' })
    let media: FakeMediaChannel | undefined
    await waitFor('the media leg', () => (media = fake.mediaOf(channelId)) !== undefined, 5_000)
    await waitFor('the greeting played', () => marksProcessed(media!) >= 1, 5_000)
    const runId = t.ctx.sqlite
      .query<{ id: number }, [string]>('SELECT id FROM workflow_runs WHERE call_id = ?')
      .get(channelId)!.id
    fake.hangup(channelId)
    const run = await untilWritten(t, agent, runId)
    expect(run).toMatchObject({ call_type: 'inbound', name: 'ARI Inbound +15559870000' })
    expect(run.initial_context).toMatchObject({
      caller_number: '+15559870000',
      called_number: '+15551230000',
      direction: 'inbound',
      provider: 'ari',
      telephony_configuration_id: configurationId,
    })
    expect(turnsOf(run)).toEqual([['agent', GREETING]])
    expect(run.logs.telephony.outcome).toBe('completed')
  }, 30_000)

  test('a number nobody has, or no free call slot: the call is hung up and no run is created', async () => {
    const agent = await createVoiceAgent(t)
    await addPhoneNumber(t, configurationId, { address: '+15551231111', inbound_workflow_id: agent.id })
    const runsBefore = t.ctx.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM workflow_runs').get()!.n
    const unknown = fake.inboundCall({ exten: '+15550000000' })
    await waitFor('hung up', () => !fake.liveChannelIds().includes(unknown))

    t.ctx.sqlite.run('UPDATE organizations SET concurrent_call_limit = 0')
    let busy = ''
    try {
      busy = fake.inboundCall({ exten: '+15551231111' })
      await waitFor('hung up', () => !fake.liveChannelIds().includes(busy))
    } finally {
      t.ctx.sqlite.run('UPDATE organizations SET concurrent_call_limit = 10')
    }
    expect(t.ctx.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM workflow_runs').get()!.n).toBe(runsBefore)
    const answered = fake.requests.filter((request) => request.path.endsWith('/answer')).map((request) => request.path)
    expect(answered.some((path) => path.includes(unknown) || path.includes(busy))).toBe(false)
  })
})
