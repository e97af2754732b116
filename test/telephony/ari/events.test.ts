import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import {
  ariEventsUrl,
  backoffDelayMs,
  createAriEvents,
  type AriEvents,
  type AriEventsOptions,
  type AriFailure,
} from '../../../src/telephony/ari/events'
import { AriError, createAriRest } from '../../../src/telephony/ari/rest'
import {
  eventChannel,
  type AriConnectionSettings,
  type AriEvent,
  type AriLogger,
  type DialStatus,
} from '../../../src/telephony/ari/types'
import { startFakeAri, type FakeAri } from '../../support/fake-ari'

/** Small timings so reconnects take milliseconds; heartbeat off unless a test wants it. */
const FAST: AriEventsOptions = {
  backoff: { baseMs: 5, capMs: 20 },
  stableAfterMs: 1_000,
  pingIntervalMs: 1_000,
  silenceTimeoutMs: 5_000,
  connectTimeoutMs: 1_000,
}

let fake: FakeAri
const clients: AriEvents[] = []
beforeEach(async () => {
  fake = await startFakeAri({ scenarios: { 'PJSIP/callee-busy': 'busy' } })
})
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.stop()))
  await fake.close()
})

function listen(settings: AriConnectionSettings, opts: AriEventsOptions = {}) {
  const seen = { events: [] as AriEvent[], failures: [] as AriFailure[], connects: 0 }
  const client = createAriEvents(
    settings,
    {
      onEvent: (event) => {
        seen.events.push(event)
      },
      onConnected: () => {
        seen.connects += 1
      },
      onFailure: (failure) => {
        seen.failures.push(failure)
      },
    },
    { ...FAST, ...opts },
  )
  clients.push(client)
  client.start()
  const eventsFor = (channelId: string) => seen.events.filter((event) => eventChannel(event)?.id === channelId)
  /** Waits on what this client received, not on the fake's state: the last events may still be in flight. */
  const untilDestroyed = (...channelIds: string[]) =>
    waitFor(`${channelIds.join(', ')} destroyed`, () =>
      channelIds.every((id) => eventsFor(id).some((event) => event.type === 'ChannelDestroyed')),
    )
  return { client, seen, eventsFor, untilDestroyed }
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 1_000) {
  const deadline = performance.now() + timeoutMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(2)
  }
}

const upgradeRequests = () => fake.requests.filter((r) => r.path === '/ari/events')

function capturingLogger() {
  const entries: { level: string; fields: Record<string, unknown>; msg?: string }[] = []
  const at = (level: string) => (fields: object, msg?: string) => {
    entries.push({ level, fields: fields as Record<string, unknown>, msg })
  }
  const logger: AriLogger = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') }
  return { logger, entries }
}

describe('backoff', () => {
  const policy = { baseMs: 500, capMs: 30_000 }

  test('doubles from the base up to the cap; jitter scales the ceiling', () => {
    const half = () => 0.5
    expect([0, 1, 2, 3, 4, 5, 6, 7, 30, 5_000].map((failures) => backoffDelayMs(failures, policy, half))).toEqual([
      250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000, 15_000,
    ])
    expect(backoffDelayMs(4, policy, () => 0)).toBe(0)
  })

  test('never exceeds the cap nor the exponential ceiling, whatever the jitter', () => {
    for (let failures = 0; failures <= 100; failures += 1) {
      for (const r of [0, 0.3, 0.999_999]) {
        const delay = backoffDelayMs(failures, policy, () => r)
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThan(Math.min(policy.capMs, policy.baseMs * 2 ** failures))
      }
    }
  })
})

describe('ARI events websocket', () => {
  test('url: ws or wss like the endpoint, prefix kept, app encoded, no credentials', () => {
    const settings = {
      endpoint: 'https://pbx.example/asterisk/ari/',
      username: 'u',
      password: 'p@ss',
      app: 'ring base&x',
    }
    expect(ariEventsUrl(settings)).toBe('wss://pbx.example/asterisk/ari/events?app=ring+base%26x')
    expect(ariEventsUrl({ ...settings, endpoint: 'http://127.0.0.1:8088' })).toBe(
      'ws://127.0.0.1:8088/ari/events?app=ring+base%26x',
    )
  })

  test('connects with credentials in a header, reports onConnected, delivers events', async () => {
    const { client, seen } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    expect(client.state).toBe('connected')
    expect(upgradeRequests()).toHaveLength(1)
    expect(upgradeRequests()[0].query).toEqual({ app: 'testapp' })
    fake.emit({ type: 'ChannelUserevent', eventname: 'hello', userevent: {} })
    await waitFor('the event', () => seen.events.length === 1)
    expect(seen.events[0]).toMatchObject({ type: 'ChannelUserevent', application: 'testapp', eventname: 'hello' })
    expect(seen.failures).toEqual([])
  })

  test('concurrent calls with different outcomes: each channel gets its own recorded sequence', async () => {
    const { seen, eventsFor, untilDestroyed } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    const rest = createAriRest(fake.settings())
    type Outcome = {
      endpoint: string
      types: AriEvent['type'][]
      dialstatuses: DialStatus[]
      cause: number
      peerCause: number
    }
    const outcomes: Outcome[] = [
      {
        endpoint: 'Local/100@test', // answered, far end hangs up
        types: [
          'Dial',
          'ChannelStateChange',
          'Dial',
          'ChannelVarset',
          'StasisStart',
          'ChannelHangupRequest',
          'StasisEnd',
          'ChannelVarset',
          'ChannelDestroyed',
        ],
        dialstatuses: ['', 'ANSWER'],
        cause: 16,
        peerCause: 16,
      },
      {
        endpoint: 'Local/486@test', // busy
        types: ['Dial', 'Dial', 'ChannelDestroyed'],
        dialstatuses: ['', 'BUSY'],
        cause: 0,
        peerCause: 17,
      },
      {
        endpoint: 'Local/408@test', // no answer within the originate timeout
        types: ['Dial', 'ChannelStateChange', 'Dial', 'ChannelDestroyed'],
        dialstatuses: ['', 'RINGING'],
        cause: 19,
        peerCause: 19,
      },
      {
        endpoint: 'Local/500@test', // congestion
        types: ['Dial', 'Dial', 'ChannelDestroyed'],
        dialstatuses: ['', 'CONGESTION'],
        cause: 0,
        peerCause: 34,
      },
      {
        endpoint: 'Local/603@test', // rejected
        types: ['Dial', 'ChannelHangupRequest', 'Dial', 'ChannelDestroyed'],
        dialstatuses: ['', 'NOANSWER'],
        cause: 21,
        peerCause: 21,
      },
    ]
    await Promise.all(
      outcomes.map((o, i) => rest.originate({ channelId: `call-${i}`, endpoint: o.endpoint, timeoutSeconds: 1 })),
    )
    await untilDestroyed(...outcomes.flatMap((_, i) => [`call-${i}`, `call-${i};2`]))

    outcomes.forEach((o, i) => {
      const own = eventsFor(`call-${i}`)
      expect({ endpoint: o.endpoint, types: own.map((e) => e.type) }).toEqual({ endpoint: o.endpoint, types: o.types })
      expect(own.flatMap((e) => (e.type === 'Dial' ? [e.dialstatus] : []))).toEqual(o.dialstatuses)
      const destroyed = (id: string) => eventsFor(id).find((e) => e.type === 'ChannelDestroyed')
      expect(destroyed(`call-${i}`)).toMatchObject({ cause: o.cause })
      expect(destroyed(`call-${i};2`)).toMatchObject({ cause: o.peerCause })
    })
  })

  test('events that overtake the originate response are already delivered when it returns', async () => {
    await fake.close()
    fake = await startFakeAri({ responseLagMs: 20 })
    const { seen, eventsFor } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    await createAriRest(fake.settings()).originate({ channelId: 'early', endpoint: 'Local/486@test' })
    expect(eventsFor('early').map((e) => e.type)).toEqual(['Dial', 'Dial', 'ChannelDestroyed'])
  })

  test('a non-Local endpoint mapped to a scenario: only the originated channel, no ;2 half', async () => {
    const { seen, eventsFor, untilDestroyed } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    await createAriRest(fake.settings()).originate({ channelId: 'pjsip-1', endpoint: 'PJSIP/callee-busy' })
    await untilDestroyed('pjsip-1')
    expect(eventsFor('pjsip-1').map((e) => (e.type === 'Dial' ? `Dial ${e.dialstatus}` : e.type))).toEqual([
      'Dial ',
      'Dial BUSY',
      'ChannelDestroyed',
    ])
    expect(seen.events.every((e) => eventChannel(e)?.id === 'pjsip-1')).toBe(true)
  })

  test('app-side and far-end hangups replay the recorded teardown', async () => {
    const { seen, eventsFor, untilDestroyed } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    const rest = createAriRest(fake.settings())
    await rest.originate({ channelId: 'by-app', endpoint: 'Local/102@test' })
    await rest.originate({ channelId: 'by-callee', endpoint: 'Local/102@test' })
    await rest.hangup('by-app')
    fake.hangup('by-callee')
    await untilDestroyed('by-app', 'by-app;2', 'by-callee', 'by-callee;2')
    expect(fake.liveChannelIds()).toEqual([])
    const teardown = (id: string) => eventsFor(id).slice(eventsFor(id).findIndex((e) => e.type === 'StasisStart') + 1)
    const recordedTeardown: AriEvent['type'][] = [
      'ChannelHangupRequest',
      'StasisEnd',
      'ChannelVarset',
      'ChannelDestroyed',
    ]
    expect(teardown('by-app').map((e) => e.type)).toEqual(recordedTeardown)
    expect(teardown('by-app')[0]).toMatchObject({ cause: 32, soft: true })
    expect(teardown('by-callee').map((e) => e.type)).toEqual(recordedTeardown)
    expect(teardown('by-callee')[0]).toMatchObject({ cause: 16 })
    expect((await rest.hangup('by-app').catch((e: AriError) => e)) as AriError).toMatchObject({ status: 404 })
  })

  test('wrong credentials: auth failures with backoff, no websocket attempt; connects once they are fixed', async () => {
    const stale = { ...fake.settings(), password: 'stale-password' }
    const { client, seen } = listen(stale, { backoff: { baseMs: 20, capMs: 40 }, random: () => 0.999 })
    await Bun.sleep(150)
    await waitFor('between attempts', () => client.state === 'backoff') // no request in flight
    expect(seen.failures.length).toBeGreaterThanOrEqual(3) // attempts at about 0, 19, 58, 97, 136 ms
    expect(seen.failures.length).toBeLessThanOrEqual(6)
    expect(seen.failures.every((f) => f.kind === 'auth')).toBe(true)
    expect(fake.requests.filter((r) => r.path === '/ari/asterisk/ping')).toHaveLength(seen.failures.length)
    expect(upgradeRequests()).toEqual([])

    fake.setCredentials(stale.username, stale.password)
    await waitFor('connected', () => seen.connects === 1)
    expect(client.state).toBe('connected')
  })

  test('a dropped socket is reconnected after a backoff and onConnected fires again; events flow again', async () => {
    const { client, seen, eventsFor } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    fake.dropSockets()
    await waitFor('reconnected', () => seen.connects === 2)
    expect(seen.failures.map((f) => f.kind)).toEqual(['network'])
    expect(client.state).toBe('connected')
    await createAriRest(fake.settings()).originate({ channelId: 'after', endpoint: 'Local/486@test' })
    await waitFor('events on the new socket', () => eventsFor('after').length === 3)
  })

  test('Asterisk down, then back: network failures until it listens again, then a reconnect', async () => {
    const { client, seen } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    await fake.refuseConnections(true)
    await waitFor('two failures', () => seen.failures.length >= 2)
    expect(seen.failures.every((f) => f.kind === 'network')).toBe(true)
    expect(client.state).not.toBe('connected')
    await fake.refuseConnections(false)
    await waitFor('reconnected', () => seen.connects === 2)
  })

  test('stop() closes the socket and nothing reconnects, from connected or from backoff', async () => {
    const connected = listen(fake.settings())
    await waitFor('connected', () => connected.seen.connects === 1)
    const refused = listen({ ...fake.settings(), app: 'other', password: 'wrong' })
    await waitFor('a failure', () => refused.seen.failures.length >= 1)

    await Promise.all([connected.client.stop(), refused.client.stop()])
    expect(connected.client.state).toBe('stopped')
    expect(refused.client.state).toBe('stopped')
    await waitFor('server saw the close', () => fake.socketCount === 0)
    const requestsAtStop = fake.requests.length
    await Bun.sleep(60) // three times the backoff cap
    expect(fake.requests.length).toBe(requestsAtStop)
    expect(connected.seen.connects).toBe(1)
    expect(connected.seen.failures).toEqual([])
  })

  test('heartbeat: pongs keep a quiet socket up; a peer that stops answering is dropped and reconnected', async () => {
    // The silence timeout is far above a stall of this process on a loaded machine (client and fake share one event
    // loop: a stall that delays the pong past the timeout would drop a healthy socket), and ten pings fit in it.
    const silenceTimeoutMs = 400
    const { seen } = listen(fake.settings(), { pingIntervalMs: 40, silenceTimeoutMs })
    await waitFor('connected', () => seen.connects === 1)
    await Bun.sleep(2.5 * silenceTimeoutMs) // well past the silence timeout, with nothing but pongs
    expect(seen.connects).toBe(1)
    expect(seen.failures).toEqual([])

    fake.freezeSockets()
    await waitFor('reconnected', () => seen.connects === 2, 10 * silenceTimeoutMs)
    expect(seen.failures).toHaveLength(1)
    expect(seen.failures[0].kind).toBe('network')
    expect(seen.failures[0].message).toMatch(/no message or pong/)
  })

  test('ApplicationReplaced: reported, the socket is kept, and the newer socket gets the events', async () => {
    const first = listen(fake.settings())
    await waitFor('first connected', () => first.seen.connects === 1)
    const second = listen(fake.settings())
    await waitFor('first told', () => first.seen.failures.length === 1)
    expect(first.seen.failures[0]).toMatchObject({ kind: 'protocol' })
    expect(first.seen.failures[0].message).toContain('another websocket registered app "testapp"')
    expect(first.seen.events.map((e) => e.type)).toEqual(['ApplicationReplaced'])
    expect(first.client.state).toBe('connected')

    await createAriRest(fake.settings()).originate({ channelId: 'to-second', endpoint: 'Local/486@test' })
    await waitFor('second gets the call', () => second.eventsFor('to-second').length === 3)
    expect(first.eventsFor('to-second')).toEqual([])
  })

  test('the backoff grows across failures and resets after a stable connection; logs carry no secret', async () => {
    const password = 'very-secret-password'
    fake.setCredentials('ariuser', 'something-else')
    const { logger, entries } = capturingLogger()
    const settings = { ...fake.settings(), password }
    const { seen } = listen(settings, {
      backoff: { baseMs: 40, capMs: 10_000 },
      random: () => 0.5,
      stableAfterMs: 100,
      logger,
    })
    const retryDelays = () =>
      entries.flatMap((e) => (typeof e.fields.retryInMs === 'number' ? [e.fields.retryInMs] : []))

    await waitFor('two auth failures', () => seen.failures.length === 2)
    fake.setCredentials('ariuser', password)
    await waitFor('connected', () => seen.connects === 1)
    fake.dropSockets() // up only briefly: not stable
    await waitFor('reconnected', () => seen.connects === 2)
    await Bun.sleep(120) // stable now
    fake.dropSockets()
    await waitFor('reconnected again', () => seen.connects === 3)

    expect(retryDelays()).toEqual([20, 40, 80, 20])
    const logged = JSON.stringify(entries)
    expect(logged).not.toContain(password)
    expect(logged).not.toContain(Buffer.from(`ariuser:${password}`).toString('base64'))
  })
})

/** Which events reach an app registered without subscribeAll, as the fake ARI models it from the recorded traces. */
describe('subscriptions of the app', () => {
  /** A socket Ringbase would not open: `subscribeAll=true`, as ws_edge_cases multi_app_subscribeAll did. */
  async function subscribeAllSocket(app: string) {
    const { username, password } = fake.settings()
    const url = `${fake.url.replace('http', 'ws')}/ari/events?app=${app}&subscribeAll=true&api_key=${username}:${password}`
    const socket = new WebSocket(url)
    const events: AriEvent[] = []
    socket.addEventListener('message', (message) => {
      events.push(JSON.parse(String(message.data)) as AriEvent)
    })
    await new Promise((resolve) => socket.addEventListener('open', resolve, { once: true }))
    return { events, close: () => socket.close() }
  }
  const channelIdsIn = (events: AriEvent[]) => new Set(events.flatMap((event) => eventChannel(event)?.id ?? []))

  test('an app hears only the calls originated into it, ringing and unanswered endings included; subscribeAll hears all', async () => {
    const ours = listen(fake.settings())
    const theirs = listen(fake.settings('otherapp'))
    await waitFor('connected', () => ours.seen.connects === 1 && theirs.seen.connects === 1)
    const everything = await subscribeAllSocket('spy')
    try {
      await createAriRest(fake.settings()).originate({ channelId: 'mine', endpoint: 'Local/486@test' })
      await createAriRest(fake.settings('otherapp')).originate({ channelId: 'other', endpoint: 'Local/486@test' })
      await theirs.untilDestroyed('other', 'other;2')
      await ours.untilDestroyed('mine', 'mine;2')
      await waitFor(
        'the spy heard both',
        () => everything.events.filter((e) => e.type === 'ChannelDestroyed').length === 4,
      )

      expect(channelIdsIn(ours.seen.events)).toEqual(new Set(['mine', 'mine;2']))
      expect(channelIdsIn(theirs.seen.events)).toEqual(new Set(['other', 'other;2']))
      expect(channelIdsIn(everything.events)).toEqual(new Set(['mine', 'mine;2', 'other', 'other;2']))
      expect(everything.events.every((event) => event.application === 'spy')).toBe(true)
      // busy_486 as recorded on a plain app: Dial, the ;2 half's dialplan and cause, the Dial status
      expect(ours.eventsFor('mine').map((e) => (e.type === 'Dial' ? `Dial ${e.dialstatus}` : e.type))).toEqual([
        'Dial ',
        'Dial BUSY',
        'ChannelDestroyed',
      ])
      expect(ours.eventsFor('mine;2').find((e) => e.type === 'ChannelDestroyed')).toMatchObject({ cause: 17 })
    } finally {
      everything.close()
    }
  })

  test('an inbound channel is heard only while it is in the app; POST …/subscription follows it to its end', async () => {
    const ours = listen(fake.settings())
    const watcher = listen(fake.settings('watcher'))
    await waitFor('connected', () => ours.seen.connects === 1 && watcher.seen.connects === 1)
    const rest = createAriRest(fake.settings())
    const left = fake.inboundCall({ exten: '5551234', app: 'testapp' })
    const followed = fake.inboundCall({ exten: '5551235', app: 'testapp' })
    await createAriRest(fake.settings('watcher')).subscribe([`channel:${followed}`])
    await rest.answer(left)
    await rest.answer(followed)
    await rest.hangup(left)
    await rest.hangup(followed)
    await waitFor('the watcher heard the end', () =>
      watcher.eventsFor(followed).some((e) => e.type === 'ChannelDestroyed'),
    )
    await waitFor('both left the app', () => ours.seen.events.filter((e) => e.type === 'StasisEnd').length === 2)

    // inbound_stasis_answer_hangup: StasisEnd and nothing after it for the app the channel was in
    expect(ours.eventsFor(left).map((e) => e.type)).toEqual([
      'StasisStart',
      'ChannelStateChange',
      'ChannelHangupRequest',
      'StasisEnd',
    ])
    expect(ours.eventsFor(followed).map((e) => e.type)).toEqual([
      'StasisStart',
      'ChannelStateChange',
      'ChannelHangupRequest',
      'StasisEnd',
    ])
    // the subscribed app: the channel's own events (StasisStart/End belong to the app it is in), then its destruction
    expect(watcher.eventsFor(followed).map((e) => e.type)).toEqual([
      'ChannelStateChange',
      'ChannelHangupRequest',
      'ChannelDestroyed',
    ])
    expect(watcher.eventsFor(left)).toEqual([])
  })

  test('POST …/subscription: unknown app 404, a source that does not exist 422 (nothing subscribed), no source 400', async () => {
    const ours = listen(fake.settings())
    await waitFor('connected', () => ours.seen.connects === 1)
    const rest = createAriRest(fake.settings())
    await rest.originate({ channelId: 'up', endpoint: 'Local/102@test' })
    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (error: AriError) => error.status,
      )
    expect(await status(createAriRest(fake.settings('never-connected')).subscribe(['channel:up']))).toBe(404)
    expect(await status(rest.subscribe(['channel:up', 'channel:gone']))).toBe(422)
    expect(await status(rest.subscribe([]))).toBe(400)
    expect(await status(rest.subscribe(['channel:up']))).toBe(200)
    await rest.hangup('up')
  })

  test("subscriptions belong to the app, not the socket: after a reconnect the call's events come again (ws_disconnect_reconnect)", async () => {
    const { seen, eventsFor, untilDestroyed } = listen(fake.settings())
    await waitFor('connected', () => seen.connects === 1)
    const rest = createAriRest(fake.settings())
    await rest.originate({ channelId: 'lasting', endpoint: 'Local/102@test' })
    await waitFor('in the app', () => eventsFor('lasting').some((e) => e.type === 'StasisStart'))
    fake.dropSockets()
    await waitFor('reconnected', () => seen.connects === 2)
    const application = await (
      await fetch(`${fake.url}/ari/applications/testapp`, {
        headers: { authorization: `Basic ${btoa('ariuser:aripass')}` },
      })
    ).json()
    expect(application).toMatchObject({ name: 'testapp', channel_ids: ['lasting', 'lasting;2'], bridge_ids: [] })
    await rest.hangup('lasting')
    await untilDestroyed('lasting', 'lasting;2')
  })
})
