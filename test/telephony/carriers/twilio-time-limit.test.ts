import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createCarrierLine, startCarrierVoiceApp } from '../../support/fake-carriers/calls'
import { type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTwilio, twilioCaller, type FakeTwilio } from '../../support/fake-carriers/twilio'
import type { FakeModels } from '../../support/fake-models'
import { waitFor } from '../../support/wait'

/**
 * The call's time limit on a carrier (calls/time-limit.ts, the same enforcer as on ARI: test/calls/voice-call.test.ts):
 * a Twilio call whose caller stays on the line, silent, is ended at the agent's max call duration.
 */

const GREETING = 'Hello, this is Ava from Acme.'
let t: CarrierTestApp
let fake: FakeTwilio
let models: FakeModels

beforeAll(async () => {
  ;({ t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100 }))
})
afterAll(() => {
  fake?.stop()
  models.stop()
  t.stopServer()
  t.close()
})

test("the agent's max call duration ends the conversation and hangs the call up at the carrier (calls/time-limit.ts)", async () => {
  let hungUpDuringTalk = false
  fake = startFakeTwilio({
    reach: t.reach,
    plan: (call) => ({
      outcome: 'completed',
      talk: async (media) => {
        const caller = twilioCaller(media)
        await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
        // The caller stays on the line, silent: only the time limit ends the call.
        await waitFor('the call hung up by Ringbase', () => call.status !== 'in-progress', 10_000)
        hungUpDuringTalk = true
      },
    }),
  })
  t.ctx.providerApis.twilio = fake.baseUrl
  await createCarrierLine(t, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
  const triggerPath = crypto.randomUUID()
  const agent = (
    await t.request('POST', '/api/v1/workflow/create/definition', {
      body: {
        name: 'Brief Ava',
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
        workflow_configurations: { max_call_duration_seconds: 1 },
      },
    })
  ).body
  const started = await t.request('POST', `/api/v1/public/agent/${triggerPath}`, {
    body: { phone_number: '+14155550123' },
  })
  expect(started.status, started.text).toBe(200)
  const runId = started.body.workflow_run_id
  const detail = async () => (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${runId}`)).body
  await waitFor(
    'run completed and its conversation written',
    async () => {
      const run = await detail()
      return run.is_completed && run.logs.voice !== undefined
    },
    30_000,
  )
  const run = await detail()
  expect(hungUpDuringTalk).toBe(true)
  expect(run.logs.session.end_reason).toBe('call_duration_exceeded')
  expect(run.gathered_context.mapped_call_disposition).toBe('call_duration_exceeded')
  expect(run.logs.telephony).toMatchObject({ outcome: 'completed' })
}, 60_000)
