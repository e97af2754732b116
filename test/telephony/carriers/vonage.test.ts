import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
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
import { PUBLIC_URL, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeVonage, vonageConfig, type FakeVonage, type VonageCallPlan } from '../../support/fake-carriers/vonage'
import { waitFor } from '../../support/wait'

/** Vonage end to end against a local fake built from its documentation. */

let t: CarrierTestApp
let fake: FakeVonage
let agent: CarrierAgent
let plan: () => VonageCallPlan
let streams: AnsweredCall[]
let configurationId: number

beforeEach(async () => {
  plan = () => 'hold'
  ;({ t, fake, agent, streams, configurationId } = await startCarrierTest((app) => {
    const started = startFakeVonage({ reach: app.reach, now: () => app.ctx.clock.now(), plan: () => plan() })
    app.ctx.providerApis.vonage = started.baseUrl
    return { fake: started, config: vonageConfig(started) }
  }))
})
afterEach(() => stopCarrierTest(t, fake))

const placeCall = () => placeCarrierCall(t, agent)

describe('placing a call', () => {
  test('POST /v1/calls with the application JWT, numbers without +, our answer and event URLs and the timers', async () => {
    const runId = await placeCall()
    expect(fake.requests[0].body).toEqual({
      to: [{ type: 'phone', number: '14155550123' }],
      from: { type: 'phone', number: '14155550100' },
      answer_url: [`${PUBLIC_URL}/api/v1/telephony/vonage/answer/${runId}`],
      answer_method: 'POST',
      event_url: [`${PUBLIC_URL}/api/v1/telephony/vonage/events/${runId}`],
      event_method: 'POST',
      ringing_timer: 30,
      length_timer: 600,
    })
    expect(runRow(t, runId).provider_call_id).toBe('vonage-call-1')
    const provider = t.ctx.telephony.providerFor('vonage')!
    expect(await provider.callState(configurationId, runRow(t, runId).call_id!)).toBe('alive')
    await provider.hangup(configurationId, runRow(t, runId).call_id!)
    expect(fake.requests.at(-1)).toMatchObject({
      method: 'PUT',
      path: '/v1/calls/vonage-call-1',
      body: { action: 'hangup' },
    })
    expect((await untilRunCompleted(t, runId)).disposition).toBe('canceled')
  })

  test('without a signature secret no call is placed: 400', async () => {
    await t.request('PUT', `/api/v1/organizations/telephony-configs/${configurationId}`, {
      body: { config: { signature_secret: null } },
    })
    const response = await triggerCall(t, agent, '+14155550123')
    expect(response.status).toBe(400)
    expect(response.body.detail).toContain('signature secret')
    expect(fake.requests).toEqual([])
  })
})

describe('events settle the run', () => {
  test.each([
    ['busy', 'busy'],
    ['rejected', 'busy'],
    ['timeout', 'no-answer'],
    ['failed', 'failed'],
    ['cancelled', 'canceled'],
  ] as const)('%s → %s', async (outcome, disposition) => {
    plan = () => ({ outcome })
    const row = await untilRunCompleted(t, await placeCall())
    expect(row.disposition).toBe(disposition)
    expect(loggedStatuses(row)).toEqual(['started', 'ringing', outcome])
  })

  test('answered: the NCCO connects a 16 kHz L16 WebSocket; completed carries the duration', async () => {
    plan = () => ({
      outcome: 'answered',
      durationSeconds: 21,
      talk: async (media) => {
        await waitFor('stream admitted', () => streams.length === 1)
        const heard: number[] = []
        streams[0].media.onAudio((ulaw) => heard.push(ulaw.length))
        media.send(new Uint8Array(new Int16Array(320).fill(500).buffer))
        await waitFor('caller audio reached the pipeline', () => heard.length === 1)
        streams[0].media.send(new Uint8Array(160).fill(0xff))
        await waitFor('agent audio as one 640-byte frame', () => media.binaries.length === 1)
        expect(media.binaries[0].byteLength).toBe(640)
      },
    })
    const runId = await placeCall()
    await fake.idle()
    const [call] = fake.calls.values()
    expect(call.ncco).toEqual([
      {
        action: 'connect',
        endpoint: [
          {
            type: 'websocket',
            uri: expect.stringMatching(/^wss:\/\/ringbase\.example\.com\/api\/v1\/telephony\/ws\//),
            'content-type': 'audio/l16;rate=16000',
            headers: {},
          },
        ],
      },
    ])
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 21 })
  })

  test('machine detection: status machine hangs the call up; the run ends as voicemail', async () => {
    agent = await createCarrierAgent(t, { voicemail_detection: { enabled: true } })
    plan = () => ({ outcome: 'answered', machine: true })
    const runId = await placeCall()
    expect(fake.requests[0].body.machine_detection).toBe('continue')
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('voicemail_detected')
    expect(row.gathered_context).toMatchObject({ answered_by: 'machine' })
  })

  test('no token → 401; wrong secret, wrong api_key, another application, a body not bound by payload_hash, or a token issued too long ago or ahead of our clock → 403', async () => {
    const runId = await placeCall()
    const url = `${PUBLIC_URL}/api/v1/telephony/vonage/events/${runId}`
    const body = { uuid: 'vonage-call-1', status: 'busy' }
    const hash = createHash('sha256').update(JSON.stringify(body)).digest('hex')
    const nowSeconds = Math.floor(t.ctx.clock.now() / 1000)
    expect((await fake.event(url, body, null)).status).toBe(401)
    for (const token of [
      fake.webhookToken({ payload_hash: hash }, 'wrong-secret'),
      fake.webhookToken({ payload_hash: hash, api_key: 'someone-else' }),
      fake.webhookToken({ payload_hash: hash, application_id: 'another-app' }),
      fake.webhookToken({
        payload_hash: createHash('sha256').update('{"uuid":"vonage-call-1","status":"completed"}').digest('hex'),
      }),
      fake.webhookToken({ payload_hash: hash, iss: 'Someone' }),
      // A token without payload_hash (as on a GET answer URL) replayed with a body.
      fake.webhookToken({}),
      fake.webhookToken({ payload_hash: hash, iat: nowSeconds - 301 }),
      fake.webhookToken({ payload_hash: hash, iat: nowSeconds + 60 }),
      fake.webhookToken({ payload_hash: hash, iat: undefined }),
    ]) {
      expect((await fake.event(url, body, `Bearer ${token}`)).status).toBe(403)
    }
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
    expect((await fake.event(url, body)).status).toBe(200)
    expect((await untilRunCompleted(t, runId)).disposition).toBe('busy')
  })
})

describe('inbound calls', () => {
  test('the application answer URL (GET) gets the NCCO for a new inbound run; an unknown number gets an empty NCCO', async () => {
    const inbound = await createCarrierAgent(t)
    await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
      body: { address: '+14155550199', inbound_workflow_id: inbound.id },
    })
    const answer = (to: string, uuid: string) =>
      fetch(
        t.reach(
          `${PUBLIC_URL}/api/v1/telephony/vonage/inbound?to=${to}&from=447700900123&uuid=${uuid}&conversation_uuid=CON-1`,
        ),
        {
          headers: { authorization: `Bearer ${fake.webhookToken({})}` },
        },
      )
    const accepted: any = await (await answer('14155550199', 'in-1')).json()
    expect(accepted[0]).toMatchObject({
      action: 'connect',
      endpoint: [{ type: 'websocket', 'content-type': 'audio/l16;rate=16000' }],
    })
    expect(runRow(t, latestRunId(t))).toMatchObject({ call_type: 'inbound', provider_call_id: 'in-1' })
    const before = latestRunId(t)
    expect(await (await answer('14155550111', 'in-2')).json()).toEqual([])
    expect(latestRunId(t)).toBe(before)
  })
})
