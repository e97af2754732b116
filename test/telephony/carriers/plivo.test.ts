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
import { nonceSignatureOf, startFakePlivo, type FakePlivo, type PlivoCallPlan } from '../../support/fake-carriers/plivo'
import { PUBLIC_URL, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { waitFor } from '../../support/wait'

/** Plivo and Vobiz (same API shape) end to end against local fakes built from the documented formats. */

describe.each(['plivo', 'vobiz'] as const)('%s', (variant) => {
  let t: CarrierTestApp
  let fake: FakePlivo
  let agent: CarrierAgent
  let plan: () => PlivoCallPlan
  let streams: AnsweredCall[]
  let configurationId: number
  const header = variant === 'plivo' ? 'X-Plivo-Signature' : 'X-Vobiz-Signature'

  beforeEach(async () => {
    plan = () => 'hold'
    ;({ t, fake, agent, streams, configurationId } = await startCarrierTest((app) => {
      const started = startFakePlivo({ variant, reach: app.reach, plan: () => plan() })
      app.ctx.providerApis[variant] = variant === 'vobiz' ? `${started.baseUrl}/api` : started.baseUrl
      return {
        fake: started,
        config: { provider: variant, auth_id: started.authId, auth_token: started.authToken, application_id: 'app-1' },
      }
    }))
  })
  afterEach(() => stopCarrierTest(t, fake))

  const placeCall = () => placeCarrierCall(t, agent)

  test('the Call API gets numbers without +, our answer / hangup / ring URLs, ring timeout and time limit', async () => {
    const runId = await placeCall()
    const dial = fake.requests[0]
    expect(dial.path).toBe(`${variant === 'vobiz' ? '/api' : ''}/v1/Account/${fake.authId}/Call/`)
    expect(dial.body).toEqual({
      from: '14155550100',
      to: '14155550123',
      ring_timeout: 30,
      time_limit: 600,
      answer_url: `${PUBLIC_URL}/api/v1/telephony/${variant}/answer/${runId}`,
      answer_method: 'POST',
      hangup_url: `${PUBLIC_URL}/api/v1/telephony/${variant}/hangup-callback/${runId}`,
      hangup_method: 'POST',
      ring_url: `${PUBLIC_URL}/api/v1/telephony/${variant}/ring-callback/${runId}`,
      ring_method: 'POST',
    })
    expect(runRow(t, runId).provider_call_id).toBe(`${variant}-call-1`)
  })

  test.each([
    ['busy', 'busy'],
    ['timeout', 'no-answer'],
    ['failed', 'failed'],
    ['cancel', 'canceled'],
  ] as const)('hang-up callback CallStatus %s → %s', async (outcome, disposition) => {
    plan = () => ({ outcome })
    const row = await untilRunCompleted(t, await placeCall())
    expect(row.disposition).toBe(disposition)
    expect(loggedStatuses(row)).toEqual(['ringing', outcome])
  })

  test('answered: Plivo XML opens a bidirectional µ-law stream; the hang-up callback completes the run with Duration', async () => {
    plan = () => ({
      outcome: 'completed',
      durationSeconds: 13,
      talk: async () => {
        await waitFor('stream admitted', () => streams.length === 1)
      },
    })
    const runId = await placeCall()
    await fake.idle()
    const [call] = fake.calls.values()
    expect(call.xml).toMatch(
      /<Response><Stream bidirectional="true" keepCallAlive="true" contentType="audio\/x-mulaw;rate=8000">wss:\/\/ringbase\.example\.com\/api\/v1\/telephony\/ws\/[^<]+<\/Stream><\/Response>$/,
    )
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 13 })
    expect(streams[0]).toMatchObject({ runId, direction: 'outbound' })
  })

  test('machine detection: asked for when voicemail detection is on; a machine is hung up on and ends as voicemail', async () => {
    agent = await createCarrierAgent(t, { voicemail_detection: { enabled: true } })
    plan = () => ({ outcome: 'completed', machine: true })
    const runId = await placeCall()
    expect(fake.requests[0].body).toMatchObject({
      machine_detection: 'true',
      machine_detection_url: `${PUBLIC_URL}/api/v1/telephony/${variant}/machine-detection/${runId}`,
    })
    const row = await untilRunCompleted(t, runId)
    expect(fake.requests.some((request) => request.method === 'DELETE')).toBe(true)
    expect(row.disposition).toBe('voicemail_detected')
  })

  test('unsigned → 401, a wrong signature or one for another URL → 403; nothing changes', async () => {
    const runId = await placeCall()
    const url = `${PUBLIC_URL}/api/v1/telephony/${variant}/hangup-callback/${runId}`
    const params = {
      CallUUID: `${variant}-call-1`,
      RequestUUID: `${variant}-call-1`,
      CallStatus: 'busy',
      Direction: 'outbound',
    }
    expect((await fake.post(url, params, {})).status).toBe(401)
    const nonce = '424242'
    const forged = nonceSignatureOf(variant, 'wrong-token', url, params, nonce)
    expect((await fake.post(url, params, { [`${header}-V3`]: forged, [`${header}-V3-Nonce`]: nonce })).status).toBe(403)
    const otherUrl = `${PUBLIC_URL}/api/v1/telephony/${variant}/hangup-callback/${runId + 1}`
    const forOther = nonceSignatureOf(variant, fake.authToken, otherUrl, params, nonce)
    expect((await fake.post(url, params, { [`${header}-V3`]: forOther, [`${header}-V3-Nonce`]: nonce })).status).toBe(
      403,
    )
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
    // Several candidate signatures in one header: one valid is enough.
    const valid = nonceSignatureOf(variant, fake.authToken, url, params, nonce)
    expect(
      (await fake.post(url, params, { [`${header}-V3`]: `${forged},${valid}`, [`${header}-V3-Nonce`]: nonce })).status,
    ).toBe(200)
    expect((await untilRunCompleted(t, runId)).disposition).toBe('busy')
  })

  test('hang-up cancels a ringing call request; call state asks for the live call', async () => {
    const runId = await placeCall()
    const provider = t.ctx.telephony.providerFor(variant)!
    const callId = runRow(t, runId).call_id!
    fake.calls.get(`${variant}-call-1`)!.status = 'in-progress'
    expect(await provider.callState(configurationId, callId)).toBe('alive')
    fake.calls.get(`${variant}-call-1`)!.status = 'ringing'
    expect(await provider.callState(configurationId, callId)).toBe('gone')
    await provider.hangup(configurationId, callId)
    expect(
      fake.requests
        .filter((request) => request.method === 'DELETE')
        .map((request) => request.path.replace(/^\/api/, '')),
    ).toEqual([
      `/v1/Account/${fake.authId}/Call/${variant}-call-1/`,
      `/v1/Account/${fake.authId}/Request/${variant}-call-1/`,
    ])
    expect((await untilRunCompleted(t, runId)).disposition).toBe('canceled')
  })

  test('inbound: the application answer URL opens an inbound run; a number without an agent is rejected', async () => {
    const inbound = await createCarrierAgent(t)
    await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
      body: { address: '+14155550199', inbound_workflow_id: inbound.id },
    })
    const url = `${PUBLIC_URL}/api/v1/telephony/inbound/run`
    const offer = (to: string, callUuid: string) =>
      fake.post(url, {
        CallUUID: callUuid,
        From: '447700900123',
        To: to,
        Direction: 'inbound',
        CallStatus: 'ringing',
        Event: 'StartApp',
      })
    const accepted = await offer('14155550199', 'in-1')
    expect(await accepted.text()).toContain('<Stream bidirectional="true"')
    expect(runRow(t, latestRunId(t))).toMatchObject({
      call_type: 'inbound',
      provider_call_id: 'in-1',
      initial_context: { called_number: '+14155550199' },
    })
    // The application's hang-up callback (Plivo sends it to the answer URL unless told otherwise) ends it.
    expect(
      (
        await fake.post(url, {
          CallUUID: 'in-1',
          Direction: 'inbound',
          CallStatus: 'completed',
          Duration: '4',
          Event: 'Hangup',
        })
      ).status,
    ).toBe(200)
    expect((await untilRunCompleted(t, latestRunId(t))).disposition).toBe('completed')
    const before = latestRunId(t)
    expect(await (await offer('14155550100', 'in-2')).text()).toContain('<Hangup reason="rejected"/>')
    expect(latestRunId(t)).toBe(before)
  })
})
