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
  untilRunCompleted,
  type CarrierAgent,
} from '../../support/fake-carriers/calls'
import { startFakeCloudonix, type CloudonixCallPlan, type FakeCloudonix } from '../../support/fake-carriers/cloudonix'
import { PUBLIC_URL, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { waitFor } from '../../support/wait'

/** Cloudonix end to end against a local fake: application calls with inline CXML, CDRs, inbound voice requests. */

const CDR_URL = `${PUBLIC_URL}/api/v1/telephony/cloudonix/cdr`
let t: CarrierTestApp
let fake: FakeCloudonix
let agent: CarrierAgent
let plan: () => CloudonixCallPlan
let streams: AnsweredCall[]
let configurationId: number

beforeEach(async () => {
  plan = () => 'hold'
  ;({ t, fake, agent, streams, configurationId } = await startCarrierTest((app) => {
    const started = startFakeCloudonix({ reach: app.reach, cdrUrl: CDR_URL, plan: () => plan() })
    app.ctx.providerApis.cloudonix = started.baseUrl
    return {
      fake: started,
      config: {
        provider: 'cloudonix',
        bearer_token: started.bearerToken,
        domain_id: started.domain,
        application_name: 'acme-voice',
      },
    }
  }))
})
afterEach(() => stopCarrierTest(t, fake))

const placeCall = () => placeCarrierCall(t, agent)

test('the application API gets destination, caller id, ring timeout and CXML connecting the media stream', async () => {
  const runId = await placeCall()
  const dial = fake.requests[0]
  expect(dial.path).toBe(`/calls/${fake.domain}/application`)
  expect(dial.body).toMatchObject({ destination: '+14155550123', 'caller-id': '+14155550100', timeout: 30 })
  expect(dial.body.cxml).toMatch(
    /<Response><Connect><Stream url="wss:\/\/ringbase\.example\.com\/api\/v1\/telephony\/ws\/\d+\/\d+\/\d+\/[0-9a-f]{64}"\/><\/Connect><\/Response>$/,
  )
  expect(runRow(t, runId).provider_call_id).toBe('cx-session-1')
  const provider = t.ctx.telephony.providerFor('cloudonix')!
  const callId = runRow(t, runId).call_id!
  expect(await provider.callState(configurationId, callId)).toBe('alive')
  await provider.hangup(configurationId, callId)
  expect(await provider.callState(configurationId, callId)).toBe('gone')
  expect((await untilRunCompleted(t, runId)).disposition).toBe('completed')
})

describe('CDRs settle the run', () => {
  test.each([
    ['BUSY', 'busy'],
    ['NOANSWER', 'no-answer'],
    ['CANCEL', 'canceled'],
    ['FAILED', 'failed'],
    ['CONGESTION', 'failed'],
  ] as const)('%s → %s', async (disposition, expected) => {
    plan = () => ({ disposition })
    const row = await untilRunCompleted(t, await placeCall())
    expect(row.disposition).toBe(expected)
    expect(loggedStatuses(row)).toEqual([disposition])
  })

  test('ANSWER after a media stream: completed with billsec as the talk time', async () => {
    plan = () => ({
      disposition: 'ANSWER',
      billsec: 31,
      talk: async () => {
        await waitFor('stream admitted', () => streams.length === 1)
      },
    })
    const row = await untilRunCompleted(t, await placeCall())
    expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 31 })
  })

  test('a CDR without the API key → 401, with another key → 403; an unknown session → 404; nothing changes', async () => {
    const runId = await placeCall()
    const body = { session: { token: 'cx-session-1' }, disposition: 'BUSY', billsec: 0 }
    expect((await fake.cdr(CDR_URL, body, null)).status).toBe(401)
    expect((await fake.cdr(CDR_URL, body, 'XI-someone-else')).status).toBe(403)
    expect((await fake.cdr(CDR_URL, { ...body, session: { token: 'cx-unknown' } })).status).toBe(404)
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
  })
})

test('inbound: a voice application request for a number with an agent gets CXML for a new inbound run', async () => {
  const inbound = await createCarrierAgent(t)
  await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
    body: { address: '+14155550199', inbound_workflow_id: inbound.id },
  })
  const url = `${PUBLIC_URL}/api/v1/telephony/inbound/run`
  const params = { CallSid: 'cx-in-1', Session: 'cx-in-1', From: '+447700900123', To: '+14155550199' }
  expect((await fake.voiceRequest(url, params, 'XI-wrong')).status).toBe(403)
  const accepted = await fake.voiceRequest(url, params)
  expect(await accepted.text()).toContain('<Connect><Stream url="wss://ringbase.example.com/api/v1/telephony/ws/')
  expect(runRow(t, latestRunId(t))).toMatchObject({ call_type: 'inbound', provider_call_id: 'cx-in-1' })
  // The call's CDR later finds the inbound run by its session token.
  await fake.cdr(CDR_URL, { session: { token: 'cx-in-1' }, disposition: 'ANSWER', billsec: 12 })
  expect(await untilRunCompleted(t, latestRunId(t))).toMatchObject({
    disposition: 'completed',
    call_duration_seconds: 12,
  })
  expect(
    await (
      await fake.voiceRequest(url, { ...params, CallSid: 'cx-in-2', Session: 'cx-in-2', To: '+14155550111' })
    ).text(),
  ).toContain('<Hangup/>')
})
