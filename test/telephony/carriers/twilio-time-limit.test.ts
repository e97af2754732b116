import { expect, test } from 'bun:test'
import { createCarrierLine, startCarrierVoiceApp, stopCarrierVoiceApp } from '../../support/fake-carriers/calls'
import { startFakeTwilio, twilioCaller } from '../../support/fake-carriers/twilio'
import { createVoiceAgent, runDetail } from '../../support/voice-calls'
import { waitFor } from '../../support/wait'

/**
 * The call's time limit on a carrier (calls/time-limit.ts, the same enforcer as on ARI: test/calls/voice-call.test.ts):
 * a Twilio call whose caller stays on the line, silent, is ended at the agent's max call duration.
 */

test("the agent's max call duration ends the conversation and hangs the call up at the carrier (calls/time-limit.ts)", async () => {
  const { t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100 })
  let hungUpDuringTalk = false
  const fake = startFakeTwilio({
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
  try {
    t.ctx.providerApis.twilio = fake.baseUrl
    await createCarrierLine(t, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
    const agent = await createVoiceAgent(t, { configurations: { max_call_duration_seconds: 1 } })
    const started = await t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, {
      body: { phone_number: '+14155550123' },
    })
    expect(started.status, started.text).toBe(200)
    const runId = started.body.workflow_run_id
    await waitFor(
      'run completed and its conversation written',
      async () => {
        const run = await runDetail(t, agent, runId)
        return run.is_completed && run.logs.voice !== undefined
      },
      30_000,
    )
    const run = await runDetail(t, agent, runId)
    expect(hungUpDuringTalk).toBe(true)
    expect(run.logs.session.end_reason).toBe('call_duration_exceeded')
    expect(run.gathered_context.mapped_call_disposition).toBe('call_duration_exceeded')
    expect(run.logs.telephony).toMatchObject({ outcome: 'completed' })
  } finally {
    stopCarrierVoiceApp({ t, models }, fake)
  }
}, 60_000)
