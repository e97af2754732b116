import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { AnsweredCall } from '../../../src/telephony/ari/call-session'
import {
  createCarrierAgent,
  placeCarrierCall,
  startCarrierTest,
  stopCarrierTest,
  latestRunId,
  loggedStatuses,
  runRow,
  triggerCall,
  untilRunCompleted,
  type CarrierAgent,
} from '../../support/fake-carriers/calls'
import { createHmac } from 'node:crypto'
import { connectMedia, PUBLIC_URL, type CarrierTestApp } from '../../support/fake-carriers/shared'
import {
  startFakeTwilio,
  twilioSignatureOf,
  type FakeTwilio,
  type TwilioCallPlan,
} from '../../support/fake-carriers/twilio'
import { UNREACHABLE_URL } from '../../support/app'
import { waitFor } from '../../support/wait'

/**
 * Twilio end to end against a local fake built from Twilio's documentation: calls placed through the API trigger,
 * signed status callbacks for every outcome, the answer URL and its TwiML, the media stream, forged and replayed
 * callbacks, inbound calls and the REST errors.
 */

let t: CarrierTestApp
let fake: FakeTwilio
let agent: CarrierAgent
let plan: (to: string) => TwilioCallPlan
let streams: AnsweredCall[]

beforeEach(async () => {
  plan = () => 'hold'
  ;({ t, fake, agent, streams } = await startCarrierTest((app) => {
    const started = startFakeTwilio({ reach: app.reach, plan: (call) => plan(call.params.To) })
    app.ctx.providerApis.twilio = started.baseUrl
    return {
      fake: started,
      config: { provider: 'twilio', account_sid: started.accountSid, auth_token: started.authToken },
    }
  }))
})
afterEach(() => stopCarrierTest(t, fake))

const placeCall = (to?: string) => placeCarrierCall(t, agent, to)

describe('placing a call', () => {
  test('the Calls API gets the caller id, ring timeout, time limit and our callback URLs; the run keeps the CallSid', async () => {
    const runId = await placeCall()
    const [dial] = fake.requests.filter((request) => request.method === 'POST')
    expect(dial.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Calls.json`)
    expect(dial.body).toMatchObject({
      To: '+14155550123',
      From: '+14155550100',
      Timeout: '30',
      TimeLimit: '600',
      Method: 'POST',
      StatusCallbackMethod: 'POST',
      Url: `${PUBLIC_URL}/api/v1/telephony/twilio/answer/${runId}`,
      StatusCallback: `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/${runId}`,
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
    })
    expect(dial.body.MachineDetection).toBeUndefined()
    const [sid] = fake.calls.keys()
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', provider_call_id: sid })
  })

  test("a refusal is a 400 with Twilio's message, an unreachable Twilio a 502; neither shows a credential", async () => {
    fake.failNext(400, {
      code: 21211,
      message: `Invalid 'To' Phone Number for account ${fake.accountSid}`,
      status: 400,
    })
    const refused = await triggerCall(t, agent, '+14155550123')
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toBe(
      "Failed to initiate call: Twilio refused to place the call (HTTP 400): Invalid 'To' Phone Number for account ***",
    )
    expect(runRow(t, latestRunId(t))).toMatchObject({ state: 'completed', disposition: 'failed' })

    t.ctx.providerApis.twilio = UNREACHABLE_URL
    const unreachable = await triggerCall(t, agent, '+14155550123')
    expect(unreachable.status).toBe(502)
    expect(unreachable.body.detail).toBe(
      'Failed to initiate call: Failed to reach Twilio to place the call: connection refused',
    )
    for (const text of [refused.text, unreachable.text]) {
      expect(text).not.toContain(fake.accountSid)
      expect(text).not.toContain(fake.authToken)
    }
  })

  test('hang-up and call state go to the Calls resource of the CallSid', async () => {
    const runId = await placeCall()
    const { call_id: callId, provider_call_id: sid } = runRow(t, runId)
    const twilio = t.ctx.telephony.providerFor('twilio')!
    const configurationId = runRow(t, runId).initial_context.telephony_configuration_id
    expect(await twilio.callState(configurationId, callId!)).toBe('alive')
    await twilio.hangup(configurationId, callId!)
    expect(fake.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `/2010-04-01/Accounts/${fake.accountSid}/Calls/${sid}.json`,
      body: { Status: 'completed' },
    })
    expect(await twilio.callState(configurationId, callId!)).toBe('gone')
    expect(await twilio.callState(configurationId, 'no-such-call')).toBe('unknown')
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('canceled')
  })
})

describe('status callbacks settle the run', () => {
  test.each([
    ['busy', 'busy'],
    ['no-answer', 'no-answer'],
    ['failed', 'failed'],
    ['canceled', 'canceled'],
  ] as const)('%s → disposition %s, never connected', async (outcome, disposition) => {
    plan = () => ({ outcome })
    const runId = await placeCall()
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ disposition, call_duration_seconds: 0 })
    expect(row.gathered_context).toMatchObject({ call_disposition: disposition, mapped_call_disposition: disposition })
    expect(loggedStatuses(row)).toEqual(['initiated', 'ringing', outcome])
    expect(row.logs.telephony).toMatchObject({ provider_status: outcome })
  })

  test("answered: the answer URL connects the media stream, the run runs, then completes with Twilio's duration", async () => {
    plan = () => ({
      outcome: 'completed',
      durationSeconds: 42,
      talk: async () => {
        await waitFor('media stream handed to the pipeline', () => streams.length === 1)
        expect(runRow(t, streams[0].runId).state).toBe('running')
      },
    })
    const runId = await placeCall()
    await fake.idle()
    const [call] = fake.calls.values()
    expect(call.twiml).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?><Response><Connect><Stream url="wss:\/\/ringbase\.example\.com\/api\/v1\/telephony\/ws\/\d+\/\d+\/\d+\/[0-9a-f]{64}"\/><\/Connect><\/Response>$/,
    )
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('completed')
    expect(loggedStatuses(row)).toEqual(['initiated', 'ringing', 'in-progress', 'in-progress', 'completed'])
    expect(streams[0]).toMatchObject({ runId, direction: 'outbound' })
  })

  test('with voicemail detection on, Twilio is asked for AMD; a machine gets <Hangup/> and the run ends as voicemail', async () => {
    agent = await createCarrierAgent(t, { voicemail_detection: { enabled: true } })
    plan = () => ({ outcome: 'completed', answeredBy: 'machine_end_beep' })
    const runId = await placeCall()
    await fake.idle()
    const [call] = fake.calls.values()
    expect(call.params.MachineDetection).toBe('Enable')
    expect(call.twiml).toContain('<Response><Hangup/></Response>')
    expect(call.media).toBeUndefined()
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('voicemail_detected')
    expect(row.gathered_context).toMatchObject({ answered_by: 'machine_end_beep', answering_machine_detected: true })
  })

  test('unsigned → 401, badly signed → 403, and neither is logged or changes the run', async () => {
    const runId = await placeCall()
    const [sid] = fake.calls.keys()
    const url = `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/${runId}`
    const params = { CallSid: sid, CallStatus: 'busy', AccountSid: fake.accountSid }
    const unsigned = await fake.post(url, params, null)
    expect(unsigned.status).toBe(401)
    expect(await unsigned.json()).toEqual({ detail: 'Missing webhook signature' })
    const forged = await fake.post(url, params, twilioSignatureOf('not-the-token', url, params))
    expect(forged.status).toBe(403)
    // A valid signature for another run's URL does not carry over.
    const otherUrl = `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/${runId + 1}`
    expect((await fake.post(url, params, twilioSignatureOf(fake.authToken, otherUrl, params))).status).toBe(403)
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
  })

  test('a webhook a Webhook Rule signed with its SharedKey (X-Twilio-Webhooks-Signature-Settings, HMAC-SHA256) is not supported: 403, nothing changes', async () => {
    const runId = await placeCall()
    const [sid] = fake.calls.keys()
    const url = `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/${runId}`
    const params = { CallSid: sid, CallStatus: 'busy', AccountSid: fake.accountSid }
    // As twilio-node's webhook validation describes it: the same signed string, the SharedKey's secret and algorithm.
    const sharedKeySecret = 'shared-key-secret-0001'
    const signature = createHmac('sha256', sharedKeySecret)
      .update(
        url +
          Object.keys(params)
            .sort()
            .map((name) => `${name}${params[name as keyof typeof params]}`)
            .join(''),
      )
      .digest('base64')
    expect(
      (
        await fake.post(url, params, signature, {
          'x-twilio-webhooks-signature-settings': 'key=HKshared0001,algorithm=HMAC_SHA256',
        })
      ).status,
    ).toBe(403)
    // Nor does the auth token's own signature pass under a header that says another key signed it.
    expect(
      (
        await fake.post(url, params, undefined, {
          'x-twilio-webhooks-signature-settings': 'key=HKshared0001,algorithm=HMAC_SHA1',
        })
      ).status,
    ).toBe(403)
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
  })

  test('duplicates, late and out-of-order callbacks are logged but never move a finished run', async () => {
    const runId = await placeCall()
    const [sid] = fake.calls.keys()
    const url = `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/${runId}`
    const status = (CallStatus: string, extra: Record<string, string> = {}) =>
      fake.post(url, { CallSid: sid, CallStatus, ...extra })
    expect((await status('busy')).status).toBe(200)
    const settled = await untilRunCompleted(t, runId)
    for (const [late, extra] of [
      ['busy'],
      ['ringing'],
      ['in-progress'],
      ['completed', { CallDuration: '60' }],
    ] as const) {
      expect((await status(late, extra)).status).toBe(200)
    }
    const row = runRow(t, runId)
    expect(row).toMatchObject({ state: 'completed', disposition: 'busy', call_duration_seconds: 0 })
    expect(row.gathered_context).toEqual(settled.gathered_context)
    expect(loggedStatuses(row)).toEqual(['busy', 'busy', 'ringing', 'in-progress', 'completed'])
    // A callback about another call, validly signed, is refused.
    expect((await fake.post(url, { CallSid: 'CA-other', CallStatus: 'completed' })).status).toBe(403)
  })

  test('a callback for an unknown run or another carrier is 404; bodies over 64 KiB are refused', async () => {
    const unknown = await fake.post(`${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/999`, {
      CallSid: 'CA1',
      CallStatus: 'busy',
    })
    expect(unknown.status).toBe(404)
    const huge = await fake.post(`${PUBLIC_URL}/api/v1/telephony/twilio/status-callback/1`, {
      CallSid: 'CA1',
      Junk: 'x'.repeat(70_000),
    })
    expect(huge.status).toBe(413)
    expect((await fake.post(`${PUBLIC_URL}/api/v1/telephony/nobody/status-callback/1`, {})).status).toBe(404)
  })
})

describe('inbound calls', () => {
  let inboundAgent: CarrierAgent
  const inboundUrl = `${PUBLIC_URL}/api/v1/telephony/inbound/run`
  const offer = (to: string, callSid = 'CA-inbound-1') =>
    fake.post(inboundUrl, {
      CallSid: callSid,
      AccountSid: fake.accountSid,
      From: '+447700900123',
      To: to,
      CallStatus: 'ringing',
      Direction: 'inbound',
    })

  beforeEach(async () => {
    inboundAgent = await createCarrierAgent(t)
    const configurationId = runConfigurationId()
    await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
      body: { address: '+14155550199', inbound_workflow_id: inboundAgent.id },
    })
  })
  const runConfigurationId = () =>
    t.ctx.sqlite.query<{ id: number }, []>("SELECT id FROM telephony_configurations WHERE provider = 'twilio'").get()!
      .id

  test('a call to a number with an inbound agent creates an inbound run and answers with <Connect><Stream>', async () => {
    const response = await offer('+14155550199')
    expect(response.status).toBe(200)
    const twiml = await response.text()
    const url = /<Stream url="([^"]+)"/.exec(twiml)![1]
    const row = runRow(t, latestRunId(t))
    expect(row).toMatchObject({ call_type: 'inbound', state: 'initialized', provider_call_id: 'CA-inbound-1' })
    expect(row.initial_context).toMatchObject({
      direction: 'inbound',
      provider: 'twilio',
      caller_number: '+447700900123',
      called_number: '+14155550199',
    })
    // Twilio retrying the same webhook gets the same stream, not a second run.
    expect(await (await offer('+14155550199')).text()).toBe(twiml)
    expect(latestRunId(t)).toBe(row.id)

    const media = connectMedia(t.reach(url.replace(/&amp;/g, '&')))
    await media.opened
    media.send({ event: 'start', streamSid: 'MZ1', start: { streamSid: 'MZ1', callSid: 'CA-inbound-1' } })
    await waitFor('stream admitted', () => streams.length === 1)
    expect(runRow(t, row.id).state).toBe('running')
    media.send({ event: 'stop', streamSid: 'MZ1' })
    const ended = await untilRunCompleted(t, row.id)
    expect(ended.disposition).toBe('completed')
  })

  test("the number's status callback URL (no run in it) finds the inbound run by CallSid", async () => {
    await offer('+14155550199', 'CA-inbound-7')
    const runId = latestRunId(t)
    const url = `${PUBLIC_URL}/api/v1/telephony/twilio/status-callback`
    expect(
      (await fake.post(url, { CallSid: 'CA-inbound-7', CallStatus: 'completed', CallDuration: '14' }, 'forged')).status,
    ).toBe(403)
    expect((await fake.post(url, { CallSid: 'CA-unknown', CallStatus: 'completed' })).status).toBe(404)
    expect(
      (await fake.post(url, { CallSid: 'CA-inbound-7', CallStatus: 'completed', CallDuration: '14' })).status,
    ).toBe(200)
    expect(await untilRunCompleted(t, runId)).toMatchObject({ disposition: 'completed', call_duration_seconds: 14 })
  })

  test('no such number, no inbound agent, or no capacity → <Reject/> and no run', async () => {
    const runsBefore = latestRunId(t)
    expect(await (await offer('+14155550111')).text()).toContain('<Response><Reject/></Response>')
    expect(await (await offer('+14155550100', 'CA-2')).text()).toContain('<Reject/>')
    t.ctx.sqlite.query('UPDATE organizations SET concurrent_call_limit = 0').run()
    expect(await (await offer('+14155550199', 'CA-3')).text()).toContain('<Reject/>')
    expect(latestRunId(t)).toBe(runsBefore)
  })

  test('an unsigned or forged offer for one of our numbers is refused before a run exists', async () => {
    const params = { CallSid: 'CA-x', From: '+447700900123', To: '+14155550199' }
    expect((await fake.post(inboundUrl, params, null)).status).toBe(401)
    expect((await fake.post(inboundUrl, params, 'forged')).status).toBe(403)
    expect((await fake.post(`${PUBLIC_URL}/api/v1/telephony/twilio/inbound`, params, 'forged')).status).toBe(403)
    expect(t.ctx.sqlite.query("SELECT count(*) AS n FROM workflow_runs WHERE call_type = 'inbound'").get()).toEqual({
      n: 0,
    })
  })
})
