import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { manualClock } from '../../../src/lib/clock'
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
import { startFakeTelnyx, type FakeTelnyx, type TelnyxCallPlan } from '../../support/fake-carriers/telnyx'
import { waitFor } from '../../support/wait'

/** Telnyx Call Control end to end against a local fake built from its documentation. */

let t: CarrierTestApp
let fake: FakeTelnyx
let agent: CarrierAgent
let plan: () => TelnyxCallPlan
let streams: AnsweredCall[]
let configurationId: number

beforeEach(async () => {
  plan = () => 'hold'
  ;({ t, fake, agent, streams, configurationId } = await startCarrierTest((app) => {
    const started = startFakeTelnyx({ reach: app.reach, now: () => app.ctx.clock.now(), plan: () => plan() })
    app.ctx.providerApis.telnyx = started.baseUrl
    return {
      fake: started,
      config: {
        provider: 'telnyx',
        api_key: started.apiKey,
        connection_id: 'conn-42',
        webhook_public_key: started.publicKey,
      },
    }
  }))
})
afterEach(() => stopCarrierTest(t, fake))

const placeCall = (to?: string) => placeCarrierCall(t, agent, to)

describe('placing a call', () => {
  test('POST /v2/calls carries the connection, caller id, timeouts, our event URL and a bidirectional PCMU stream', async () => {
    const runId = await placeCall()
    const dial = fake.requests.find((request) => request.path === '/v2/calls')!
    expect(dial.headers.get('authorization')).toBe(`Bearer ${fake.apiKey}`)
    expect(dial.body).toMatchObject({
      connection_id: 'conn-42',
      to: '+14155550123',
      from: '+14155550100',
      timeout_secs: 30,
      time_limit_secs: 600,
      webhook_url: `${PUBLIC_URL}/api/v1/telephony/telnyx/events/${runId}`,
      webhook_url_method: 'POST',
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
    })
    expect(dial.body.stream_url).toMatch(
      new RegExp(`^wss://ringbase\\.example\\.com/api/v1/telephony/ws/${agent.id}/\\d+/${runId}/[0-9a-f]{64}$`),
    )
    expect(runRow(t, runId).provider_call_id).toBe('v3:call-1')
  })

  test('without the webhook public key no call is placed (its events could not be verified): 400', async () => {
    await t.request('PUT', `/api/v1/organizations/telephony-configs/${configurationId}`, {
      body: { config: { webhook_public_key: null } },
    })
    const response = await triggerCall(t, agent, '+14155550123')
    expect(response.status).toBe(400)
    expect(response.body.detail).toContain('webhook public key')
    expect(fake.requests.filter((request) => request.path === '/v2/calls')).toEqual([])
  })

  test("Telnyx's refusal is a 400 with its message, without the API key", async () => {
    fake.failNext(422, {
      errors: [{ code: '10015', title: 'Invalid value', detail: `The 'to' number is invalid (key ${fake.apiKey})` }],
    })
    const response = await triggerCall(t, agent, '+14155550123')
    expect(response.status).toBe(400)
    expect(response.body.detail).toBe(
      "Failed to initiate call: Telnyx refused to place the call (HTTP 422): The 'to' number is invalid (key ***)",
    )
  })

  test('hang-up and call state use the call control id', async () => {
    const runId = await placeCall()
    const { call_id: callId } = runRow(t, runId)
    const telnyx = t.ctx.telephony.providerFor('telnyx')!
    expect(await telnyx.callState(configurationId, callId!)).toBe('alive')
    await telnyx.hangup(configurationId, callId!)
    expect(fake.calls.get('v3:call-1')!.commands).toEqual(['hangup'])
    expect(await telnyx.callState(configurationId, callId!)).toBe('gone')
    expect((await untilRunCompleted(t, runId)).disposition).toBe('completed')
  })
})

describe('events settle the run', () => {
  test.each([
    ['user_busy', 'busy'],
    ['timeout', 'no-answer'],
    ['call_rejected', 'failed'],
    ['originator_cancel', 'canceled'],
  ] as const)('hangup_cause %s → %s', async (cause, disposition) => {
    plan = () => ({ outcome: cause })
    const runId = await placeCall()
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe(disposition)
    expect(loggedStatuses(row)).toEqual(['call.initiated', `call.hangup:${cause}`])
  })

  test('answered: the media stream opens on answer, the run runs, and call.hangup completes it with the talk time', async () => {
    const clock = t.ctx.clock as ReturnType<typeof manualClock>
    plan = () => ({
      outcome: 'answered',
      talk: async () => {
        await waitFor('stream admitted', () => streams.length === 1)
        clock.advance(9_000)
      },
    })
    const runId = await placeCall()
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 9 })
    expect(loggedStatuses(row)).toContain('call.answered')
    expect(streams[0]).toMatchObject({ runId, direction: 'outbound' })
  })

  test('answering machine detection: a machine is hung up on and the run ends as voicemail', async () => {
    agent = await createCarrierAgent(t, { voicemail_detection: { enabled: true } })
    plan = () => ({ outcome: 'answered', machine: true })
    const runId = await placeCall()
    const row = await untilRunCompleted(t, runId)
    expect(fake.calls.get('v3:call-1')!.body.answering_machine_detection).toBe('detect')
    expect(fake.calls.get('v3:call-1')!.commands).toEqual(['hangup'])
    expect(row.disposition).toBe('voicemail_detected')
    expect(row.gathered_context).toMatchObject({ answered_by: 'machine', answering_machine_detected: true })
  })

  test('unsigned → 401; a wrong key, a tampered body or a timestamp outside ±300 s → 403; nothing changes', async () => {
    const runId = await placeCall()
    const url = `${PUBLIC_URL}/api/v1/telephony/telnyx/events/${runId}`
    const busy = { call_control_id: 'v3:call-1', hangup_cause: 'user_busy' }
    const now = Math.floor(t.ctx.clock.now() / 1000)
    expect((await fake.event(url, 'call.hangup', busy, { headers: { 'telnyx-signature-ed25519': '' } })).status).toBe(
      401,
    )
    expect(
      (
        await fake.event(url, 'call.hangup', busy, {
          headers: { 'telnyx-signature-ed25519': Buffer.alloc(64).toString('base64') },
        })
      ).status,
    ).toBe(403)
    expect((await fake.event(url, 'call.hangup', busy, { at: now - 301 })).status).toBe(403)
    expect((await fake.event(url, 'call.hangup', busy, { at: now + 301 })).status).toBe(403)
    // Signed for one timestamp, replayed under another.
    expect(
      (await fake.event(url, 'call.hangup', busy, { at: now - 10, headers: { 'telnyx-timestamp': String(now) } }))
        .status,
    ).toBe(403)
    expect(runRow(t, runId)).toMatchObject({ state: 'initialized', logs: {} })
    expect((await fake.event(url, 'call.hangup', busy, { at: now - 299 })).status).toBe(200)
    expect((await untilRunCompleted(t, runId)).disposition).toBe('busy')
  })

  test('a signed event of another call posted to this run is refused; replays and late events never reopen it', async () => {
    const runId = await placeCall()
    const url = `${PUBLIC_URL}/api/v1/telephony/telnyx/events/${runId}`
    expect(
      (await fake.event(url, 'call.hangup', { call_control_id: 'v3:someone-else', hangup_cause: 'user_busy' })).status,
    ).toBe(403)
    await fake.event(url, 'call.hangup', { call_control_id: 'v3:call-1', hangup_cause: 'timeout' })
    await untilRunCompleted(t, runId)
    for (const [eventType, payload] of [
      ['call.hangup', { hangup_cause: 'normal_clearing' }],
      ['call.answered', {}],
      ['call.initiated', {}],
    ] as const) {
      expect((await fake.event(url, eventType, { call_control_id: 'v3:call-1', ...payload })).status).toBe(200)
    }
    const row = runRow(t, runId)
    expect(row).toMatchObject({ state: 'completed', disposition: 'no-answer' })
    expect(loggedStatuses(row)).toEqual([
      'call.hangup:timeout',
      'call.hangup:normal_clearing',
      'call.answered',
      'call.initiated',
    ])
  })
})

describe('inbound calls', () => {
  const connectionUrl = `${PUBLIC_URL}/api/v1/telephony/inbound/run`

  test('call.initiated for a number with an inbound agent: an inbound run, then the answer command with the stream', async () => {
    const inbound = await createCarrierAgent(t)
    await t.request('POST', `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`, {
      body: { address: '+14155550199', inbound_workflow_id: inbound.id },
    })
    const { call, response } = await fake.offer(connectionUrl, '+447700900123', '+14155550199', async () => {
      await waitFor('stream admitted', () => streams.length === 1)
      expect(runRow(t, streams[0].runId).state).toBe('running')
    })
    expect(response.status).toBe(200)
    expect(call.commands).toEqual(['answer'])
    const answer = fake.requests.find((request) => request.path.endsWith('/actions/answer'))!
    const runId = latestRunId(t)
    expect(answer.body).toMatchObject({
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
    })
    expect(answer.body.stream_url).toContain(`/${runId}/`)
    await fake.idle()
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ call_type: 'inbound', provider_call_id: call.id, disposition: 'completed' })
    // The call's later events reach the same URL and are logged on the run.
    expect(loggedStatuses(row)).toContain('call.answered')
  })

  test('a number without an inbound agent: the call is rejected, no run', async () => {
    const before = latestRunId(t)
    const { call } = await fake.offer(connectionUrl, '+447700900123', '+14155550100')
    expect(call.commands).toEqual(['reject'])
    expect(latestRunId(t)).toBe(before)
  })
})
