import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { AgentDefinition as WorkflowDefinition } from '../../src/definition/definition'
import { createConversation, type Conversation, type ConversationEvent } from '../../src/conversation/engine'
import type { ConversationTools } from '../../src/conversation/tool-calls'
import { decodeWav } from '../../src/lib/wav'
import { resample } from '../../src/lib/resample'
import { systemClock } from '../../src/lib/clock'
import { createLlmClient } from '../../src/models/llm'
import { createSttClient } from '../../src/models/stt'
import { createTtsClient } from '../../src/models/tts'
import type { EndCallConfig } from '../../src/tools/schemas'
import { connectAriMedia } from '../../src/voice/ari-media'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711'
import {
  createVoicePipeline,
  engineShareMs,
  type VoiceCallResult,
  type VoicePipeline,
  type VoicePipelineOptions,
} from '../../src/voice/pipeline'
import { DEFAULT_TURN_PARAMETERS } from '../../src/voice/turns'
import { loadVadEngine, type VadEngine } from '../../src/voice/vad'
import { loadNoiseEngine } from '../../src/voice/noise'
import { loudestWindow, noise, rms, sine, toneAmplitude } from '../support/audio'
import { startFakeAriMedia, type FakeAriMedia, type FakeMediaChannel } from '../support/fake-ari-media'
import { callTool, fakeSpeech, say, startFakeModels, type FakeModels } from '../support/fake-models'
import { waitFor } from '../support/wait'
import { answeringMachine, callerSpeech, concatPcm, silence8k } from '../support/voice'

type Json = Record<string, any>

const node = (id: string, type: string, data: Json) => ({ id, type, position: { x: 0, y: 0 }, data })

function agent(start: Json = {}): WorkflowDefinition {
  return {
    nodes: [
      node('1', 'startCall', {
        name: 'Start',
        greeting: 'Hello, this is Ava.',
        prompt: 'Help the caller book a table.',
        ...start,
      }),
      node('2', 'endCall', { name: 'Goodbye', prompt: 'Say goodbye.' }),
    ],
    edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
  }
}

let media: FakeAriMedia
let models: FakeModels
let vad: VadEngine
beforeAll(async () => {
  media = startFakeAriMedia()
  models = startFakeModels()
  vad = await loadVadEngine()
})
afterAll(async () => {
  models.stop()
  await media.stop()
})
beforeEach(() => {
  models.reset()
  models.transcription.handler = () => ({ text: '' })
})
/** A test that failed half-way leaves no call running into the next one. */
const running: Call[] = []
afterEach(async () => {
  await Promise.all(
    running.splice(0).map(async (call) => {
      await call.pipeline.stop('user_hangup')
      await call.result
    }),
  )
})

type Call = {
  channel: FakeMediaChannel
  pipeline: VoicePipeline
  conversation: Conversation
  events: ConversationEvent[]
  warnings: string[]
  result: Promise<VoiceCallResult>
}

async function startCall(
  options: {
    definition?: WorkflowDefinition
    configurations?: Json
    pipeline?: Partial<VoicePipelineOptions>
    tools?: ConversationTools
    recordings?: Map<string, { transcript: string; ulaw: Uint8Array }>
    /** Collects every piece of agent audio handed to the transport, in order. */
    sent?: Uint8Array[]
  } = {},
): Promise<Call> {
  const channel = media.addChannel()
  const transport = await connectAriMedia({ endpoint: media.url, connectionId: channel.connectionId })
  const { sent } = options
  if (sent) {
    const send = transport.send
    transport.send = (ulaw) => {
      sent.push(ulaw.slice())
      send(ulaw)
    }
  }
  const connection = { provider: 'openai', baseUrl: models.baseUrl }
  const events: ConversationEvent[] = []
  const warnings: string[] = []
  const pipeline = createVoicePipeline({
    transport,
    vad,
    clock: systemClock,
    tickIntervalMs: 20,
    onWarning: (message) => warnings.push(message),
    stt: createSttClient(connection, { model: 'fake-stt' }),
    tts: createTtsClient(connection, { model: 'fake-tts', voice: 'alloy' }),
    recordings: options.recordings,
    ...options.pipeline,
  })
  const conversation = createConversation({
    definition: options.definition ?? agent(),
    configurations: { max_call_duration_seconds: 120, ...options.configurations },
    variables: {},
    llm: createLlmClient(connection, { model: 'fake-llm' }),
    tools: options.tools,
    recordings: options.recordings,
    clock: systemClock,
    onEvent: (event) => {
      events.push(event)
      pipeline.conversationEvent(event)
    },
  })
  const call = { channel, pipeline, conversation, events, warnings, result: pipeline.run(conversation) }
  running.push(call)
  return call
}

const speechInputs = () => models.requestsTo('/audio/speech').map((request) => request.body.input)
const marksProcessed = (channel: FakeMediaChannel) =>
  channel.sent.filter(({ text }) => text.includes('MEDIA_MARK_PROCESSED'))
const playedPcm = (channel: FakeMediaChannel) =>
  ulawToPcm16(Uint8Array.from(channel.played.flatMap((frame) => [...frame.ulaw])))
const lastUserMessage = (request: { body: any }) =>
  request.body.messages.filter((message: Json) => message.role === 'user').at(-1)?.content

/** Waits until the fake has played the agent's audio sent so far (its queue is empty and a mark came back). */
async function greetingHeard(call: Call): Promise<void> {
  await waitFor('the greeting to be played', () => marksProcessed(call.channel).length >= 1, 5_000)
}

/** A call whose caller, once the greeting is heard, says `text` (transcribed as it), which the model answers with `answer`. */
async function callerSays(text: string, answer: string, options: Parameters<typeof startCall>[0] = {}) {
  models.transcription.queue({ text })
  models.chat.queue(say(answer))
  const call = await startCall(options)
  await greetingHeard(call)
  const speech = await callerSpeech(text)
  call.channel.speak(speech)
  return { call, speech }
}

/** Keeps the event loop busy for `ms` (a loaded machine): no timer, socket or promise is served meanwhile. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

describe('voice pipeline: fake chan_websocket + fake STT/LLM/TTS + a Conversation', () => {
  test('the greeting is synthesised, sent as µ-law, marked, heard, and recorded on the right channel', async () => {
    const call = await startCall()
    await greetingHeard(call)
    expect(speechInputs()).toEqual(['Hello, this is Ava.'])
    expect(models.requestsTo('/audio/speech')[0].body).toMatchObject({
      model: 'fake-tts',
      voice: 'alloy',
      response_format: 'pcm',
    })
    // 20 ms per character of a 440 Hz tone at 24 kHz, resampled to 8 kHz and played by the fake
    const played = playedPcm(call.channel)
    expect(played.length / 8).toBeGreaterThanOrEqual('Hello, this is Ava.'.length * 20 - 40)
    expect(toneAmplitude(played, 440, 8000)).toBeGreaterThan(4000)
    expect(call.channel.received.some(({ text }) => text.includes('MARK_MEDIA'))).toBe(true)

    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.endReason).toBe('user_hangup')
    const { format, pcm } = decodeWav(await new Response(result.recording.stereo()).bytes())
    expect(format).toMatchObject({ channels: 2, sampleRate: 8000 })
    const right = pcm.filter((_, index) => index % 2 === 1)
    const left = pcm.filter((_, index) => index % 2 === 0)
    expect(toneAmplitude(loudestWindow(right, 800), 440, 8000)).toBeGreaterThan(4000)
    expect(rms(left)).toBe(0)
    expect(decodeWav(await new Response(result.recording.agent()).bytes()).format.channels).toBe(1)
    expect(await call.channel.closed).toMatchObject({ code: 1000 })
  })

  test('sentence after sentence, the line gets exactly each sentence resampled on its own (24 → 8 kHz, nothing carried over)', async () => {
    const sentences = ['Hello, this is Ava.', 'How can I help you today?', 'We are open late.']
    const sent: Uint8Array[] = []
    const call = await startCall({ definition: agent({ greeting: sentences.join(' ') }), sent })
    await waitFor('the greeting to be played', () => marksProcessed(call.channel).length >= 3, 10_000)
    expect(speechInputs()).toEqual(sentences)
    const expected = sentences.map((text) => pcm16ToUlaw(resample(fakeSpeech(text), 24_000, 8000)))
    expect(Buffer.concat(sent)).toEqual(Buffer.concat(expected))
  })

  test('speech that starts on a silent line is sent with a 300 ms lead, or whole when shorter: no stutter if the next piece is late', async () => {
    // 100 ms pieces (24 kHz), 40 ms apart: sent as they came, the far end would play 100 ms, then wait
    models.speech.handler = () => ({ chunkBytes: 4800, chunkDelayMs: 40 })
    const sent: Uint8Array[] = []
    const call = await startCall({ definition: agent({ greeting: 'Hello, this is Ava from Acme.' }), sent })
    await greetingHeard(call)
    // 29 characters: 580 ms of speech; the first piece sent holds at least 300 ms of it (2,400 µ-law bytes)
    expect(sent[0].length).toBeGreaterThanOrEqual(2400)
    expect(Buffer.concat(sent).length).toBe(
      pcm16ToUlaw(resample(fakeSpeech('Hello, this is Ava from Acme.'), 24_000, 8000)).length,
    )
    await call.pipeline.stop('user_hangup')
    await call.result

    const short: Uint8Array[] = []
    const second = await startCall({ definition: agent({ greeting: 'Hi.' }), sent: short })
    await greetingHeard(second)
    // 60 ms of speech in one piece, sent when its synthesis ended
    expect(short).toHaveLength(1)
    expect(short[0].length).toBe(480)
  })

  test('a long reply is read from the TTS as the line plays: the next sentence is asked for once less than 2 s is left to play', async () => {
    const long =
      'This greeting goes on about the restaurant and its many rooms and its tables and its menus and its wines so that it lasts for several seconds.'
    const next = 'How can I help?'
    let playedWhenAsked = -1
    const sent: Uint8Array[] = []
    let call: Call | undefined
    models.speech.handler = (request) => {
      if (request.body.input === next) playedWhenAsked = call!.channel.played.length
      return {}
    }
    call = await startCall({ definition: agent({ greeting: `${long} ${next}` }), sent })
    await waitFor('the greeting to be played', () => marksProcessed(call!.channel).length >= 2, 15_000)
    // 142 characters: 2.84 s of speech, all received at once; the second sentence was asked for with at most 2 s of
    // it left to play (a 20 ms frame each), not as soon as the first had been received
    expect(playedWhenAsked).toBeGreaterThanOrEqual((2840 - 2000 - 200) / 20)
    expect(speechInputs()).toEqual([long, next])
    const expected = [long, next].map((text) => pcm16ToUlaw(resample(fakeSpeech(text), 24_000, 8000)))
    expect(Buffer.concat(sent)).toEqual(Buffer.concat(expected))
  })

  test('an utterance is transcribed (16 kHz WAV), answered sentence by sentence, and its response time measured', async () => {
    const { call, speech } = await callerSays('Can I book a table for two tonight?', 'Of course. Which time suits you?')
    await waitFor('the answer to be played', () => marksProcessed(call.channel).length >= 3, 10_000)

    const [transcription] = models.requestsTo('/audio/transcriptions')
    expect(transcription.audio?.format).toEqual({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 })
    // the whole utterance: the speech (± the pre-roll and the stop window)
    expect(transcription.audio!.pcm.length / 16).toBeGreaterThan((speech.length / 8) * 0.8)
    expect(lastUserMessage(models.requestsTo('/chat/completions')[0])).toBe('Can I book a table for two tonight?')
    expect(speechInputs()).toEqual(['Hello, this is Ava.', 'Of course.', 'Which time suits you?'])

    await call.pipeline.stop('user_hangup')
    const result = await call.result
    // no answering-machine detection here: nothing held the answer
    expect(result.firstAnswerHeldMs).toBeNull()
    expect(result.turns).toHaveLength(1)
    const [turn] = result.turns
    expect(turn.responseMs).toBeGreaterThanOrEqual(0)
    expect(turn.firstTextMs).not.toBeNull()
    expect(turn.firstAudioMs).not.toBeNull()
    const { transcript } = call.conversation.record().logs
    expect(transcript.map(({ role, text }) => [role, text])).toEqual([
      ['agent', 'Hello, this is Ava.'],
      ['user', 'Can I book a table for two tonight?'],
      ['agent', 'Of course. Which time suits you?'],
    ])
    // the caller's speech is on the left channel
    const { pcm } = decodeWav(await new Response(result.recording.caller()).bytes())
    expect(rms(pcm)).toBeGreaterThan(300)
  })

  test("the start lead's wait is the TTS streaming it, measured apart from the engine's share", async () => {
    // 100 ms pieces 150 ms apart: the 300 ms lead of the answer is complete with its third piece, 300 ms after the first
    models.speech.handler = () => ({ chunkBytes: 4800, chunkDelayMs: 150 })
    const { call } = await callerSays('Can I book a table for two tonight?', 'Of course, we have a table at eight.')
    await waitFor('the answer to be played', () => speechInputs().length === 2, 10_000)
    await waitFor('the answer to be heard', () => marksProcessed(call.channel).length >= 2, 10_000)
    await call.pipeline.stop('user_hangup')
    const [turn] = (await call.result).turns
    expect(turn.ttsLeadMs).toBeGreaterThanOrEqual(290)
    expect(engineShareMs(turn)).toBeLessThan(turn.ttsLeadMs)
    expect(turn.responseMs).toBeGreaterThanOrEqual(turn.ttsLeadMs + (turn.firstAudioMs ?? 0))
  })

  test('a stalled event loop: speech that arrives in one burst after the stall is still heard, transcribed whole, answered, and recorded', async () => {
    const { call, speech } = await callerSays('Can I book a table for two tonight?', 'Of course.')
    // A busy machine: the loop is blocked while the caller speaks, so every frame reaches the pipeline at once after it
    // (the fake's media clock catches up, as the kernel's socket buffer would hand over Asterisk's frames).
    blockEventLoop(speech.length / 8 + 300)
    await waitFor('the answer to be played', () => speechInputs().includes('Of course.'), 10_000)

    const transcriptions = models.requestsTo('/audio/transcriptions')
    expect(transcriptions).toHaveLength(1)
    expect(transcriptions[0].audio!.pcm.length / 16).toBeGreaterThan((speech.length / 8) * 0.8)
    expect(lastUserMessage(models.requestsTo('/chat/completions')[0])).toBe('Can I book a table for two tonight?')
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    // the burst is laid end to end on the caller's track, not piled onto one moment
    const { pcm } = decodeWav(await new Response(result.recording.caller()).bytes())
    let voiced = 0
    for (let at = 0; at + 160 <= pcm.length; at += 160) if (rms(pcm.subarray(at, at + 160)) > 100) voiced++
    let spoken = 0
    for (let at = 0; at + 160 <= speech.length; at += 160) if (rms(speech.subarray(at, at + 160)) > 100) spoken++
    expect(voiced).toBeGreaterThan(spoken * 0.9)
  })

  test('a stall past the idle timeout while the caller speaks: the call is not ended as idle, the speech is answered', async () => {
    const { call } = await callerSays('Can I book a table for two tonight?', 'Of course.', {
      configurations: { max_user_idle_timeout_seconds: 1, user_idle_reprompts: 0 },
    })
    // the idle timeout passes during the stall, while the caller's words wait unread in the socket
    blockEventLoop(1_500)
    await waitFor('a request to the model', () => models.requestsTo('/chat/completions').length >= 1, 10_000)
    expect(lastUserMessage(models.requestsTo('/chat/completions')[0])).toBe('Can I book a table for two tonight?')
    await waitFor('the answer to be played', () => speechInputs().includes('Of course.'), 10_000)
    await call.pipeline.stop('user_hangup')
    expect((await call.result).endReason).toBe('user_hangup')
  })

  test('a stall in the middle of a sentence does not cut it in two: one utterance, the whole speech, one answer', async () => {
    const sentence = 'I would like a table for four people tomorrow evening at eight, by the window if you have one.'
    const { call, speech } = await callerSays(sentence, 'Of course.')
    const speakingSince = performance.now()
    await waitFor('the caller to be a second into the sentence', () => performance.now() - speakingSince > 1_000)
    blockEventLoop(1_500) // longer than the stop window: taken for silence, it would end the turn
    await waitFor('the answer to be played', () => speechInputs().includes('Of course.'), 15_000)

    const transcriptions = models.requestsTo('/audio/transcriptions')
    expect(transcriptions).toHaveLength(1)
    expect(transcriptions[0].audio!.pcm.length / 16).toBeGreaterThan((speech.length / 8) * 0.8)
    await call.pipeline.stop('user_hangup')
    await call.result
  }, 30_000)

  test('barge-in: caller speech over an interruptible reply flushes at once; the turn keeps only the sentences played', async () => {
    const reply = [
      'First, we have tables at six.',
      'Second, there is a table at seven.',
      'Third, we can seat you at eight.',
      'Fourth, nine is also free.',
    ]
    models.transcription.queue({ text: 'Tables please.' }, { text: 'Seven works.' })
    models.chat.queue(say(reply.join(' ')), say('Great.'))
    const call = await startCall()
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('Tables please.'))
    await waitFor(
      'the first sentence of the reply to be played',
      () => marksProcessed(call.channel).length >= 2,
      10_000,
    )
    call.channel.speak(await callerSpeech('Seven works.'))
    await waitFor('a flush', () => call.channel.flushes.length === 1, 5_000)
    const flushedAt = call.channel.flushes[0]
    const marksBefore = marksProcessed(call.channel).filter(({ atMs }) => atMs < flushedAt).length
    await waitFor('the answer to the barge-in', () => speechInputs().includes('Great.'), 10_000)

    // the agent stopped within one frame of the flush
    const agentFramesAfterFlush = call.channel.played.filter(({ atMs }) => atMs > flushedAt && atMs < flushedAt + 300)
    expect(agentFramesAfterFlush.length).toBeLessThanOrEqual(1)
    const heard = reply.slice(0, marksBefore - 1) // the greeting's mark came first
    const cut = call.conversation.record().logs.transcript[2]
    expect(cut).toMatchObject({ role: 'agent', interrupted: true, text: heard.join(' ') })
    expect(heard.length).toBeLessThan(reply.length)
    // the next request shows the model only what was heard
    const second = models.requestsTo('/chat/completions')[1].body.messages
    expect(second.at(-2)).toEqual({ role: 'assistant', content: heard.join(' ') })
    expect(second.at(-1)).toEqual({ role: 'user', content: 'Seven works.' })
    await call.pipeline.stop('user_hangup')
    await call.result
  }, 30_000)

  test('without allow_interrupt the agent finishes; what the caller said meanwhile is answered after it', async () => {
    const reply = 'Let me read you our whole menu of the evening, starting with soup. Then there is fish and a cake.'
    models.transcription.queue({ text: 'What is on the menu tonight?' }, { text: 'Sounds good.' })
    models.chat.queue(say(reply), say('Wonderful.'))
    const call = await startCall({ definition: agent({ allow_interrupt: false }) })
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('What is on the menu tonight?'))
    await waitFor('the reply to start playing', () => speechInputs().length >= 2, 10_000)
    call.channel.speak(await callerSpeech('Sounds good.'))
    await waitFor('the second answer', () => speechInputs().includes('Wonderful.'), 15_000)
    expect(call.channel.flushes).toEqual([])
    expect(call.events.some((event) => event.type === 'agent_turn_done' && event.interrupted)).toBe(false)
    // the whole reply was synthesised and its last mark came back before the caller's turn went to the model
    const secondChat = models.requestsTo('/chat/completions')[1]
    expect(lastUserMessage(secondChat)).toBe('Sounds good.')
    expect(secondChat.body.messages.at(-2)).toEqual({ role: 'assistant', content: reply })
    await call.pipeline.stop('user_hangup')
    await call.result
  }, 30_000)

  test('silence: a reprompt after the idle timeout, then a goodbye and the end (user_idle_max_duration_exceeded)', async () => {
    models.chat.queue(say('Are you still there?'), say('Goodbye for now.'))
    const call = await startCall({ configurations: { max_user_idle_timeout_seconds: 0.3 } })
    const result = await call.result
    expect(result.endReason).toBe('user_idle_max_duration_exceeded')
    expect(speechInputs()).toEqual(['Hello, this is Ava.', 'Are you still there?', 'Goodbye for now.'])
    // a graceful end: the goodbye was played out before the media closed
    expect(marksProcessed(call.channel)).toHaveLength(3)
    expect(models.requestsTo('/chat/completions')[0].body.messages[0].content).toContain('silent')
  }, 30_000)

  test('DTMF digits reach the conversation as the caller\'s turn, "#" ending the entry', async () => {
    models.chat.queue(say('Thanks, account found.'))
    const call = await startCall()
    await greetingHeard(call)
    for (const digit of ['4', '2', '#']) call.pipeline.dtmf(digit)
    await waitFor('the answer', () => speechInputs().includes('Thanks, account found.'), 5_000)
    expect(lastUserMessage(models.requestsTo('/chat/completions')[0])).toBe('DTMF: 42#')
    await call.pipeline.stop('user_hangup')
    await call.result
  }, 30_000)

  /** An agent whose Start node has an end_call tool 'Hang up' saying `message`. */
  function hangUpTool(message: Pick<EndCallConfig, 'messageType' | 'customMessage' | 'audioRecordingId'>) {
    const config: EndCallConfig = { endCallReason: false, endCallReasonDescription: null, ...message }
    const tools: ConversationTools = {
      byUuid: new Map([
        [
          't-end',
          {
            tool_uuid: 't-end',
            name: 'Hang up',
            description: null,
            definition: { schema_version: 1, type: 'end_call', config },
          },
        ],
      ]),
      callHttp: () => {
        throw new Error('no http tools here')
      },
    }
    return { definition: agent({ tool_uuids: ['t-end'] }), tools }
  }

  test("an end_call tool's spoken goodbye (a tool_message turn) is played out, then the call ends", async () => {
    models.chat.queue(callTool('hang_up', {}))
    const call = await startCall(
      hangUpTool({ messageType: 'custom', customMessage: 'Thanks for calling, goodbye.', audioRecordingId: null }),
    )
    await greetingHeard(call)
    for (const digit of ['1', '#']) call.pipeline.dtmf(digit)
    const result = await call.result
    expect(result.endReason).toBe('end_call_tool')
    expect(speechInputs()).toEqual(['Hello, this is Ava.', 'Thanks for calling, goodbye.'])
    expect(marksProcessed(call.channel)).toHaveLength(2)
  }, 30_000)

  test("an end_call tool's recorded goodbye: its line audio is played (no synthesis), then the call ends", async () => {
    models.chat.queue(callTool('hang_up', {}))
    const goodbye = pcm16ToUlaw(sine(700, 8000, 400))
    const recordings = new Map([['rec-9', { transcript: 'Goodbye!', ulaw: goodbye }]])
    const call = await startCall({
      ...hangUpTool({ messageType: 'audio', customMessage: null, audioRecordingId: 'rec-9' }),
      recordings,
    })
    await greetingHeard(call)
    const playedBefore = call.channel.played.length
    for (const digit of ['1', '#']) call.pipeline.dtmf(digit)
    const result = await Promise.race([call.result, Bun.sleep(10_000).then(() => null)])
    expect(result?.endReason).toBe('end_call_tool')
    const clip = Buffer.concat(call.channel.played.slice(playedBefore).map(({ ulaw }) => ulaw))
    expect(new Uint8Array(clip.subarray(0, goodbye.length))).toEqual(new Uint8Array(goodbye))
    expect(speechInputs()).not.toContain('Goodbye!')
    expect(call.conversation.record().logs.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'Goodbye!' })
  }, 30_000)

  test("an answering machine (long greeting, beep) ends the call as voicemail; the workflow's message is left after the beep", async () => {
    const call = await startCall({ pipeline: { voicemail: { message: 'Hi Jordan, please call us back.' } } })
    const machine = await answeringMachine()
    call.channel.speak(machine)
    const result = await call.result
    expect(result.endReason).toBe('voicemail_detected')
    expect(result.voicemail).toMatchObject({ messageLeft: true })
    // decided at the end of the beep: after the whole machine audio has been sent
    expect(result.voicemail!.detectedAfterMs).toBeGreaterThan((machine.length / 8) * 0.9)
    expect(speechInputs().at(-1)).toBe('Hi Jordan, please call us back.')
    expect(call.conversation.record().end_reason).toBe('voicemail_detected')
  }, 30_000)

  test("the machine's greeting is not answered: its turns are held (a reply prepared, never taken) until the beep; no message: hung up at once", async () => {
    models.transcription.handler = () => ({ text: 'Hi, you have reached Jordan.' })
    const call = await startCall({ pipeline: { voicemail: {} } })
    call.channel.speak(await answeringMachine())
    const result = await call.result
    expect(result.endReason).toBe('voicemail_detected')
    expect(result.voicemail).toMatchObject({ messageLeft: false })
    // the pause inside the greeting ended a caller turn, which was transcribed and then held until the verdict
    expect(models.requestsTo('/audio/transcriptions').length).toBeGreaterThanOrEqual(1)
    expect(result.firstAnswerHeldMs).toBeGreaterThan(0)
    // detection runs in parallel with the reply: it was prepared for the held turn, and dropped with the verdict
    expect(models.requestsTo('/chat/completions').length).toBeGreaterThanOrEqual(1)
    expect(call.events.filter(({ type }) => type === 'usage')).toEqual([])
    expect(speechInputs()).toEqual(['Hello, this is Ava.'])
    expect(call.conversation.record().logs.transcript.map(({ role }) => role)).toEqual(['agent'])
  }, 30_000)

  test("a person's short hello is answered once its pause rules a machine out, long before detection would expire", async () => {
    models.transcription.queue({ text: 'Hello?' })
    models.chat.queue(say('Hi, this is Ava from Acme.'))
    const call = await startCall({ pipeline: { voicemail: {} } })
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('Hello?'))
    await waitFor('the answer', () => speechInputs().includes('Hi, this is Ava from Acme.'), 10_000)
    // the reply prepared while detection decided is the one released: one request, not a second after the verdict
    expect(models.requestsTo('/chat/completions').map(lastUserMessage)).toEqual(['Hello?'])
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.voicemail).toBeNull()
    expect(result.endReason).toBe('user_hangup')
    // Held from the end of the turn to the end of the pause (~0.4 s; how long is the voice bench's business, not a test's).
    expect(result.firstAnswerHeldMs).toEqual(expect.any(Number))
  }, 30_000)

  test('a DTMF key while detection is undecided shows a person: the keys are answered at once', async () => {
    models.chat.queue(say('Thanks, account found.'))
    const call = await startCall({ pipeline: { voicemail: {} } })
    for (const digit of ['4', '#']) call.pipeline.dtmf(digit)
    await waitFor('the answer', () => speechInputs().includes('Thanks, account found.'), 5_000)
    await call.pipeline.stop('user_hangup')
    expect((await call.result).firstAnswerHeldMs).toBe(0)
  }, 30_000)

  test('speculation: a finished sentence is answered after the short pause, not the stop window', async () => {
    models.transcription.handler = () => ({ text: 'Can I book a table for two tonight?' })
    models.chat.queue(say('Of course.'))
    const call = await startCall()
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('Can I book a table for two tonight?'))
    await waitFor('the answer to be played', () => marksProcessed(call.channel).length >= 2, 10_000)
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.speculation.endedEarly).toBe(1)
    const [turn] = result.turns
    // the turn ended at the pause window (240 ms after the last speech), not the stop window (600 ms)
    expect(turn.stopWindowMs).toBe(DEFAULT_TURN_PARAMETERS.pauseMs)
    expect(turn.speculationSavedMs).toBeGreaterThan(0)
    expect(models.requestsTo('/chat/completions').map(lastUserMessage)).toEqual(['Can I book a table for two tonight?'])
    expect(call.conversation.record().logs.transcript.map(({ role, text }) => [role, text])).toEqual([
      ['agent', 'Hello, this is Ava.'],
      ['user', 'Can I book a table for two tonight?'],
      ['agent', 'Of course.'],
    ])
  }, 30_000)

  test('speculation: an unfinished sentence ("I would like to book, um…") waits for the stop window; its prepared request is the one answered', async () => {
    models.transcription.handler = () => ({ text: 'I would like to book, um...' })
    models.chat.queue(say('Sure, for when?'))
    const call = await startCall()
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('I would like to book, um'))
    await waitFor('the answer to be played', () => marksProcessed(call.channel).length >= 2, 10_000)
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.speculation.endedEarly).toBe(0)
    expect(result.turns[0].stopWindowMs).toBe(DEFAULT_TURN_PARAMETERS.stopMs)
    // one LLM request: prepared at the pause, taken at the end of the window (none sent again)
    expect(models.requestsTo('/chat/completions').map(lastUserMessage)).toEqual(['I would like to book, um...'])
    expect(call.events.filter(({ type }) => type === 'usage')).toHaveLength(1)
  }, 30_000)

  test('speculation dropped when the caller goes on: its LLM request is aborted, nothing of it heard, the transcript clean', async () => {
    const first = await callerSpeech('I would like to book, um')
    models.transcription.handler = (request) => ({
      // the pause's audio is the first part; the whole turn is longer
      text:
        request.audio!.pcm.length / 16 < (first.length / 8) * 1.2
          ? 'I would like to book, um...'
          : 'I would like to book, um... a table for two tonight.',
    })
    models.chat.queue(say('Sure, for when?', { firstTokenDelayMs: 5_000 }), say('Of course, at what time?'))
    // a long stop window: the caller goes on once the speculative request is seen, well inside it
    const call = await startCall({ pipeline: { turn: { stopMs: 3_000 } } })
    await greetingHeard(call)
    call.channel.speak(first)
    await waitFor('the prepared LLM request', () => models.requestsTo('/chat/completions').length >= 1, 10_000)
    call.channel.speak(await callerSpeech('a table for two tonight.'))
    await waitFor('the answer', () => speechInputs().includes('Of course, at what time?'), 10_000)
    // the fake notices a client gone when it next writes (its delayed first piece)
    await waitFor(
      'the speculative request to be aborted',
      () => models.requestsTo('/chat/completions')[0].aborted,
      10_000,
    )
    const [speculative, answered] = models.requestsTo('/chat/completions')
    expect(lastUserMessage(speculative)).toBe('I would like to book, um...')
    expect(lastUserMessage(answered)).toBe('I would like to book, um... a table for two tonight.')
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.speculation.dropped).toBeGreaterThanOrEqual(1)
    expect(speechInputs()).not.toContain('Sure, for when?')
    expect(call.events.filter(({ type }) => type === 'usage')).toHaveLength(1)
    expect(call.conversation.record().logs.transcript.map(({ role, text }) => [role, text])).toEqual([
      ['agent', 'Hello, this is Ava.'],
      ['user', 'I would like to book, um... a table for two tonight.'],
      ['agent', 'Of course, at what time?'],
    ])
  }, 30_000)

  test('noise suppression on: noisy speech is still transcribed and answered, and what speech recognition gets is denoised', async () => {
    models.transcription.handler = () => ({ text: 'Can I book a table for two tonight?' })
    models.chat.queue(say('Of course.'))
    const noiseEngine = await loadNoiseEngine()
    const call = await startCall({ pipeline: { noise: noiseEngine } })
    await greetingHeard(call)
    const speech = await callerSpeech('Can I book a table for two tonight?')
    const hiss = noise(8000, speech.length / 8 + 1_000, 1_500)
    const noisy = concatPcm([speech, silence8k(1_000)]).map((sample, index) =>
      Math.max(-32768, Math.min(32767, sample + hiss[index])),
    )
    call.channel.speak(noisy)
    await waitFor('the answer', () => speechInputs().includes('Of course.'), 10_000)
    const [transcription] = models.requestsTo('/audio/transcriptions')
    // the utterance ends with the silence heard after the speech: there, only the noise is left of the line
    const tail = transcription.audio!.pcm.subarray(-16 * 150)
    expect(rms(tail)).toBeLessThan(rms(hiss) / 3)
    expect(call.conversation.record().logs.transcript.map(({ role }) => role)).toEqual(['agent', 'user', 'agent'])
  }, 30_000)

  test('a configured stop window decides where a turn ends: a 1.2 s pause splits two sentences at 0.6 s, not at 1.5 s', async () => {
    // ~1.2 s without speech: the voice's own silence at the end and start of each sentence (~0.4 s) and 0.8 s
    const speech = concatPcm([await callerSpeech('Hello?'), silence8k(800), await callerSpeech('Who is this?')])
    for (const [stopMs, turns] of [
      [600, 2],
      [1_500, 1],
    ]) {
      // transcribed as nothing: only where the turns end matters here
      models.reset()
      models.transcription.handler = () => ({ text: '' })
      // no speculation on pauses here: each transcription is a turn's end
      const call = await startCall({ pipeline: { turn: { stopMs, pauseMs: stopMs } } })
      await greetingHeard(call)
      call.channel.speak(speech)
      await waitFor(
        "the caller's speech to be transcribed",
        () => models.requestsTo('/audio/transcriptions').length >= 1,
        10_000,
      )
      await waitFor('the caller to finish speaking', () => !call.channel.callerSpeaking(), 10_000)
      // past the end of the speech and the longer stop window: every turn has ended
      await Bun.sleep(1_500)
      expect(models.requestsTo('/audio/transcriptions')).toHaveLength(turns)
      await call.pipeline.stop('user_hangup')
      await call.result
    }
  }, 30_000)

  test('min_words barge-in: "Okay." over the reply is dropped, no flush; a sentence of enough words interrupts it', async () => {
    const reply = Array.from(
      { length: 10 },
      (_, index) => `Option ${index + 1} is a quiet table for two by the window.`,
    )
    models.transcription.queue(
      { text: 'Tables please.' },
      { text: 'Okay.' },
      { text: 'Wait, I would rather come at seven.' },
    )
    models.chat.queue(say(reply.join(' ')), say('Seven it is.'))
    const call = await startCall({ pipeline: { bargeInMinWords: 3 } })
    await greetingHeard(call)
    call.channel.speak(await callerSpeech('Tables please.'))
    await waitFor(
      'the first sentence of the reply to be played',
      () => marksProcessed(call.channel).length >= 2,
      10_000,
    )
    call.channel.speak(await callerSpeech('Okay.'))
    await waitFor(
      'the backchannel to be transcribed',
      () => models.requestsTo('/audio/transcriptions').length === 2,
      10_000,
    )
    call.channel.speak(await callerSpeech('Wait, I would rather come at seven.'))
    await waitFor('a flush', () => call.channel.flushes.length >= 1, 10_000)
    await waitFor('the answer to the interruption', () => speechInputs().includes('Seven it is.'), 10_000)

    expect(call.channel.flushes).toHaveLength(1)
    const chats = models.requestsTo('/chat/completions')
    expect(chats).toHaveLength(2)
    const messages = chats[1].body.messages
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Wait, I would rather come at seven.' })
    expect(messages.some((message: Json) => message.content === 'Okay.')).toBe(false)
    // the reply was cut, keeping only what was played (more than the sentence playing when "Okay." came)
    const cut = call.conversation.record().logs.transcript[2]
    expect(cut).toMatchObject({ role: 'agent', interrupted: true })
    expect(reply.join(' ').startsWith(cut.text)).toBe(true)
    expect(cut.text.length).toBeLessThan(reply.join(' ').length)
    await call.pipeline.stop('user_hangup')
    await call.result
  }, 40_000)

  test('the media socket dropping mid-call ends the call, reported as lost', async () => {
    const call = await startCall()
    await greetingHeard(call)
    call.channel.drop()
    const result = await call.result
    expect(result.mediaLost).not.toBeNull()
    expect(result.endReason).toBe('unexpected_error')
    expect(call.warnings.some((warning) => warning.includes('media connection closed'))).toBe(true)
  })

  test('a hang-up reported during the grace period is not a lost media connection', async () => {
    const call = await startCall({ pipeline: { mediaLossGraceMs: 200 } })
    await greetingHeard(call)
    call.channel.hangup()
    await call.pipeline.stop('user_hangup')
    const result = await call.result
    expect(result.mediaLost).toBeNull()
    expect(result.endReason).toBe('user_hangup')
  })
})
