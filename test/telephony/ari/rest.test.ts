import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { AriError, ariBaseUrl, createAriRest, type AriRest } from '../../../src/telephony/ari/rest'
import { startFakeAri, type FakeAri } from '../../support/fake-ari'

let fake: FakeAri
let rest: AriRest
beforeEach(async () => {
  fake = await startFakeAri({ defaultScenario: 'answered-stays-up' })
  rest = createAriRest(fake.settings())
})
afterEach(() => fake.close())

/** The AriError a call rejects with (fails the test if it resolves or throws something else). */
async function ariError(call: Promise<unknown>): Promise<AriError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AriError)
  return error as AriError
}

describe('ARI REST client', () => {
  test.each([
    ['http://pbx:8088', 'http://pbx:8088/ari'],
    ['http://pbx:8088/', 'http://pbx:8088/ari'],
    ['http://pbx:8088/ari', 'http://pbx:8088/ari'],
    ['https://pbx.example/ari/', 'https://pbx.example/ari'],
    ['https://pbx.example/asterisk/', 'https://pbx.example/asterisk/ari'],
    ['http://user:secret@pbx:8088?x=1', 'http://pbx:8088/ari'],
  ])('endpoint %s is served from %s', (endpoint, base) => {
    expect(ariBaseUrl(endpoint)).toBe(base)
  })

  test('originate sends our channelId, the app, args, caller id, timeout and variables as ARI expects', async () => {
    const channel = await rest.originate({
      channelId: 'run-1',
      endpoint: 'Local/102@test',
      appArgs: ['run=1', 'org=2'],
      callerId: '"Sales" <5551000>',
      timeoutSeconds: 20,
      variables: { RUN_ID: '1' },
    })
    expect(channel.id).toBe('run-1')
    expect(channel.state).toBe('Down')
    expect(channel.caller).toEqual({ name: 'Sales', number: '5551000' })
    const sent = fake.requests.find((r) => r.method === 'POST' && r.path === '/ari/channels')
    expect(sent?.query).toEqual({
      endpoint: 'Local/102@test',
      app: 'testapp',
      appArgs: 'run=1,org=2',
      callerId: '"Sales" <5551000>',
      timeout: '20',
      channelId: 'run-1',
    })
    expect(sent?.body).toEqual({ variables: { RUN_ID: '1' } })
  })

  test('channels: get, list (both Local halves), answer, hang up; a vanished channel is a 404', async () => {
    await rest.originate({ channelId: 'c1', endpoint: 'Local/102@test' })
    expect((await rest.listChannels()).map((c) => c.id).sort()).toEqual(['c1', 'c1;2'])
    expect((await rest.getChannel('c1')).name).toMatch(/^Local\/102@test-[0-9a-f]{8};1$/)
    await rest.answer('c1')
    await rest.hangup('c1', 16)
    expect(fake.requests.at(-1)).toMatchObject({
      method: 'DELETE',
      path: '/ari/channels/c1',
      query: { reason_code: '16' },
    })

    const gone = await ariError(rest.hangup('no-such-channel'))
    expect(gone.status).toBe(404)
    expect(gone.message).toBe('Channel not found')
    expect(gone.operation).toBe('DELETE /channels/no-such-channel')
    expect((await ariError(rest.answer('no-such-channel'))).status).toBe(404)
  })

  test.each([
    [
      'an unknown technology: 500 with an "error" body',
      { channelId: 'x', endpoint: 'Foo/bar' },
      500,
      'Allocation failed',
    ],
    ['no endpoint: 400 with a "message" body', { channelId: 'x', endpoint: '' }, 400, 'Endpoint must be specified'],
  ])('originate rejected for %s', async (_, params, status, message) => {
    const error = await ariError(rest.originate(params))
    expect(error.status).toBe(status)
    expect(error.message).toBe(message)
    expect(fake.liveChannelIds()).toEqual([])
  })

  test('a duplicate channelId is refused with 409', async () => {
    await rest.originate({ channelId: 'dup', endpoint: 'Local/102@test' })
    expect((await ariError(rest.originate({ channelId: 'dup', endpoint: 'Local/102@test' }))).status).toBe(409)
  })

  test('wrong credentials: 401, and neither the password nor the Basic token appears in the error', async () => {
    const settings = { ...fake.settings(), password: 'hunter2-secret' }
    const error = await ariError(createAriRest(settings).ping())
    expect(error.status).toBe(401)
    expect(error.message).toBe('Authentication required')
    const token = Buffer.from(`${settings.username}:${settings.password}`).toString('base64')
    for (const text of [error.message, error.operation, String(error.stack), JSON.stringify(error)]) {
      expect(text).not.toContain('hunter2-secret')
      expect(text).not.toContain(token)
    }
  })

  test('no response: status null, for a refused connection and for a timeout', async () => {
    await fake.refuseConnections(true)
    const refused = await ariError(rest.ping())
    expect(refused.status).toBeNull()

    const hanging = createAriRest(fake.settings(), {
      timeoutMs: 20,
      fetch: ((_url: unknown, init?: RequestInit) =>
        new Promise((_, reject) => {
          init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')))
        })) as typeof fetch,
    })
    const timedOut = await ariError(hanging.listChannels())
    expect(timedOut.status).toBeNull()
    expect(timedOut.message).toBe('no response within 20 ms')
  })

  test('an answer whose headers come and then nothing more fails within the timeout, error answers too', async () => {
    const stalledBody = (status: number, signal?: AbortSignal | null) =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('[{"id":'))
            signal?.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')))
          },
        }),
        { status, headers: { 'content-type': 'application/json' } },
      )
    for (const status of [200, 500]) {
      const stalling = createAriRest(fake.settings(), {
        timeoutMs: 20,
        fetch: (async (_url: unknown, init?: RequestInit) => stalledBody(status, init?.signal)) as typeof fetch,
      })
      const timedOut = await ariError(stalling.listChannels())
      expect(timedOut.status).toBe(status)
      expect(timedOut.message).toBe('no complete answer within 20 ms')
    }
  })

  test('a non-JSON error body falls back to the status line', async () => {
    const proxy = createAriRest(fake.settings(), {
      fetch: (async () =>
        new Response('<html>bad gateway</html>', {
          status: 502,
          statusText: 'Bad Gateway',
        })) as unknown as typeof fetch,
    })
    const error = await ariError(proxy.ping())
    expect(error.status).toBe(502)
    expect(error.message).toBe('HTTP 502 Bad Gateway')
  })

  test('bridge: create, add both channels, destroy; a destroyed bridge is 404', async () => {
    await rest.originate({ channelId: 'a', endpoint: 'Local/102@test' })
    await rest.originate({ channelId: 'b', endpoint: 'Local/102@test' }) // answered within 4 ms trace time
    const bridge = await rest.createBridge({ bridgeId: 'br-1', name: 'call-1' })
    expect(bridge).toMatchObject({ id: 'br-1', bridge_type: 'mixing', name: 'call-1', channels: [] })
    await rest.addChannelToBridge('br-1', ['a', 'b'])
    expect(fake.requests.at(-1)?.query).toEqual({ channel: 'a,b' })
    await rest.destroyBridge('br-1')
    expect((await ariError(rest.destroyBridge('br-1'))).status).toBe(404)
    expect((await ariError(rest.addChannelToBridge('br-1', ['a']))).status).toBe(404)
  })

  test('externalMedia creates the channel with our id in our app', async () => {
    const channel = await rest.externalMedia({
      channelId: 'ext-1',
      externalHost: 'ringbase',
      format: 'ulaw',
      transport: 'websocket',
      encapsulation: 'none',
      connectionType: 'client',
      direction: 'both',
      transportData: 'v(run=1)',
    })
    expect(channel.id).toBe('ext-1')
    expect(fake.requests.at(-1)?.query).toMatchObject({
      channelId: 'ext-1',
      app: 'testapp',
      external_host: 'ringbase',
      format: 'ulaw',
      transport: 'websocket',
      connection_type: 'client',
      transport_data: 'v(run=1)',
    })
  })

  test('asterisk info and ping', async () => {
    expect((await rest.asteriskInfo()).system?.version).toBe('22.10.1')
    expect((await rest.ping()).ping).toBe('pong')
  })
})
