import { afterAll, beforeAll, expect, test } from 'bun:test'
import {
  createCarrierLine,
  placeCarrierCall,
  startCarrierVoiceApp,
  stopCarrierVoiceApp,
} from '../../support/fake-carriers/calls'
import { type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTwilio, twilioCaller, type FakeTwilio } from '../../support/fake-carriers/twilio'
import { say, type FakeModels } from '../../support/fake-models'
import { callerSpeech, silence8k } from '../../support/voice'
import { turnsOf, untilWritten } from '../../support/voice-calls'
import { waitFor } from '../../support/wait'

/**
 * A short conversation over a Twilio media stream: the call placed through the API trigger on the fake Twilio, its
 * answer URL opening the stream, the same voice pipeline and conversation engine as ARI calls (fake model servers
 * for STT, LLM and TTS), the caller heard, answered, then hanging up; the run carries the transcript and recordings.
 */

const GREETING = 'Hello, this is Ava from Acme.'
let t: CarrierTestApp
let fake: FakeTwilio
let models: FakeModels

beforeAll(async () => {
  ;({ t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100 }))
})
afterAll(() => {
  stopCarrierVoiceApp({ t, models }, fake)
})

test('the caller hears the greeting, is heard and answered, hangs up; the run has the conversation and its recordings', async () => {
  models.transcription.queue({ text: 'Can I book a table for two tonight?' })
  models.chat.queue(say('Of course. Which time suits you?'))
  const speechRequests = () => models.requestsTo('/audio/speech').map((request) => request.body.input)
  fake = startFakeTwilio({
    reach: t.reach,
    plan: () => ({
      outcome: 'completed',
      durationSeconds: 6,
      talk: async (media) => {
        const caller = twilioCaller(media)
        await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
        expect(media.texts.filter((message) => message?.event === 'media').length).toBeGreaterThan(0)
        await caller.speak(await callerSpeech('Can I book a table for two tonight?'))
        await caller.speak(silence8k(1_200))
        await waitFor('the answer played', () => speechRequests().length >= 3 && caller.marks() >= 3, 10_000)
        caller.stop()
      },
    }),
  })
  t.ctx.providerApis.twilio = fake.baseUrl
  await createCarrierLine(t, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
  const triggerPath = crypto.randomUUID()
  const agent = (
    await t.request('POST', '/api/v1/workflow/create/definition', {
      body: {
        name: 'Ava',
        workflow_definition: {
          nodes: [
            {
              id: '1',
              type: 'startCall',
              position: { x: 0, y: 0 },
              data: { name: 'Start', greeting: GREETING, prompt: 'Help the caller book a table.' },
            },
            { id: '2', type: 'endCall', position: { x: 200, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
            { id: '3', type: 'trigger', position: { x: 0, y: 200 }, data: { name: 'API', trigger_path: triggerPath } },
          ],
          edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
        },
      },
    })
  ).body
  const runId = await placeCarrierCall(t, { id: agent.id, triggerPath })
  const run = await untilWritten(t, agent, runId, 30_000)
  expect(speechRequests()).toEqual([GREETING, 'Of course.', 'Which time suits you?'])
  expect(turnsOf(run)).toEqual([
    ['agent', GREETING],
    ['user', 'Can I book a table for two tonight?'],
    ['agent', 'Of course. Which time suits you?'],
  ])
  expect(run.usage_info.call_duration_seconds).toBe(6)
  expect(run.logs.telephony).toMatchObject({ outcome: 'completed', provider_status: 'completed' })
  expect(run.recording_url).toBe(`recordings/1/${runId}.wav`)
  expect(run.mode).toBe('twilio')
}, 60_000)
