import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { createAriAdapter, unansweredOutcome, type AriAdapter, type AriLink } from '../../src/telephony/ari/adapter'
import { createAriEvents, type AriEvents } from '../../src/telephony/ari/events'
import { createAriRest } from '../../src/telephony/ari/rest'
import type { AnsweredCall, ConversationHooks } from '../../src/telephony/ari/call-session'
import {
  DialError,
  type CallReport,
  type DialRequest,
  type InboundOffer,
  type InboundRouter,
} from '../../src/telephony/provider'
import { createTestApp, type TestApp } from '../support/app'
import { startFakeAri, type FakeAri, type FakeAriOptions } from '../support/fake-ari'
import { waitFor } from '../support/wait'

/** The adapter on one fake Asterisk, wired the way the connection manager wires it, without the database. */
const CONFIGURATION_ID = 7
const ORGANIZATION_ID = 3

let fake: FakeAri
let t: TestApp
let adapter: AriAdapter
let events: AriEvents
/** The configuration's live connection, as the manager would hand it out; replaced when the app changes. */
let link: AriLink
let reports: CallReport[]
let runIds = 0
let clock: ReturnType<typeof manualClock>

async function setUp(fakeOptions: FakeAriOptions = {}, conversation?: ConversationHooks, inbound?: InboundRouter) {
  fake = await startFakeAri(fakeOptions)
  clock = manualClock(Date.parse('2026-01-05T10:00:00Z'))
  t = createTestApp({ clock })
  reports = []
  t.ctx.telephony.onReport((report) => {
    reports.push(report)
  })
  if (conversation) t.ctx.telephony.onAnswered((call) => conversation.onAnswered(call))
  // Without a router of its own the test leaves channels it did not place alone (`ours`), as an adapter without one did.
  t.ctx.telephony.routeInboundWith(inbound ?? (() => ({ ours: true })))
  link = linkFor('testapp')
  adapter = createAriAdapter(t.ctx, {
    link: (id) => (id === CONFIGURATION_ID ? link : undefined),
    restFor: (id) => (id === CONFIGURATION_ID ? link.rest : null),
    vanishGraceMs: 20,
  })
  events = connect('testapp')
  await waitFor('events connected', () => events.state === 'connected')
}

function linkFor(app: string): AriLink {
  return {
    rest: createAriRest(fake.settings(app)),
    get connected() {
      return events.state === 'connected'
    },
    endpoint: fake.url,
    app,
  }
}

function connect(app: string): AriEvents {
  const client = createAriEvents(
    fake.settings(app),
    {
      onEvent: (event) => adapter.handleEvent(CONFIGURATION_ID, event),
      onConnected: () => adapter.reconcile(CONFIGURATION_ID, { resubscribe: true }),
    },
    { backoff: { baseMs: 5, capMs: 20 }, connectTimeoutMs: 1_000 },
  )
  client.start()
  return client
}

afterEach(async () => {
  await events.stop()
  await fake.close()
  t.close()
})

function dialRequest(destination: string, overrides: Partial<DialRequest> = {}): DialRequest {
  runIds += 1
  return {
    callId: crypto.randomUUID(),
    runId: runIds,
    organizationId: ORGANIZATION_ID,
    configurationId: CONFIGURATION_ID,
    credentials: { dial_string_template: 'PJSIP/{number}', allow_raw_dial_strings: true },
    destination,
    callerId: null,
    mayBeTransferred: false,
    ringTimeoutSeconds: 30,
    maxCallDurationSeconds: 600,
    agentId: 1,
    detectAnsweringMachine: false,
    ...overrides,
  }
}

const reportsOf = (callId: string) => reports.filter((report) => report.callId === callId)
const endedOf = (callId: string) => reportsOf(callId).find((report) => report.kind === 'ended')

async function untilEnded(callId: string) {
  await waitFor(`call ${callId} ended`, () => endedOf(callId) !== undefined)
  return endedOf(callId) as Extract<CallReport, { kind: 'ended' }>
}

const originates = () =>
  fake.requests.filter((request) => request.method === 'POST' && request.path === '/ari/channels')

describe('outcomes of the recorded scenarios', () => {
  beforeEach(() => setUp())

  const table = [
    {
      scenario: 'answered',
      endpoint: 'Local/100@test',
      outcome: 'completed',
      cause: { code: 16, text: 'Normal Clearing' },
      answered: true,
      providerStatus: undefined,
    },
    {
      scenario: 'ringing then answered',
      endpoint: 'Local/200@test',
      outcome: 'completed',
      cause: { code: 16, text: 'Normal Clearing' },
      answered: true,
      providerStatus: undefined,
    },
    {
      scenario: 'busy',
      endpoint: 'Local/486@test',
      outcome: 'busy',
      cause: { code: 17, text: 'User busy' },
      answered: false,
      providerStatus: 'BUSY',
    },
    {
      scenario: 'no answer (originate timeout)',
      endpoint: 'Local/408@test',
      outcome: 'no_answer',
      cause: { code: 19, text: 'User alerting, no answer' },
      answered: false,
      providerStatus: undefined,
    },
    {
      scenario: 'congestion',
      endpoint: 'Local/500@test',
      outcome: 'failed',
      cause: { code: 34, text: 'Circuit/channel congestion' },
      answered: false,
      providerStatus: 'CONGESTION',
    },
    {
      scenario: 'rejected',
      endpoint: 'Local/603@test',
      outcome: 'failed',
      cause: { code: 21, text: 'Call Rejected' },
      answered: false,
      providerStatus: 'NOANSWER',
    },
    {
      scenario: 'unallocated',
      endpoint: 'Local/404@test',
      outcome: 'failed',
      cause: { code: 1, text: 'Unallocated (unassigned) number' },
      answered: false,
      providerStatus: 'NOANSWER',
    },
    {
      scenario: 'nonexistent extension',
      endpoint: 'Local/999@test',
      outcome: 'failed',
      cause: { code: 0, text: 'Unknown' },
      answered: false,
      providerStatus: undefined,
    },
  ] as const

  for (const row of table) {
    test(`${row.scenario} → ${row.outcome}`, async () => {
      const request = dialRequest(row.endpoint, { ringTimeoutSeconds: 5 })
      await adapter.dial(request)
      const ended = await untilEnded(request.callId)
      expect(ended.outcome).toBe(row.outcome)
      expect(ended.cause).toEqual(row.cause)
      expect(ended.providerStatus).toBe(row.providerStatus)
      expect(ended.answeredAt !== null).toBe(row.answered)
      const kinds = reportsOf(request.callId).map((report) => report.kind)
      expect(kinds).toEqual(row.answered ? ['answered', 'ended'] : ['ended'])
      expect(adapter.openCallCount()).toBe(0)
    })
  }

  test('originates our channel id into the app, with caller id and ring timeout', async () => {
    const request = dialRequest('486', {
      credentials: { dial_string_template: 'Local/{number}@test' },
      callerId: '+15551230000',
      ringTimeoutSeconds: 12,
    })
    await adapter.dial(request)
    expect(originates().at(-1)?.query).toMatchObject({
      endpoint: 'Local/486@test',
      app: 'testapp',
      channelId: request.callId,
      callerId: '+15551230000',
      timeout: '12',
    })
    expect((await untilEnded(request.callId)).outcome).toBe('busy')
  })

  test('a destination carrying a channel technology is dialled as written when the configuration allows raw dial strings', async () => {
    const request = dialRequest('Local/486@test', {
      credentials: { dial_string_template: 'PJSIP/trunk/{number}', allow_raw_dial_strings: true },
    })
    await adapter.dial(request)
    expect(originates().at(-1)?.query.endpoint).toBe('Local/486@test')
    await untilEnded(request.callId)
  })

  test('without allow_raw_dial_strings a raw dial string is a DialError and Asterisk is never asked', async () => {
    const before = originates().length
    const request = dialRequest('Local/s@from-internal', {
      credentials: { dial_string_template: 'PJSIP/trunk/{number}' },
    })
    const error = await adapter.dial(request).catch((caught) => caught)
    expect(error).toBeInstanceOf(DialError)
    expect(error.message).toContain('allow_raw_dial_strings')
    expect(originates()).toHaveLength(before)
  })

  test('a rejected originate is a DialError and leaves nothing to report', async () => {
    const request = dialRequest('100', { credentials: { dial_string_template: 'Bogus/{number}' } })
    const error = await adapter.dial(request).catch((caught) => caught)
    expect(error).toBeInstanceOf(DialError)
    expect(error.message).toBe('Asterisk refused the call (HTTP 500: Allocation failed)')
    expect(adapter.openCallCount()).toBe(0)
    expect(reports).toEqual([])
  })

  test('a destination that could inject into a dial string is refused before Asterisk is asked', async () => {
    for (const destination of ['100&Local/200@test', '100,20', 'sip:a b@host', '100)']) {
      await expect(adapter.dial(dialRequest(destination))).rejects.toBeInstanceOf(DialError)
    }
    expect(originates()).toEqual([])
  })

  test('events of channels it did not place are ignored', async () => {
    const rest = createAriRest(fake.settings())
    await rest.originate({ channelId: 'someone-else', endpoint: 'Local/486@test' })
    await waitFor('the foreign call is gone', () => !fake.liveChannelIds().includes('someone-else'))
    const request = dialRequest('Local/486@test')
    await adapter.dial(request)
    await untilEnded(request.callId)
    expect(reports.map((report) => report.callId)).toEqual([request.callId])
  })
})

describe('correlation', () => {
  test('events that overtake the originate response are not lost', async () => {
    await setUp({ responseLagMs: 40 })
    const request = dialRequest('Local/486@test')
    const dialed = adapter.dial(request)
    const ended = await untilEnded(request.callId)
    expect(ended.outcome).toBe('busy')
    await dialed
    expect(reportsOf(request.callId)).toHaveLength(1)
  })

  test('refuses to dial while the events websocket is down', async () => {
    await setUp()
    await events.stop()
    const error = await adapter.dial(dialRequest('Local/100@test')).catch((caught) => caught)
    expect(error).toBeInstanceOf(DialError)
    expect(error.message).toContain('not connected')
    expect(originates()).toEqual([])
  })
})

describe('answered calls', () => {
  test('duration runs from answer to hangup; the call is bridged, and the bridge is not recorded', async () => {
    await setUp()
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    await waitFor('bridged', () =>
      fake.requests.some((r) => r.path === `/ari/bridges/ringbase-${request.callId}/addChannel`),
    )
    clock.advance(65_000)
    fake.hangup(request.callId)
    const ended = await untilEnded(request.callId)
    expect(ended.outcome).toBe('completed')
    expect(ended.at - ended.answeredAt!).toBe(65_000)
    const paths = fake.requests.map((r) => `${r.method} ${r.path}`)
    expect(paths).toContain(`DELETE /ari/bridges/ringbase-${request.callId}`)
    expect(paths.some((path) => path.endsWith('/record'))).toBe(false)
    expect(paths).not.toContain('POST /ari/channels/externalMedia')
  })

  test("the engine's hangup with a provider status (the time limit's): the call is hung up, the report says it", async () => {
    await setUp(
      {},
      {
        async onAnswered(call) {
          await call.hangup('max_call_duration')
          await call.ended
        },
      },
    )
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    const ended = await untilEnded(request.callId)
    expect(ended.outcome).toBe('completed')
    expect(ended.providerStatus).toBe('max_call_duration')
    expect(fake.requests.some((r) => r.method === 'DELETE' && r.path === `/ari/channels/${request.callId}`)).toBe(true)
  })

  test('with an engine, a chan_websocket media leg (server mode) joins the bridge; the engine hears, speaks and gets DTMF', async () => {
    const answered: AnsweredCall[] = []
    const digits: string[] = []
    const heardBytes: number[] = []
    await setUp(
      {},
      {
        async onAnswered(call) {
          answered.push(call)
          call.onDtmf((digit) => digits.push(digit))
          call.media.onAudio((ulaw) => heardBytes.push(ulaw.length))
          call.media.send(new Uint8Array(1600).fill(0x10))
          await call.ended
        },
      },
    )
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    await waitFor('the engine has the call', () => answered.length === 1)
    expect(answered[0]).toMatchObject({
      callId: request.callId,
      runId: request.runId,
      organizationId: ORGANIZATION_ID,
      configurationId: CONFIGURATION_ID,
      direction: 'outbound',
    })
    const media = fake.requests.find((r) => r.path === '/ari/channels/externalMedia')!
    expect(media.query).toMatchObject({
      app: 'testapp',
      channelId: `${request.callId}-media`,
      transport: 'websocket',
      connection_type: 'server',
      encapsulation: 'none',
      format: 'ulaw',
      transport_data: 'f(json)',
    })
    expect(media.query.external_host).toBeUndefined()
    const added = fake.requests
      .filter((r) => r.path === `/ari/bridges/ringbase-${request.callId}/addChannel`)
      .map((r) => r.query.channel)
    expect(added).toEqual([request.callId, `${request.callId}-media`])

    const endpoint = fake.mediaOf(request.callId)!
    endpoint.speak(new Uint8Array(480).fill(0x20))
    await waitFor('caller audio reaches the engine', () => heardBytes.length === 3)
    await waitFor('agent audio is played', () => endpoint.played.length === 10)
    fake.dtmf(request.callId, '7')
    await waitFor('the digit reaches the engine', () => digits.length === 1)
    expect(digits).toEqual(['7'])

    await answered[0].hangup()
    expect((await untilEnded(request.callId)).outcome).toBe('completed')
    await waitFor('media leg hung up', () => !fake.liveChannelIds().includes(`${request.callId}-media`))
    expect(await endpoint.closed).toMatchObject({ code: 1000 })
  })

  test("the engine's conclusions shape the report: voicemail becomes the outcome, a lost media leg the provider status", async () => {
    const verdicts = [{ voicemail: true }, { mediaLost: true }]
    await setUp(
      {},
      {
        async onAnswered(call) {
          const verdict = verdicts.shift()
          await call.hangup()
          await call.ended
          return verdict
        },
      },
    )
    const machine = dialRequest('Local/102@test')
    await adapter.dial(machine)
    expect(await untilEnded(machine.callId)).toMatchObject({ outcome: 'voicemail' })
    const dropped = dialRequest('Local/102@test')
    await adapter.dial(dropped)
    expect(await untilEnded(dropped.callId)).toMatchObject({ outcome: 'completed', providerStatus: 'media_lost' })
  })

  test('a media leg that cannot connect hangs the call up, reported media_failed; the engine never starts', async () => {
    let started = 0
    await setUp(
      { refuseMediaSockets: true },
      {
        async onAnswered() {
          started++
        },
      },
    )
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    expect(await untilEnded(request.callId)).toMatchObject({ outcome: 'completed', providerStatus: 'media_failed' })
    expect(started).toBe(0)
    await waitFor('media channel gone', () => !fake.liveChannelIds().includes(`${request.callId}-media`))
  })
})

describe('inbound calls', () => {
  test('a channel we did not create is routed by its called number, answered, bridged with media, and ended by StasisEnd', async () => {
    const routed: InboundOffer[] = []
    const answered: AnsweredCall[] = []
    await setUp(
      {},
      {
        async onAnswered(call) {
          answered.push(call)
          await call.ended
        },
      },
      (call) => {
        routed.push(call)
        return { run: { runId: 41, organizationId: ORGANIZATION_ID, maxCallDurationSeconds: 600, credentials: {} } }
      },
    )
    const channelId = fake.inboundCall({ exten: '5551234', callerNumber: '+15550001111' })
    await waitFor('the engine has the call', () => answered.length === 1)
    expect(routed).toEqual([
      {
        provider: 'ari',
        configurationId: CONFIGURATION_ID,
        callId: channelId,
        callerNumber: '+15550001111',
        calledNumber: '5551234',
        runName: expect.any(Function),
      },
    ])
    expect(answered[0]).toMatchObject({ callId: channelId, runId: 41, direction: 'inbound' })
    expect(fake.requests.some((r) => r.method === 'POST' && r.path === `/ari/channels/${channelId}/answer`)).toBe(true)
    expect(reportsOf(channelId).map((report) => report.kind)).toEqual(['answered'])
    fake.hangup(channelId)
    expect(await untilEnded(channelId)).toMatchObject({ outcome: 'completed', cause: { code: 16 } })
    expect(adapter.openCallCount()).toBe(0)
  })

  test('no route: the call is hung up and nothing is reported', async () => {
    await setUp({}, undefined, () => ({ refused: 'no phone number matches' }))
    const channelId = fake.inboundCall({ exten: '999' })
    await waitFor('hung up', () => !fake.liveChannelIds().includes(channelId))
    expect(fake.requests.some((r) => r.path === `/ari/channels/${channelId}/answer`)).toBe(false)
    expect(reports).toEqual([])
  })
})

describe('reconciliation and the watchdog', () => {
  test('a call that ended while the websocket was down is closed as failed (vanished) after reconnecting', async () => {
    await setUp()
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    await waitFor('answered', () => reportsOf(request.callId).length === 1)
    await fake.refuseConnections(true)
    fake.hangup(request.callId)
    await waitFor('hung up at the fake', () => !fake.liveChannelIds().includes(request.callId))
    expect(endedOf(request.callId)).toBeUndefined()
    await fake.refuseConnections(false)
    const ended = await untilEnded(request.callId)
    expect(ended).toMatchObject({ outcome: 'failed', providerStatus: 'vanished' })
    expect(events.state).toBe('connected')
  })

  test('calls still up after a reconnect stay open and end normally', async () => {
    await setUp()
    const request = dialRequest('Local/102@test')
    await adapter.dial(request)
    await waitFor('answered', () => reportsOf(request.callId).length === 1)
    fake.dropSockets()
    await waitFor(
      'reconnected',
      () => fake.requests.filter((r) => r.path === '/ari/channels' && r.method === 'GET').length >= 1,
    )
    await adapter.reconcile(CONFIGURATION_ID)
    expect(endedOf(request.callId)).toBeUndefined()
    fake.hangup(request.callId)
    expect((await untilEnded(request.callId)).outcome).toBe('completed')
  })

  test('the app renamed under open calls (configuration changed): they are subscribed again and keep their outcome', async () => {
    await setUp({}, undefined, () => ({
      run: { runId: 41, organizationId: ORGANIZATION_ID, maxCallDurationSeconds: 600, credentials: {} },
    }))
    const outbound = dialRequest('Local/102@test')
    await adapter.dial(outbound)
    const inbound = fake.inboundCall({ exten: '5551234', app: 'testapp' })
    await waitFor('both answered', () => reportsOf(outbound.callId).length === 1 && reportsOf(inbound).length === 1)

    await events.stop()
    link = linkFor('renamed')
    events = connect('renamed')
    const subscribed = () =>
      fake.requests.find((r) => r.method === 'POST' && r.path === '/ari/applications/renamed/subscription')
    await waitFor('subscribed again', () => subscribed() !== undefined)
    expect(subscribed()!.query.eventSource.split(',').sort()).toEqual(
      [`channel:${inbound}`, `channel:${outbound.callId}`, `channel:${outbound.callId};2`].sort(),
    )

    fake.hangup(outbound.callId)
    fake.hangup(inbound)
    expect(await untilEnded(outbound.callId)).toMatchObject({ outcome: 'completed', cause: { code: 16 } })
    expect(await untilEnded(inbound)).toMatchObject({ outcome: 'completed', cause: { code: 16 } })
    expect(reports.filter((report) => report.kind === 'ended')).toHaveLength(2)
  })

  test('the watchdog expires a call open past its deadline and hangs it up', async () => {
    await setUp()
    const request = dialRequest('Local/102@test', { ringTimeoutSeconds: 30, maxCallDurationSeconds: 600 })
    await adapter.dial(request)
    await adapter.sweep()
    expect(endedOf(request.callId)).toBeUndefined()
    clock.advance((30 + 600) * 1000 + 5 * 60_000)
    await adapter.sweep()
    expect(await untilEnded(request.callId)).toMatchObject({ outcome: 'failed', providerStatus: 'expired' })
    await waitFor('hung up', () => !fake.liveChannelIds().includes(request.callId))
    expect(reportsOf(request.callId).filter((report) => report.kind === 'ended')).toHaveLength(1)
  })

  test('callState answers for any call id and adopts live calls it did not place', async () => {
    await setUp()
    const rest = createAriRest(fake.settings())
    await rest.originate({ channelId: 'placed-before-restart', endpoint: 'Local/102@test' })
    expect(await adapter.callState(CONFIGURATION_ID, 'never-existed')).toBe('gone')
    expect(await adapter.callState(999, 'placed-before-restart')).toBe('unknown')
    expect(await adapter.callState(CONFIGURATION_ID, 'placed-before-restart')).toBe('alive')
    await adapter.hangup(CONFIGURATION_ID, 'placed-before-restart')
    expect((await untilEnded('placed-before-restart')).outcome).toBe('completed')
  })
})

describe('load', () => {
  test('500 simultaneous calls each end once with the outcome of their trace', async () => {
    await setUp()
    const mix = [
      ['Local/100@test', 'completed'],
      ['Local/486@test', 'busy'],
      ['Local/408@test', 'no_answer'],
      ['Local/500@test', 'failed'],
    ] as const
    const requests = Array.from({ length: 500 }, (_, index) => ({
      request: dialRequest(mix[index % 4][0], { ringTimeoutSeconds: 5 }),
      expected: mix[index % 4][1],
    }))
    await Promise.all(requests.map(({ request }) => adapter.dial(request)))
    await waitFor('every call ended', () => reports.filter((report) => report.kind === 'ended').length === 500, 10_000)
    for (const { request, expected } of requests) expect(endedOf(request.callId)?.outcome).toBe(expected)
    expect(adapter.openCallCount()).toBe(0)
  })
})

describe('unansweredOutcome', () => {
  test('a specific cause wins; cause 0 or 16 defers to the Dial status', () => {
    expect(unansweredOutcome(17, '')).toBe('busy')
    expect(unansweredOutcome(19, 'NOANSWER')).toBe('no_answer')
    expect(unansweredOutcome(18, '')).toBe('no_answer')
    expect(unansweredOutcome(21, 'NOANSWER')).toBe('failed')
    expect(unansweredOutcome(34, '')).toBe('failed')
    expect(unansweredOutcome(0, 'BUSY')).toBe('busy')
    expect(unansweredOutcome(0, 'NOANSWER')).toBe('no_answer')
    expect(unansweredOutcome(0, 'CONGESTION')).toBe('failed')
    expect(unansweredOutcome(0, 'CHANUNAVAIL')).toBe('failed')
    expect(unansweredOutcome(16, 'CANCEL')).toBe('failed')
    expect(unansweredOutcome(0, '')).toBe('failed')
  })
})
