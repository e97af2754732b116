import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ulawToPcm16 } from '../../src/voice/g711'
import { DEFAULT_MODEL_FAILURE_MESSAGE } from '../../src/definition/fallback-lines'
import { rms } from '../support/audio'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import {
  deadBaseUrl,
  failWith,
  say,
  startFakeModels,
  type FakeChatAnswer,
  type FakeModels,
  type FakeSpeechAnswer,
  type FakeTranscriptionAnswer,
} from '../support/fake-models'
import { callerSpeech } from '../support/voice'
import {
  createVoiceAgent,
  GREETING,
  marksProcessed,
  placeCall,
  untilWritten,
  type PlacedCall,
} from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * A model failing mid-call is heard as a sentence, not silence: per service (LLM, STT, TTS) and per failure kind
 * (timeout, 5xx, stalled stream, connection refused), through the fake Asterisk's media leg and the fake model server.
 * LLM and STT: the caller hears the agent's model_failure line in the built-in voice, then the call ends with
 * disposition `model_error` and the failure in `logs.voice.model_failures`. TTS: the built-in voice speaks from then
 * on and the call goes on.
 *
 * The calls run at once (most of a call is waiting for audio to play in real time): each dials an extension of its own
 * and talks to a fake model server of its own, so no call sees another's requests or scripted answers.
 */

/** Short model timeouts, so a server that does not answer (or stalls) fails in half a second. */
const TIMEOUTS = { firstByteMs: 500, idleMs: 500, totalMs: 10_000 }
const NO_ANSWER_MS = 3_000

let app: AriVoiceApp
beforeAll(async () => {
  // Any extension answers and stays up, so each call dials one of its own.
  app = await startAriVoiceApp(
    { allow_raw_dial_strings: true },
    { modelTimeouts: TIMEOUTS },
    { defaultScenario: 'answered-stays-up' },
  )
  // Every case's call is up at once: more than the organization's default limit of 10.
  app.t.ctx.sqlite.run('UPDATE organizations SET concurrent_call_limit = 20')
})
afterAll(() => app.stop())

/** Where the transfer of the agent's own line goes. */
const TRANSFER_DESTINATION = 'Local/102@test'

const originatesTo = (endpoint: string) =>
  app.fake.requests.filter(
    (request) => request.method === 'POST' && request.path === '/ari/channels' && request.query.endpoint === endpoint,
  )

type OwnCall = { models: FakeModels; callee: string }

/**
 * One call's world: an extension of its own (`case` picks it) and a fake model server of its own; afterwards the
 * channels dialled to the extension (or to `alsoDialled`) that are still up are hung up.
 */
async function withOwnCall(which: number, body: (own: OwnCall) => Promise<void>, alsoDialled: string[] = []) {
  await callSlots.take()
  const models = startFakeModels()
  models.transcription.handler = () => ({ text: '' })
  const callee = `Local/${700 + which}@test`
  try {
    await body({ models, callee })
  } finally {
    const dialled = [callee, ...alsoDialled].flatMap(originatesTo).map((request) => request.query.channelId)
    for (const own of dialled) if (app.fake.liveChannelIds().includes(own)) app.fake.hangup(own)
    models.stop()
    callSlots.give()
  }
}

/**
 * At most CALLS_AT_ONCE calls are up together: the media of each runs in real time, and on a busy machine the fake
 * models' half-second timeouts (TIMEOUTS) would fail calls that are not meant to fail. (Caller speech is no longer
 * missed under load: test/voice/pipeline.test.ts stalls the event loop while the caller speaks.)
 */
const CALLS_AT_ONCE = 4
const callSlots = (() => {
  let free = CALLS_AT_ONCE
  const waiting: (() => void)[] = []
  return {
    take: () => (free > 0 ? (free--, Promise.resolve()) : new Promise<void>((resolve) => waiting.push(resolve))),
    give: () => {
      const next = waiting.shift()
      if (next) next()
      else free++
    },
  }
})()

type Service = 'llm' | 'stt' | 'tts'
type Kind = 'timeout' | 'server_error' | 'stalled' | 'unreachable'

/** What the fake model server answers for each failure kind, per service (`unreachable`: the service's server is gone). */
const FAILURES: Record<
  Exclude<Kind, 'unreachable'>,
  { llm: FakeChatAnswer; stt: FakeTranscriptionAnswer; tts: FakeSpeechAnswer }
> = {
  timeout: {
    llm: { headersDelayMs: NO_ANSWER_MS },
    stt: { delayMs: NO_ANSWER_MS },
    tts: { headersDelayMs: NO_ANSWER_MS },
  },
  server_error: {
    llm: failWith(503, { error: { message: 'model overloaded' } }),
    stt: failWith(502, { error: { message: 'bad gateway' } }),
    tts: failWith(500, { error: { message: 'synthesis crashed' } }),
  },
  stalled: { llm: { text: 'Let me see', stallAfterChunks: 2 }, stt: { stall: true }, tts: { stallAfterChunks: 1 } },
}

/**
 * A configuration of its own for each call (the health of its servers is the call's alone): every service on the fake
 * model server, the failing one on a server where nothing listens when `kind` is `unreachable`.
 */
async function agentFor(
  models: FakeModels,
  service: Service,
  kind: Kind,
  configurations: Record<string, unknown> = {},
) {
  const { t } = app
  const connection = async (baseUrl: string) =>
    (
      await t.request('POST', '/api/v1/organizations/provider-connections', {
        body: { name: `Server ${crypto.randomUUID().slice(0, 8)}`, provider: 'openai', base_url: baseUrl },
      })
    ).body.uuid as string
  const fake = await connection(models.baseUrl)
  const failing = kind === 'unreachable' ? await connection(deadBaseUrl()) : fake
  const on = (which: Service) => (which === service ? failing : fake)
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: `Case ${crypto.randomUUID().slice(0, 8)}`,
      llm: { provider_connection_uuid: on('llm'), settings: { model: 'fake-llm' } },
      stt: { provider_connection_uuid: on('stt'), settings: { model: 'fake-stt' } },
      tts: { provider_connection_uuid: on('tts'), settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
  return createVoiceAgent(t, {
    configurations: { model_configuration_uuid: configuration.body.uuid, ...configurations },
  })
}

/** Scripts the fake so that `service` fails the `kind` way on the caller's first turn (TTS: on the answer to it). */
function scriptFailure(models: FakeModels, service: Service, kind: Kind) {
  const failure = kind === 'unreachable' ? null : FAILURES[kind][service]
  models.speech.queue({})
  if (service === 'stt') models.transcription.queue(failure ?? {})
  else models.transcription.queue({ text: 'Can I book a table for two tonight?' })
  if (service === 'llm') models.chat.queue(failure ?? {})
  else models.chat.queue(say('Of course. Which time suits you?'))
  if (service === 'tts' && failure) models.speech.queue(failure)
}

/** Agent frames loud enough to be speech, played after the first `from`. */
const loudFramesAfter = (call: PlacedCall, from: number) =>
  call.media.played.slice(from).filter((frame) => rms(ulawToPcm16(frame.ulaw)) > 500).length

/** Places the call, waits for the greeting to be heard, and has the caller speak once; returns where the greeting's frames end. */
async function callAndSpeak(
  agent: { id: number; triggerPath: string },
  callee: string,
): Promise<{ call: PlacedCall; afterGreeting: number }> {
  const { t, fake } = app
  const call = await placeCall(t, fake, agent, {}, callee)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 10_000)
  const afterGreeting = call.media.played.length
  call.media.speak(await callerSpeech('Can I book a table for two tonight?'))
  return { call, afterGreeting }
}

const speechInputs = (models: FakeModels) => models.requestsTo('/audio/speech').map((request) => request.body.input)

const CASES: [Service, Kind][] = (['llm', 'stt', 'tts'] as const).flatMap((service) =>
  (['timeout', 'server_error', 'stalled', 'unreachable'] as const).map((kind): [Service, Kind] => [service, kind]),
)

/** A call on an agent whose `service` fails the `kind` way, its greeting heard and the caller's first turn said. */
async function failingCall(own: OwnCall, service: Service, kind: Kind, configurations: Record<string, unknown> = {}) {
  const agent = await agentFor(own.models, service, kind, configurations)
  scriptFailure(own.models, service, kind)
  return { agent, ...(await callAndSpeak(agent, own.callee)) }
}

const caseNumber = (service: Service, kind: Kind) =>
  CASES.findIndex(([caseService, caseKind]) => caseService === service && caseKind === kind)

describe.each(CASES.filter(([service]) => service !== 'tts'))('%s failing mid-call (%s)', (service, kind) => {
  test.concurrent(
    'the caller hears the fallback line in the built-in voice; the call ends with model_error and the failure logged',
    () =>
      withOwnCall(caseNumber(service, kind), async ({ models, callee }) => {
        const { t, fake } = app
        const { agent, call, afterGreeting } = await failingCall({ models, callee }, service, kind)
        await waitFor('hung up by us', () => !fake.liveChannelIds().includes(call.callId), 30_000)
        // The line, about 3 s of the built-in voice: far more than the 0.1 s of agent audio a stalled answer could leave.
        expect(loudFramesAfter(call, afterGreeting)).toBeGreaterThan(50)
        expect(speechInputs(models)).not.toContain(DEFAULT_MODEL_FAILURE_MESSAGE)
        const run = await untilWritten(t, agent, call.runId)
        expect(run.gathered_context.mapped_call_disposition).toBe('model_error')
        // Every fake runs on this machine, whose failures are not told apart to readers of the run (docs/security.md).
        expect(run.logs.voice.model_failures[0], JSON.stringify(run.logs.voice.model_failures)).toMatchObject({
          service,
          kind: 'not_told',
        })
        expect(run.logs.voice.end_reason).toBe('model_error')
      }),
    90_000,
  )
})

describe.each(CASES.filter(([service]) => service === 'tts'))('%s failing mid-call (%s)', (service, kind) => {
  test.concurrent(
    'the built-in voice speaks for the rest of the call; the call goes on and the failure is logged',
    () =>
      withOwnCall(caseNumber(service, kind), async ({ models, callee }) => {
        const { t, fake } = app
        const { agent, call, afterGreeting } = await failingCall({ models, callee }, service, kind)
        // The answer's second sentence at least (about 1 s of the built-in voice) is heard.
        await waitFor('the answer heard', () => loudFramesAfter(call, afterGreeting) > 40, 15_000)
        expect(fake.liveChannelIds()).toContain(call.callId)
        fake.hangup(call.callId)
        const run = await untilWritten(t, agent, call.runId)
        expect(run.gathered_context.mapped_call_disposition).toBe('user_hangup')
        expect(run.logs.voice.model_failures).toEqual([expect.objectContaining({ service: 'tts', kind: 'not_told' })])
      }),
    90_000,
  )
})

test.concurrent(
  "an agent's own line, then a transfer to model_failure.transfer_to, when the LLM fails",
  () =>
    withOwnCall(
      CASES.length,
      async (own) => {
        const { t, fake } = app
        const message = 'Sorry, our assistant is down. Let me put you through to a colleague.'
        const { agent, call, afterGreeting } = await failingCall(own, 'llm', 'server_error', {
          model_failure: { message, transfer_to: TRANSFER_DESTINATION },
        })
        await waitFor('the transfer dialled', () => originatesTo(TRANSFER_DESTINATION).length >= 1, 15_000)
        // The destination answered: the agent's media leg is gone, the caller is with the destination.
        await call.media.closed
        expect(loudFramesAfter(call, afterGreeting)).toBeGreaterThan(50)
        fake.hangup(call.callId)
        const run = await untilWritten(t, agent, call.runId)
        expect(run.gathered_context.mapped_call_disposition).toBe('call_transferred')
        expect(run.logs.voice.model_failures[0]).toMatchObject({ service: 'llm', kind: 'not_told' })
        expect(speechInputs(own.models)).toEqual([GREETING])
      },
      [TRANSFER_DESTINATION],
    ),
  90_000,
)
