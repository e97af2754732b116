import { afterEach, beforeEach, expect, test } from 'bun:test'
import type { AnsweredCall } from '../../../src/telephony/ari/call-session'
import { ulawToPcm16 } from '../../../src/voice/g711'
import {
  createCarrierAgent,
  placeCarrierCall,
  startCarrierTest,
  stopCarrierTest,
  latestRunId,
  runRow,
  untilRunCompleted,
  type CarrierAgent,
} from '../../support/fake-carriers/calls'
import { startFakeExotel, type ExotelCallPlan, type FakeExotel } from '../../support/fake-carriers/exotel'
import { PUBLIC_URL, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { waitFor } from '../../support/wait'

/** Exotel end to end against a local fake: connect-to-stream calls on the configuration's base URL, per-run tokens, PCM media. */

let t: CarrierTestApp
let fake: FakeExotel
let agent: CarrierAgent
let plan: () => ExotelCallPlan
let streams: AnsweredCall[]
let configurationId: number

beforeEach(async () => {
  plan = () => 'hold'
  ;({ t, fake, agent, streams, configurationId } = await startCarrierTest((app) => {
    const started = startFakeExotel({ reach: app.reach, plan: () => plan() })
    return {
      fake: started,
      config: {
        provider: 'exotel',
        account_sid: started.accountSid,
        api_key: started.apiKey,
        api_token: started.apiToken,
        api_base_url: started.baseUrl,
      },
      number: '+918047491899',
    }
  }))
})
afterEach(() => stopCarrierTest(t, fake))

const placeCall = () => placeCarrierCall(t, agent, '+919876543210')

test("the configuration's api_base_url gets the call: callee, ExoPhone, bidirectional stream, timeouts, a per-run status token", async () => {
  const runId = await placeCall()
  const dial = fake.requests[0]
  expect(dial.path).toBe(`/v1/Accounts/${fake.accountSid}/Calls/connect.json`)
  expect(dial.body).toMatchObject({
    From: '+919876543210',
    CallerId: '+918047491899',
    StreamType: 'bidirectional',
    TimeOut: '30',
    TimeLimit: '600',
    'StatusCallbackEvents[]': 'terminal',
  })
  expect(dial.body.StreamUrl).toMatch(
    new RegExp(`^wss://ringbase\\.example\\.com/api/v1/telephony/ws/${agent.id}/\\d+/${runId}/[0-9a-f]{64}$`),
  )
  expect(dial.body.StatusCallback).toMatch(
    new RegExp(`^${PUBLIC_URL}/api/v1/telephony/exotel/status-callback/${runId}\\?exotel_auth=[0-9a-f]{64}$`),
  )
  expect(runRow(t, runId).provider_call_id).toBe('exotel-call-1')
  const exotel = t.ctx.telephony.providerFor('exotel')!
  expect(await exotel.callState(configurationId, runRow(t, runId).call_id!)).toBe('alive')
  fake.calls.get('exotel-call-1')!.status = 'completed'
  expect(await exotel.callState(configurationId, runRow(t, runId).call_id!)).toBe('gone')
})

test.each([
  ['busy', 'busy'],
  ['no-answer', 'no-answer'],
  ['failed', 'failed'],
] as const)('terminal status %s → %s', async (outcome, disposition) => {
  plan = () => ({ outcome })
  expect((await untilRunCompleted(t, await placeCall())).disposition).toBe(disposition)
})

test('answered: the stream speaks 16-bit PCM; the terminal callback completes the run with the conversation time', async () => {
  plan = () => ({
    outcome: 'completed',
    conversationSeconds: 27,
    talk: async (media) => {
      await waitFor('stream admitted', () => streams.length === 1)
      streams[0].media.send(new Uint8Array([0x00, 0x80, 0xff, 0x7f]))
      streams[0].media.mark()
      await waitFor('agent audio', () => media.texts.some((message) => message.event === 'media'))
      const payload = Buffer.from(media.texts.find((message) => message.event === 'media').media.payload, 'base64')
      expect(payload.length).toBe(320)
      expect([...new Int16Array(new Uint8Array(payload).buffer).slice(0, 4)]).toEqual([
        ...ulawToPcm16(new Uint8Array([0x00, 0x80, 0xff, 0x7f])),
      ])
    },
  })
  const row = await untilRunCompleted(t, await placeCall())
  expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 27 })
})

test("a status callback without its token → 401, with a wrong or another run's token → 403", async () => {
  const runId = await placeCall()
  const given = fake.requests[0].body.StatusCallback as string
  const params = { CallSid: 'exotel-call-1', Status: 'busy' }
  expect((await fake.post(given.replace(/\?.*$/, ''), params)).status).toBe(401)
  expect(
    (await fake.post(given.replace(/exotel_auth=[0-9a-f]+/, `exotel_auth=${'0'.repeat(64)}`), params)).status,
  ).toBe(403)
  expect(
    (await fake.post(given.replace(`/status-callback/${runId}?`, `/status-callback/${runId + 1}?`), params)).status,
  ).toBe(404)
  expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
  expect((await fake.post(given, params)).status).toBe(200)
  expect((await untilRunCompleted(t, runId)).disposition).toBe('busy')
})

test('inbound: the Voicebot dynamic URL, with the account credentials, gets the stream URL of a new inbound run', async () => {
  const inbound = await createCarrierAgent(t)
  await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
    body: { address: '+918047491800', inbound_workflow_id: inbound.id },
  })
  const ask = (authorization: string | null, to = '08047491800', sid = 'exo-in-1') =>
    fetch(t.reach(`${PUBLIC_URL}/api/v1/telephony/exotel/inbound?CallSid=${sid}&CallFrom=09876543210&CallTo=${to}`), {
      headers: authorization === null ? {} : { authorization },
    })
  const credentials = `Basic ${Buffer.from(`${fake.apiKey}:${fake.apiToken}`).toString('base64')}`
  expect((await ask(null, '+918047491800')).status).toBe(401)
  expect((await ask(`Basic ${Buffer.from('x:y').toString('base64')}`, '+918047491800')).status).toBe(403)
  const answer: any = await (await ask(credentials, '+918047491800')).json()
  expect(answer.url).toMatch(/^wss:\/\/ringbase\.example\.com\/api\/v1\/telephony\/ws\//)
  expect(runRow(t, latestRunId(t))).toMatchObject({ call_type: 'inbound', provider_call_id: 'exo-in-1' })
})
