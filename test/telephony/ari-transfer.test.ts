import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { startAriManager } from '../../src/telephony/ari/manager'
import { HOLD_TONE, transferFailure } from '../../src/telephony/ari/transfer'
import { bridgeIdFor, mediaChannelIdFor, type AnsweredCall } from '../../src/telephony/ari/call-session'
import { createTestApp, type TestApp } from '../support/app'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { createConfiguration } from '../support/telephony'
import { waitFor } from '../support/wait'
import { configureModelsNeverAsked } from '../support/voice-models'

/**
 * Transfer by bridge swap, black-box: a call placed through the API to the fake Asterisk (recorded scenarios), its
 * media leg in the bridge and a conversation hook that holds the call until it ends, then AnsweredCall.transfer
 * towards destinations that answer, are busy, ring out or refuse; the run shows the transfer after the call ends.
 */

let t: TestApp
let fake: FakeAri
let clock: ReturnType<typeof manualClock>
let answered: AnsweredCall[]

beforeEach(async () => {
  fake = await startFakeAri()
  clock = manualClock(Date.parse('2026-01-05T10:00:00Z'))
  t = createTestApp({ clock })
  answered = []
  t.ctx.telephony.onAnswered(async (call) => {
    answered.push(call)
    await call.ended
  })
  startAriManager(t.ctx, { events: { backoff: { baseMs: 2, capMs: 10 } } })
})
afterEach(async () => {
  await t.ctx.ari!.stop()
  await fake.close()
  t.close()
})

const FAKE_PBX = { provider: 'ari', app_name: 'ariuser', app_password: 'aripass' }
/** Dials the fake's scenarios as raw dial strings (`Local/102@test`); the toll-fraud guard needs the flag for that. */
const RAW_DIALLING = { allow_raw_dial_strings: true }
/** Dials plain numbers into the fake's scenarios (`102` → `Local/102@test`); raw dial strings refused. */
const TEMPLATE_ONLY = { dial_string_template: 'Local/{number}@test' }

/**
 * An agent with an API trigger, an ARI configuration on the fake, and a call to `Local/102@test` (answers, stays up),
 * dialled as written (RAW_DIALLING, the default) or as `102` through the template (TEMPLATE_ONLY).
 */
async function answeredCall(
  configurations: Record<string, unknown> = {},
  dialling: Record<string, unknown> = RAW_DIALLING,
) {
  const config = await createConfiguration(
    t,
    'pbx',
    { ...FAKE_PBX, ari_endpoint: fake.url, ...dialling },
    { isDefaultOutbound: true },
  )
  await waitFor('ARI connected', () => t.ctx.ariConnected(config.id))
  await configureModelsNeverAsked(t)
  const agent = await t.request('POST', '/api/v1/workflow/create/definition', {
    body: {
      name: 'Front desk',
      workflow_definition: {
        nodes: [
          { id: '1', type: 'startCall', data: { name: 'Start', prompt: 'Help the caller.' } },
          { id: '2', type: 'trigger', data: { name: 'API', trigger_path: crypto.randomUUID() } },
        ],
        edges: [],
      },
      workflow_configurations: configurations,
    },
  })
  const phoneNumber = dialling === TEMPLATE_ONLY ? '102' : 'Local/102@test'
  const started = await t.request('POST', `/api/v1/public/agent/workflow/${agent.body.workflow_uuid}`, {
    body: { phone_number: phoneNumber },
  })
  expect(started.status, started.text).toBe(200)
  await waitFor('answered and media attached', () => answered.length === 1)
  const call = answered[0]
  return {
    call,
    bridgeId: bridgeIdFor(call.callId),
    mediaChannelId: mediaChannelIdFor(call.callId),
    agentId: agent.body.id as number,
    runId: started.body.workflow_run_id as number,
  }
}

const transferOriginate = () =>
  fake.requests.find((request) => request.path === '/ari/channels' && request.query.appArgs?.startsWith('transfer,'))

describe('transfer by bridge swap', () => {
  test('answered: ring tone while it rings, the destination joins the caller, the agent leg goes; the run records the transfer and talk time', async () => {
    const { call, bridgeId, mediaChannelId, agentId, runId } = await answeredCall()
    const result = await call.transfer!({ destination: 'Local/102@test', timeoutSeconds: 20 })
    const destinationId = `${call.callId}-transfer`
    expect(result).toEqual({ status: 'transferred', channelId: destinationId })
    const callerApp = fake.requests.find(
      (request) => request.path === '/ari/channels' && request.query.channelId === call.callId,
    )!.query.app
    expect(transferOriginate()?.query).toMatchObject({
      endpoint: 'Local/102@test',
      app: callerApp,
      channelId: destinationId,
      timeout: '20',
      appArgs: `transfer,${destinationId}`,
    })
    const tone = fake.requests.find((request) => request.path === `/ari/bridges/${bridgeId}/play`)
    expect(tone?.query).toMatchObject({ media: HOLD_TONE, playbackId: `${destinationId}-hold` })
    expect(
      fake.requests.some(
        (request) => request.method === 'DELETE' && request.path === `/ari/playbacks/${destinationId}-hold`,
      ),
    ).toBe(true)
    expect(fake.playingIds()).toEqual([])
    expect(fake.bridgeChannels(bridgeId)).toEqual([call.callId, destinationId])
    await waitFor('agent media leg hung up', () => !fake.liveChannelIds().includes(mediaChannelId))

    clock.advance(95_000)
    fake.hangup(destinationId)
    await waitFor('caller hung up after the destination', () => !fake.liveChannelIds().includes(call.callId))
    await waitFor(
      'run completed',
      async () => (await t.request('GET', `/api/v1/workflow/${agentId}/runs/${runId}`)).body.is_completed,
    )
    const run = (await t.request('GET', `/api/v1/workflow/${agentId}/runs/${runId}`)).body
    expect(run.gathered_context).toMatchObject({
      call_disposition: 'call_transferred',
      transfer_destination: 'Local/102@test',
      transfer_talk_seconds: 95,
    })
    expect(run.logs.telephony.transfer).toEqual({
      destination: 'Local/102@test',
      connected_at: '2026-01-05T10:00:00.000Z',
      talk_seconds: 95,
    })
  })

  const failures = [
    { scenario: 'busy', destination: 'Local/486@test', reason: 'busy', message: 'The destination is busy' },
    {
      scenario: 'no answer',
      destination: 'Local/408@test',
      reason: 'no_answer',
      message: 'No answer within 5 seconds',
    },
    {
      scenario: 'rejected',
      destination: 'Local/603@test',
      reason: 'rejected',
      message: 'The destination refused the call',
    },
    {
      scenario: 'congestion',
      destination: 'Local/500@test',
      reason: 'failed',
      message: 'The transfer failed: Circuit/channel congestion',
    },
  ] as const
  for (const row of failures) {
    test(`${row.scenario}: the transfer fails (${row.reason}) and the call stays with the agent`, async () => {
      const { call, bridgeId, mediaChannelId } = await answeredCall()
      const result = await call.transfer!({ destination: row.destination, timeoutSeconds: 5 })
      expect(result).toEqual({ status: 'failed', reason: row.reason, message: row.message })
      expect(fake.bridgeChannels(bridgeId)).toEqual([call.callId, mediaChannelId])
      expect(fake.playingIds()).toEqual([])
      expect(fake.liveChannelIds()).not.toContain(`${call.callId}-transfer`)
      // A second attempt is possible.
      expect((await call.transfer!({ destination: 'Local/102@test', timeoutSeconds: 5 })).status).toBe('transferred')
    })
  }

  test('a destination the dial rules refuse fails before anything is dialled', async () => {
    const { call } = await answeredCall()
    expect(await call.transfer!({ destination: '555 0100', timeoutSeconds: 5 })).toMatchObject({
      status: 'failed',
      reason: 'failed',
      message: expect.stringContaining('spaces'),
    })
    expect(transferOriginate()).toBeUndefined()
  })

  test('without allow_raw_dial_strings a raw transfer destination (one the model may pick) is refused before anything is dialled; a number goes through the template', async () => {
    const { call } = await answeredCall({}, TEMPLATE_ONLY)
    expect(await call.transfer!({ destination: 'Local/s@from-internal', timeoutSeconds: 5 })).toMatchObject({
      status: 'failed',
      reason: 'failed',
      message: expect.stringContaining('allow_raw_dial_strings'),
    })
    expect(transferOriginate()).toBeUndefined()
    expect(await call.transfer!({ destination: '486', timeoutSeconds: 5 })).toMatchObject({
      status: 'failed',
      reason: 'busy',
    })
    expect(transferOriginate()?.query.endpoint).toBe('Local/486@test')
  })

  test('the caller hanging up while the destination rings stops the transfer and hangs the destination up', async () => {
    const { call } = await answeredCall()
    const pending = call.transfer!({ destination: 'Local/408@test', timeoutSeconds: 60 })
    await waitFor('destination ringing', () => fake.liveChannelIds().includes(`${call.callId}-transfer`))
    fake.hangup(call.callId)
    expect(await pending).toEqual({ status: 'failed', reason: 'failed', message: 'The call ended during the transfer' })
    await waitFor('destination hung up', () => !fake.liveChannelIds().includes(`${call.callId}-transfer`))
  })

  test('after the transfer the call stays up (the time limit is lifted: test/calls/time-limit.test.ts); the caller hanging up ends the destination', async () => {
    const { call } = await answeredCall()
    expect((await call.transfer!({ destination: 'Local/102@test', timeoutSeconds: 5 })).status).toBe('transferred')
    expect(fake.liveChannelIds()).toContain(call.callId)
    fake.hangup(call.callId)
    await waitFor(
      'destination hung up with the caller',
      () => !fake.liveChannelIds().includes(`${call.callId}-transfer`),
    )
  })
})

describe('transfer failure causes', () => {
  test('Q.850 causes and Dial statuses compared as numbers and values', () => {
    expect(transferFailure({ code: 0, text: 'Unknown' }, 'BUSY', 30)).toMatchObject({ reason: 'busy' })
    expect(transferFailure({ code: 17, text: 'User busy' }, '', 30)).toMatchObject({ reason: 'busy' })
    expect(transferFailure({ code: 19, text: 'User alerting, no answer' }, '', 30)).toEqual({
      status: 'failed',
      reason: 'no_answer',
      message: 'No answer within 30 seconds',
    })
    expect(transferFailure({ code: 21, text: 'Call Rejected' }, 'NOANSWER', 30)).toMatchObject({ reason: 'rejected' })
    expect(transferFailure({ code: 1, text: 'Unallocated (unassigned) number' }, 'CHANUNAVAIL', 30)).toMatchObject({
      reason: 'failed',
    })
  })
})
