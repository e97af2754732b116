import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { createCarrierLine, runRow, startCarrierVoiceApp, stopCarrierVoiceApp } from '../../support/fake-carriers/calls'
import { PUBLIC_URL, type CarrierTestApp, type MediaClient } from '../../support/fake-carriers/shared'
import {
  startFakeTwilio,
  twilioCaller,
  type FakeTwilio,
  type FakeTwilioCall,
  type TwilioTransferPlan,
} from '../../support/fake-carriers/twilio'
import { callTool, say, type FakeModels } from '../../support/fake-models'
import { waitFor } from '../../support/wait'

/**
 * transfer_call on a Twilio call, end to end: the call placed through the API trigger on the fake Twilio, the caller's
 * keys making the (fake) model call the transfer tool, the call updated with a <Dial> TwiML, and the fake's <Dial>
 * outcome: answered (the run ends `call_transferred` with the destination and the talk time Twilio reports, the call
 * is not hung up by us) or busy (the model reads `transfer_failed`, the caller comes back on a new media stream and
 * hears the model's next answer).
 */

const GREETING = 'Hello, this is Ava from Acme.'
const DESK = '+14155550199'
let t: CarrierTestApp
let fake: FakeTwilio
let models: FakeModels
let agentTriggerPath: string
let agentId: number

beforeAll(async () => {
  ;({ t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100, dtmfTimeoutMs: 200 }))
  const tool = await t.request('POST', '/api/v1/tools/', {
    body: {
      name: 'Front desk',
      definition: {
        type: 'transfer_call',
        config: { destination: DESK, timeout: 20, messageType: 'custom', customMessage: 'Putting you through.' },
      },
    },
  })
  expect(tool.status, tool.text).toBe(200)
  agentTriggerPath = crypto.randomUUID()
  const agent = await t.request('POST', '/api/v1/workflow/create/definition', {
    body: {
      name: 'Ava',
      workflow_definition: {
        nodes: [
          {
            id: '1',
            type: 'startCall',
            position: { x: 0, y: 0 },
            data: {
              name: 'Start',
              greeting: GREETING,
              prompt: 'Put callers through to the desk.',
              tool_uuids: [tool.body.tool_uuid],
            },
          },
          {
            id: '2',
            type: 'trigger',
            position: { x: 0, y: 200 },
            data: { name: 'API', trigger_path: agentTriggerPath },
          },
        ],
        edges: [],
      },
    },
  })
  expect(agent.status, agent.text).toBe(200)
  agentId = agent.body.id
  fake = startFakeTwilio({
    reach: t.reach,
    plan: (call) => ({ outcome: 'completed', durationSeconds: 5, talk: (media) => script.talk(media, call) }),
    transfer: (call) => script.transfer(call),
  })
  t.ctx.providerApis.twilio = fake.baseUrl
  await createCarrierLine(t, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
})
afterEach(async () => {
  await fake.idle()
  fake.requests.length = 0
  models.reset()
})
afterAll(() => {
  stopCarrierVoiceApp({ t, models }, fake)
})

const speechInputs = () => models.requestsTo('/audio/speech').map((request) => request.body.input)
const hangupRequests = () => fake.requests.filter((request) => request.body.Status === 'completed')
const updates = () => fake.requests.filter((request) => typeof request.body.Twiml === 'string')

type Script = {
  transfer: (call: FakeTwilioCall) => TwilioTransferPlan
  talk: (media: MediaClient, call: FakeTwilioCall) => Promise<void>
}
let script: Script

async function placeCall(next: Script) {
  script = next
  const started = await t.request('POST', `/api/v1/public/agent/${agentTriggerPath}`, {
    body: { phone_number: '+14155550123' },
  })
  expect(started.status, started.text).toBe(200)
  return { runId: started.body.workflow_run_id as number }
}

const runDetail = async (runId: number) => (await t.request('GET', `/api/v1/workflow/${agentId}/runs/${runId}`)).body

async function untilWritten(runId: number) {
  await waitFor(
    'run completed and its conversation written',
    async () => {
      const run = await runDetail(runId)
      return run.is_completed && run.logs.voice !== undefined && run.logs.session !== undefined
    },
    30_000,
  )
  return runDetail(runId)
}

test("answered: the caller goes to the destination, the agent's stream ends without hanging up, the run records the transfer and its talk time", async () => {
  models.chat.queue(callTool('front_desk', {}))
  let whileBridged: { completed: boolean; hangups: number; voiceLogged: boolean; transfer: unknown } | undefined
  const { runId } = await placeCall({
    transfer: () => ({
      outcome: 'completed',
      talkSeconds: 42,
      async bridged() {
        // The conversation is over while the caller talks to the desk: nothing hangs the call up, the run stays open.
        await waitFor('the conversation over', async () => (await runDetail(runId)).logs.voice !== undefined, 10_000)
        await Bun.sleep(300)
        const run = runRow(t, runId)
        whileBridged = {
          completed: run.state === 'completed',
          hangups: hangupRequests().length,
          voiceLogged: run.logs.voice !== undefined,
          transfer: run.logs.transfer,
        }
      },
    }),
    async talk(media, call) {
      const caller = twilioCaller(media)
      await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
      caller.press('0#')
      await waitFor('the transfer over', () => call.status === 'completed', 20_000)
      caller.stop()
    },
  })
  const run = await untilWritten(runId)

  expect(whileBridged).toEqual({
    completed: false,
    hangups: 0,
    voiceLogged: true,
    transfer: { destination: DESK, connected_at: expect.any(String) },
  })
  expect(hangupRequests()).toEqual([])
  // The agent can transfer: Twilio gets no time limit of ours, so the talk with the desk is not cut at the agent's.
  const [dial] = fake.requests.filter((request) => request.path.endsWith('/Calls.json'))
  expect(dial.body.To).toBe('+14155550123')
  expect(dial.body.TimeLimit).toBeUndefined()
  expect(updates()).toHaveLength(1)
  const eventsUrl = `${PUBLIC_URL}/api/v1/telephony/twilio/transfer/${runId}`
  expect(updates()[0].body.Twiml).toBe(
    // The caller id shown to the desk is the run's own number, as on every carrier.
    `<Response><Dial timeout="20" callerId="+14155550100" action="${eventsUrl}" method="POST">` +
      `<Number statusCallbackEvent="answered" statusCallback="${eventsUrl}" statusCallbackMethod="POST">${DESK}</Number></Dial></Response>`,
  )
  expect(speechInputs()).toEqual([GREETING, 'Putting you through.'])
  expect(run.gathered_context).toMatchObject({
    call_disposition: 'call_transferred',
    transfer_destination: DESK,
    transfer_talk_seconds: 42,
  })
  expect(run.logs.session.end_reason).toBe('call_transferred')
  expect(run.logs.telephony).toMatchObject({ outcome: 'completed', transfer: { destination: DESK, talk_seconds: 42 } })
  expect(run.logs.tool_calls).toMatchObject([{ function_name: 'front_desk', type: 'transfer_call', status: 'success' }])
  expect(run.logs.voice.media_lost).toBeUndefined()
}, 60_000)

for (const [outcome, reason, streamEndsLate] of [
  ['busy', 'busy', false],
  ['no-answer', 'no_answer', false],
  ['busy', 'busy', true],
] as const)
  test(`${outcome}${streamEndsLate ? ', the old stream still open when the action comes' : ''}: the model reads transfer_failed, the caller comes back on a new stream and hears the next answer; the call is not transferred`, async () => {
    models.chat.queue(callTool('front_desk', {}), say('The desk is busy. Can I take a message?'))
    const { runId } = await placeCall({
      transfer: () => ({ outcome, streamEndsLate }),
      async talk(media, call) {
        const caller = twilioCaller(media)
        await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
        caller.press('0#')
        await waitFor('the caller back on a second stream', () => call.streams.length === 2, 20_000)
        caller.stop()
        // We closed the stream the transfer replaced, whether or not Twilio had ended it yet.
        await media.closed
        const back = twilioCaller(call.streams[1])
        await waitFor(
          'the next answer played on it',
          () => speechInputs().includes('Can I take a message?') && back.marks() >= 2,
          20_000,
        )
        expect(back.audioFrames()).toBeGreaterThan(0)
        back.stop()
      },
    })
    const run = await untilWritten(runId)

    const toolResult = models
      .requestsTo('/chat/completions')[1]
      .body.messages.find((message: { role: string }) => message.role === 'tool')
    expect(JSON.parse(toolResult.content)).toMatchObject({ status: 'transfer_failed', reason })
    expect(speechInputs()).toEqual([GREETING, 'Putting you through.', 'The desk is busy.', 'Can I take a message?'])
    expect(run.logs.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'The desk is busy. Can I take a message?' })
    expect(run.logs.tool_calls).toMatchObject([{ function_name: 'front_desk', type: 'transfer_call', status: 'error' }])
    expect(run.gathered_context.transfer_destination).toBeUndefined()
    expect(run.logs.telephony).toMatchObject({ outcome: 'completed', provider_status: 'completed' })
    expect(run.logs.telephony.transfer).toBeUndefined()
    expect(run.logs.voice.media_lost).toBeUndefined()
    expect(hangupRequests()).toEqual([])
  }, 60_000)
