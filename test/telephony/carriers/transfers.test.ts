import { afterEach, describe, expect, test } from 'bun:test'
import { closeCallsInterruptedByRestart } from '../../../src/calls/recovery'
import { contactAttempts } from '../../../src/campaigns/attempts'
import type { manualClock } from '../../../src/lib/clock'
import { createTestApp } from '../../support/app'
import {
  placeCarrierCall,
  runRow,
  startCarrierTest,
  stopCarrierTest,
  untilRunCompleted,
} from '../../support/fake-carriers/calls'
import { startFakePlivo, type FakePlivo, type PlivoTransferPlan } from '../../support/fake-carriers/plivo'
import {
  connectMedia,
  PUBLIC_URL,
  type CarrierTestApp,
  type FakeServer,
  type MediaClient,
} from '../../support/fake-carriers/shared'
import {
  startFakeTelnyx,
  type FakeTelnyx,
  type FakeTelnyxCall,
  type TelnyxTransferPlan,
} from '../../support/fake-carriers/telnyx'
import {
  startFakeVonage,
  vonageConfig,
  type FakeVonage,
  type VonageTransferPlan,
} from '../../support/fake-carriers/vonage'
import { waitFor } from '../../support/wait'

/**
 * Carrier transfers through the AnsweredCall seam the conversation uses (the model's side is in twilio-transfer.test.ts):
 * the request each carrier gets, its events about the destination settling the outcome, the call not hung up once the
 * caller is with the destination, and the run ending `call_transferred` with the destination and the talk time.
 * The carrier waits (`ctx.telephony.waits`) are shortened where a test needs one to pass.
 */

const DESK = '+14155550199'
/** The organization's number the test calls are placed from. */
const CALLER_ID = '+14155550100'
const eventsUrl = (provider: string, runId: number) => `${PUBLIC_URL}/api/v1/telephony/${provider}/transfer/${runId}`

let stopTest: () => Promise<void> = async () => {}
const stopEchoes: (() => void)[] = []
afterEach(async () => {
  for (const stop of stopEchoes.splice(0)) stop()
  await stopTest()
})

/**
 * Answers the marks the app sends on a carrier stream (the flow waits for the agent's words to be heard), as the carrier
 * would, until the test ends.
 */
function echoMarks(media: MediaClient, reply: (message: any) => object | null): void {
  const answered = new Set<unknown>()
  const timer = setInterval(() => {
    for (const message of media.texts) {
      const answer = answered.has(message) ? null : reply(message)
      if (answer) {
        answered.add(message)
        media.send(answer)
      }
    }
  }, 5)
  stopEchoes.push(() => clearInterval(timer))
}

const advanceClock = (t: CarrierTestApp, ms: number) => (t.ctx.clock as ReturnType<typeof manualClock>).advance(ms)

type CarrierSetup<F> = { fake: F; config: Record<string, unknown> }

/** A carrier test with one call placed and answered, its caller on the stream until the test ends. */
async function answeredCallTest<F extends FakeServer & { idle(): Promise<void> }>(
  start: (app: CarrierTestApp, held: Promise<void>) => CarrierSetup<F>,
) {
  let release!: () => void
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  const test = await startCarrierTest<F>((app) => start(app, held))
  stopTest = async () => {
    release()
    await stopCarrierTest(test.t, test.fake)
  }
  const runId = await placeCarrierCall(test.t, test.agent)
  await waitFor('the stream admitted', () => test.streams.length === 1, 5_000)
  return { ...test, runId, call: test.streams[0], release }
}

describe("Telnyx: actions/transfer, with the destination leg's events on the transfer webhook", () => {
  let transferPlan: TelnyxTransferPlan

  async function telnyxCall() {
    const test = await answeredCallTest<FakeTelnyx>((app, held) => {
      const fake = startFakeTelnyx({
        reach: app.reach,
        now: () => app.ctx.clock.now(),
        plan: () => ({ outcome: 'answered', talk: () => held }),
        transfer: () => transferPlan,
      })
      app.ctx.providerApis.telnyx = fake.baseUrl
      return {
        fake,
        config: {
          provider: 'telnyx',
          api_key: fake.apiKey,
          connection_id: 'conn-42',
          webhook_public_key: fake.publicKey,
        },
      }
    })
    const fakeCall = test.fake.calls.get('v3:call-1')!
    echoMarks(fakeCall.media!, (message) =>
      message?.event === 'mark' ? { event: 'mark', mark: { name: message.mark.name } } : null,
    )
    return { ...test, fakeCall }
  }

  /** `talkSeconds` after the transfer the caller's call ends (its final call.hangup): the run completes as call_transferred. */
  async function endsTransferred(
    { t, fake, runId, fakeCall }: { t: CarrierTestApp; fake: FakeTelnyx; runId: number; fakeCall: FakeTelnyxCall },
    talkSeconds: number,
  ) {
    advanceClock(t, talkSeconds * 1000)
    fakeCall.alive = false
    await fake.event(fakeCall.webhookUrl, 'call.hangup', {
      call_control_id: fakeCall.id,
      hangup_cause: 'normal_clearing',
      hangup_source: 'callee',
    })
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('call_transferred')
    expect(row.logs.telephony.transfer).toMatchObject({ destination: DESK, talk_seconds: talkSeconds })
  }

  test("answered: transferred; the agent's stream ends without a hang-up; the bridge's end completes the run with the destination and the talk time", async () => {
    transferPlan = 'answered'
    const { t, fake, runId, call, fakeCall } = await telnyxCall()
    expect(await call.transfer!({ destination: DESK, timeoutSeconds: 15 })).toEqual({ status: 'transferred' })
    const command = fake.requests.find((request) => request.path.endsWith('/actions/transfer'))!
    expect(command.path).toBe(`/v2/calls/${encodeURIComponent('v3:call-1')}/actions/transfer`)
    // The destination sees the run's own number.
    expect(command.body).toEqual({
      to: DESK,
      from: CALLER_ID,
      timeout_secs: 15,
      webhook_url: eventsUrl('telnyx', runId),
      webhook_url_method: 'POST',
    })
    expect(runRow(t, runId).logs.transfer).toEqual({
      destination: DESK,
      connected_at: new Date(t.ctx.clock.now()).toISOString(),
    })

    // The conversation is over: its media stream goes, the call stays up.
    call.media.close()
    await fakeCall.media!.closed
    await Bun.sleep(100)
    expect(fakeCall.commands).toEqual(['transfer'])
    expect(runRow(t, runId).state).toBe('running')

    advanceClock(t, 95_000)
    await fake.endTransfer('v3:call-1')
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('call_transferred')
    expect(row.gathered_context).toMatchObject({ transfer_destination: DESK, transfer_talk_seconds: 95 })
    expect(row.logs.telephony.transfer).toMatchObject({ destination: DESK, talk_seconds: 95 })
    expect(fakeCall.commands).toEqual(['transfer'])
  })

  test.each([
    ['user_busy', 'busy', 'The destination is busy'],
    ['timeout', 'no_answer', 'No answer within 15 seconds'],
    ['call_rejected', 'rejected', 'The destination refused the call'],
    // Causes that name no failure: the leg never answered, so it failed all the same.
    ['unspecified', 'failed', 'The transfer failed'],
    ['normal_temporary_failure', 'failed', 'The transfer failed'],
  ] as const)("%s: failed (%s); the caller stays on the agent's stream", async (plan, reason, message) => {
    transferPlan = plan
    const { t, runId, call, fakeCall } = await telnyxCall()
    expect(await call.transfer!({ destination: DESK, timeoutSeconds: 15 })).toEqual({
      status: 'failed',
      reason,
      message,
    })
    expect(call.media.closed).toBe(false)
    expect(fakeCall.commands).toEqual(['transfer'])
    expect(runRow(t, runId)).toMatchObject({ state: 'running' })
    expect(runRow(t, runId).logs.transfer).toBeUndefined()
  })

  test("the caller hanging up while the destination rings ends the transfer (its call.hangup comes to the transfer's webhook_url): failed, the run completes as a plain call, nothing hung up or reported after", async () => {
    transferPlan = 'ringing'
    const { t, fake, runId, call, fakeCall } = await telnyxCall()
    t.ctx.telephony.waits.finalStatusGraceMs = 20
    const endReports: unknown[] = []
    t.ctx.telephony.onReport((report) => {
      if (report.kind === 'ended') endReports.push(report)
    })
    const transfer = call.transfer!({ destination: DESK, timeoutSeconds: 60 })
    await waitFor('the transfer asked for', () => fakeCall.commands.includes('transfer'), 5_000)
    // As Telnyx ends a call: its stream closes, then call.hangup.
    fakeCall.alive = false
    fakeCall.media!.close(1000)
    await fakeCall.media!.closed
    // The transfer's webhook_url took the place of the call's own: the caller's events come there now.
    expect(fakeCall.webhookUrl).toBe(eventsUrl('telnyx', runId))
    await fake.event(fakeCall.webhookUrl, 'call.hangup', {
      call_control_id: fakeCall.id,
      hangup_cause: 'normal_clearing',
      hangup_source: 'caller',
    })
    expect(await transfer).toEqual({
      status: 'failed',
      reason: 'failed',
      message: 'The call ended during the transfer',
    })
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('completed')
    expect(row.logs.transfer).toBeUndefined()
    // Well past the final-status grace: the media's end asked for no hang-up of the finished call and reported nothing.
    await Bun.sleep(200)
    expect(fakeCall.commands).toEqual(['transfer'])
    expect(endReports).toHaveLength(1)
  })

  test('no outcome from Telnyx in time, the call still up: transferred (the carrier was asked), never hung up, ended by its final status', async () => {
    transferPlan = 'ringing'
    const { t, fake, runId, call, fakeCall } = await telnyxCall()
    t.ctx.telephony.waits.transferOutcomeGraceMs = 50
    expect(await call.transfer!({ destination: DESK, timeoutSeconds: 0 })).toEqual({ status: 'transferred' })
    expect(
      fake.requests.some(
        (request) => request.method === 'GET' && request.path === `/v2/calls/${encodeURIComponent(fakeCall.id)}`,
      ),
    ).toBe(true)
    expect(runRow(t, runId).logs.transfer).toMatchObject({ destination: DESK })

    call.media.close()
    await fakeCall.media!.closed
    await endsTransferred({ t, fake, runId, fakeCall }, 30)
    expect(fakeCall.commands).toEqual(['transfer'])
  })

  test('no outcome from Telnyx in time, the call gone: failed (no answer)', async () => {
    transferPlan = 'ringing'
    const { t, runId, call, fakeCall } = await telnyxCall()
    t.ctx.telephony.waits.transferOutcomeGraceMs = 50
    fakeCall.alive = false
    expect(await call.transfer!({ destination: DESK, timeoutSeconds: 0 })).toEqual({
      status: 'failed',
      reason: 'no_answer',
      message: 'No answer within 0 seconds',
    })
    expect(runRow(t, runId).logs.transfer).toBeUndefined()
    fakeCall.media!.close(1000)
  })

  test('a restart leaves a transferred call to the carrier: not hung up, and its final status completes the run as call_transferred', async () => {
    transferPlan = 'answered'
    const { t, fake, runId, call, fakeCall } = await telnyxCall()
    expect(await call.transfer!({ destination: DESK, timeoutSeconds: 15 })).toEqual({ status: 'transferred' })
    call.media.close()
    await fakeCall.media!.closed

    // What start-up runs after a restart.
    expect(await closeCallsInterruptedByRestart(t.ctx, contactAttempts)).toBe(0)
    expect(fakeCall.commands).toEqual(['transfer'])
    expect(runRow(t, runId).state).toBe('running')

    await endsTransferred({ t, fake, runId, fakeCall }, 60)
  })

  test('a destination that is neither an E.164 number nor a SIP URI is refused without asking Telnyx', async () => {
    transferPlan = 'answered'
    const { fakeCall, call } = await telnyxCall()
    const result = await call.transfer!({ destination: 'PJSIP/102', timeoutSeconds: 15 })
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'failed',
      message: expect.stringContaining('must be an E.164 number or a SIP URI'),
    })
    expect(fakeCall.commands).toEqual([])
  })
})

for (const variant of ['plivo', 'vobiz'] as const) {
  describe(`${variant}: the call moved to our transfer URL, which answers <Dial>`, () => {
    test('the request, the <Dial> XML, and a busy destination: the caller comes back on a new stream of the same conversation', async () => {
      const { t, fake, runId, streams } = await answeredCallTest<FakePlivo>((app, held) => {
        const started = startFakePlivo({
          variant,
          reach: app.reach,
          plan: () => ({ outcome: 'completed', talk: () => held }),
        })
        app.ctx.providerApis[variant] = variant === 'vobiz' ? `${started.baseUrl}/api` : started.baseUrl
        return {
          fake: started,
          config: {
            provider: variant,
            auth_id: started.authId,
            auth_token: started.authToken,
            application_id: 'app-1',
          },
        }
      })
      const [fakeCall] = fake.calls.values()
      echoMarks(fakeCall.media!, (message) =>
        message?.event === 'checkpoint'
          ? { event: 'playedStream', streamId: message.streamId, name: message.name }
          : null,
      )

      const transfer = streams[0].transfer!({ destination: DESK, timeoutSeconds: 25 })
      await waitFor('the <Dial> fetched', () => fakeCall.transferXml !== undefined, 5_000)
      const request = fake.requests.find((candidate) => candidate.body.legs === 'aleg')!
      expect(request.path).toBe(`${variant === 'vobiz' ? '/api' : ''}/v1/Account/${fake.authId}/Call/${fakeCall.uuid}/`)
      expect(request.body).toEqual({ legs: 'aleg', aleg_url: eventsUrl(variant, runId), aleg_method: 'POST' })
      const url = eventsUrl(variant, runId)
      expect(fakeCall.transferXml).toBe(
        '<?xml version="1.0" encoding="UTF-8"?>' +
          `<Response><Dial timeout="25" callerId="14155550100" action="${url}" method="POST" callbackUrl="${url}" callbackMethod="POST"><Number>14155550199</Number></Dial></Response>`,
      )

      // Transfer events are authenticated like status callbacks: an unsigned one changes nothing.
      const busy = {
        CallUUID: fakeCall.uuid,
        Direction: 'outbound',
        DialStatus: 'busy',
        DialALegUUID: fakeCall.uuid,
        DialHangupCause: 'USER_BUSY',
      }
      expect((await fake.post(url, busy, {})).status).toBe(401)
      const dialEnded = await fake.post(url, busy)
      const streamUrl = /<Stream[^>]*>([^<]+)<\/Stream>/.exec(await dialEnded.text())?.[1]
      expect(streamUrl).toStartWith('wss://ringbase.example.com/api/v1/telephony/ws/')
      // Settled: fetching the transfer URL again must not ring the destination.
      const refetched = await fake.post(url, {
        CallUUID: fakeCall.uuid,
        Direction: 'outbound',
        CallStatus: 'in-progress',
        Event: 'Transfer',
      })
      expect(await refetched.text()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>')
      const back = connectMedia(t.reach(streamUrl!))
      await back.opened
      back.send({
        event: 'start',
        sequenceNumber: 0,
        start: {
          callId: fakeCall.uuid,
          streamId: 'stream-2',
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
        },
      })
      expect(await transfer).toEqual({ status: 'failed', reason: 'busy', message: 'The destination is busy' })
      // The same conversation goes on over the new stream: no second call for the engine, and the agent's audio reaches it.
      expect(streams).toHaveLength(1)
      streams[0].media.send(new Uint8Array(160).fill(0xff))
      await waitFor(
        'agent audio on the new stream',
        () => back.texts.some((message) => message?.event === 'playAudio'),
        5_000,
      )
      expect(runRow(t, runId).state).toBe('running')
      back.close(1000)
    })

    async function playedDial(transferPlan: PlivoTransferPlan) {
      const test = await answeredCallTest<FakePlivo>((app, held) => {
        const started = startFakePlivo({
          variant,
          reach: app.reach,
          plan: () => ({ outcome: 'completed', talk: () => held }),
          transfer: () => transferPlan,
        })
        app.ctx.providerApis[variant] = variant === 'vobiz' ? `${started.baseUrl}/api` : started.baseUrl
        return {
          fake: started,
          config: {
            provider: variant,
            auth_id: started.authId,
            auth_token: started.authToken,
            application_id: 'app-1',
          },
        }
      })
      const [fakeCall] = test.fake.calls.values()
      echoMarks(fakeCall.media!, (message) =>
        message?.event === 'checkpoint'
          ? { event: 'playedStream', streamId: message.streamId, name: message.name }
          : null,
      )
      return { ...test, fakeCall }
    }

    test("answered, then the destination hangs up: the talk time is the callbackUrl hang-up's DialBLegDuration (the action has none)", async () => {
      const { t, runId, streams, fakeCall } = await playedDial({ outcome: 'completed', talkSeconds: 95 })
      expect(await streams[0].transfer!({ destination: DESK, timeoutSeconds: 25 })).toEqual({ status: 'transferred' })
      const row = await untilRunCompleted(t, runId)
      expect(row.disposition).toBe('call_transferred')
      expect(row.gathered_context).toMatchObject({ transfer_destination: DESK, transfer_talk_seconds: 95 })
      expect(row.logs.telephony.transfer).toMatchObject({ destination: DESK, talk_seconds: 95 })
      // The dial is over: the action is answered with a hang-up, not with a new stream.
      await waitFor('the action answered', () => fakeCall.actionXml !== undefined, 5_000)
      expect(fakeCall.actionXml).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>')
    })

    const failures =
      variant === 'vobiz'
        ? ([
            ['busy', 'busy'],
            ['no-answer', 'no_answer'],
            ['cancel', 'failed'],
          ] as const)
        : ([
            ['busy', 'busy'],
            ['no-answer', 'no_answer'],
          ] as const)
    test.each(failures)(
      "DialStatus %s after the B leg's hang-up (duration 0): failed (%s), and the action's answer brings the caller back on a new stream",
      async (dialStatus, reason) => {
        const { t, runId, streams, fakeCall } = await playedDial({ outcome: dialStatus })
        const result = await streams[0].transfer!({ destination: DESK, timeoutSeconds: 25 })
        expect(result).toMatchObject({ status: 'failed', reason })
        expect(fakeCall.actionXml).toContain('<Stream')
        expect(fakeCall.status).toBe('in-progress')
        expect(runRow(t, runId)).toMatchObject({ state: 'running' })
        expect(runRow(t, runId).logs.transfer).toBeUndefined()
      },
    )
  })
}

describe('Vonage: the call transferred to an NCCO that connects the destination', () => {
  async function vonageCall(transferPlan?: VonageTransferPlan) {
    const test = await answeredCallTest<FakeVonage>((app, held) => {
      const started = startFakeVonage({
        reach: app.reach,
        now: () => app.ctx.clock.now(),
        plan: () => ({ outcome: 'answered', talk: () => held, durationSeconds: 80 }),
        ...(transferPlan ? { transfer: () => transferPlan } : {}),
      })
      app.ctx.providerApis.vonage = started.baseUrl
      return { fake: started, config: vonageConfig(started) }
    })
    const [fakeCall] = test.fake.calls.values()
    echoMarks(fakeCall.media!, (message) =>
      message?.action === 'notify' ? { event: 'websocket:notify', payload: message.payload } : null,
    )
    return { ...test, fakeCall }
  }

  test('the request; the connect leg answering transfers the call; its completion ends the run as call_transferred', async () => {
    const { t, fake, runId, streams, release, fakeCall } = await vonageCall()

    const destination = 'sip:desk@pbx.example.com'
    const transfer = streams[0].transfer!({ destination, timeoutSeconds: 30 })
    await waitFor('the transfer asked for', () => fakeCall.transfers.length === 1, 5_000)
    const url = eventsUrl('vonage', runId)
    expect(fakeCall.transfers[0]).toEqual({
      action: 'transfer',
      destination: {
        type: 'ncco',
        // `from`: one of the account's numbers (the run's own), else the destination sees an unknown caller.
        ncco: [
          {
            action: 'connect',
            from: '14155550100',
            timeout: 30,
            eventType: 'synchronous',
            eventUrl: [url],
            eventMethod: 'POST',
            endpoint: [{ type: 'sip', uri: destination }],
          },
        ],
      },
    })
    await fake.event(url, {
      uuid: 'vonage-leg-2',
      conversation_uuid: 'CON-2',
      status: 'ringing',
      direction: 'outbound',
    })
    await fake.event(url, {
      uuid: 'vonage-leg-2',
      conversation_uuid: 'CON-2',
      status: 'answered',
      direction: 'outbound',
    })
    expect(await transfer).toEqual({ status: 'transferred' })

    // The conversation ends and closes its stream; the call is the caller's and the destination's now.
    streams[0].media.close()
    release()
    const row = await untilRunCompleted(t, runId)
    expect(fake.requests.filter((request) => request.body.action === 'hangup')).toEqual([])
    expect(row.disposition).toBe('call_transferred')
    expect(row.gathered_context.transfer_destination).toBe(destination)
    expect(row.logs.telephony.transfer.destination).toBe(destination)
  })

  test('busy: we close the WebSocket the transfer replaced; the failure event is answered with an NCCO connecting a new one, which carries the same conversation', async () => {
    const { t, fake, runId, streams, fakeCall } = await vonageCall()
    const transfer = streams[0].transfer!({ destination: DESK, timeoutSeconds: 30 })
    await waitFor('the transfer asked for', () => fakeCall.transfers.length === 1, 5_000)
    await fakeCall.media!.closed

    const answer = await fake.event(eventsUrl('vonage', runId), {
      uuid: 'vonage-leg-2',
      conversation_uuid: 'CON-2',
      status: 'busy',
      direction: 'outbound',
    })
    const ncco: any = await answer.json()
    expect(ncco).toMatchObject([
      { action: 'connect', endpoint: [{ type: 'websocket', 'content-type': 'audio/l16;rate=16000' }] },
    ])
    const back = connectMedia(t.reach(ncco[0].endpoint[0].uri))
    await back.opened
    back.send({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000' })
    expect(await transfer).toEqual({ status: 'failed', reason: 'busy', message: 'The destination is busy' })
    expect(streams).toHaveLength(1)
    streams[0].media.send(new Uint8Array(160).fill(0xff))
    await waitFor('agent audio on the new WebSocket', () => back.binaries.length > 0, 5_000)
    expect(runRow(t, runId).state).toBe('running')
    back.close(1000)
  })

  test("played by the fake: answered, then the leg's completed with its duration ends the run as call_transferred with that talk time", async () => {
    const { t, fake, runId, streams, fakeCall } = await vonageCall({ outcome: 'answered' })
    expect(await streams[0].transfer!({ destination: DESK, timeoutSeconds: 30 })).toEqual({ status: 'transferred' })
    await fake.endTransfer(fakeCall.uuid, 95)
    const row = await untilRunCompleted(t, runId)
    expect(row.disposition).toBe('call_transferred')
    expect(row.logs.telephony.transfer).toMatchObject({ destination: DESK, talk_seconds: 95 })
  })

  test.each([
    ['first', true],
    ['last', false],
  ] as const)(
    "busy with the leg's completed %s: completed is no answer, only acknowledged; busy fails the transfer and its answer brings the caller back",
    async (_order, completedFirst) => {
      const { t, runId, streams, fakeCall } = await vonageCall({ outcome: 'busy', completedFirst })
      expect(await streams[0].transfer!({ destination: DESK, timeoutSeconds: 30 })).toEqual({
        status: 'failed',
        reason: 'busy',
        message: 'The destination is busy',
      })
      await waitFor("the leg's events all answered", () => fakeCall.legEvents.length === 4, 5_000)
      const answers = Object.fromEntries(fakeCall.legEvents.map(({ status, answer }) => [status, answer]))
      expect(answers.completed).toBeNull()
      expect(answers.busy).toMatchObject([{ action: 'connect', endpoint: [{ type: 'websocket' }] }])
      // The caller is on a new WebSocket of the same conversation, and the call goes on.
      await fakeCall.media!.opened
      expect(fakeCall.status).toBe('answered')
      expect(runRow(t, runId)).toMatchObject({ state: 'running' })
      expect(runRow(t, runId).logs.transfer).toBeUndefined()
    },
  )
})

test('provider metadata says which providers can transfer calls', async () => {
  const t = createTestApp()
  try {
    const response = await t.request('GET', '/api/v1/organizations/telephony-providers/metadata')
    expect(response.status).toBe(200)
    const flags = Object.fromEntries(
      response.body.providers.map((entry: any) => [entry.provider, entry.supports_call_transfer]),
    )
    expect(flags).toEqual({
      ari: true,
      cloudonix: false,
      exotel: false,
      plivo: true,
      telnyx: true,
      twilio: true,
      vobiz: true,
      vonage: true,
      whatsapp: false,
    })
  } finally {
    t.close()
  }
})
