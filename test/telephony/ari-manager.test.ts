import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { startAriManager, PARK_AFTER_FAILING_MS, type AriManager } from '../../src/telephony/ari/manager'
import type { CallReport, DialRequest } from '../../src/telephony/provider'
import { createTestApp, type TestApp } from '../support/app'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { CONFIGS_PATH, createConfiguration } from '../support/telephony'
import { waitFor } from '../support/wait'

/** Connection manager against fake Asterisks, with configurations created through the API. */

const START = Date.parse('2026-01-05T10:00:00Z')
let t: TestApp
let fake: FakeAri
let manager: AriManager | undefined
let clock: ReturnType<typeof manualClock>

beforeEach(async () => {
  fake = await startFakeAri()
  clock = manualClock(START)
  t = createTestApp({ clock })
})
afterEach(async () => {
  await manager?.stop()
  manager = undefined
  await fake.close()
  t.close()
})

const ariConfig = (target: FakeAri, overrides: Record<string, unknown> = {}) => ({
  provider: 'ari',
  ari_endpoint: target.url,
  app_name: 'ariuser',
  app_password: 'aripass',
  ...overrides,
})

function start() {
  manager = startAriManager(t.ctx, {
    events: { backoff: { baseMs: 2, capMs: 10 }, connectTimeoutMs: 1_000 },
    vanishGraceMs: 20,
  })
  return manager
}

const health = async () => (await t.request('GET', '/api/v1/health', { key: null })).body.ari
const getConfig = async (id: number) => (await t.request('GET', `${CONFIGS_PATH}/${id}`)).body
const upgrades = (target: FakeAri) => target.requests.filter((r) => r.path === '/ari/events').length

describe('connections follow the configurations', () => {
  test('at start, one connection per active ARI configuration; health and the config show it', async () => {
    const first = await createConfiguration(t, 'pbx one', ariConfig(fake))
    const second = await createConfiguration(t, 'pbx two', ariConfig(fake))
    await createConfiguration(t, 'carrier', { provider: 'twilio', account_sid: 'AC1', auth_token: 'token' })
    expect(await health()).toEqual({ connected: 0, total: 0 })
    start()
    await waitFor('both connected', () => fake.socketCount === 2)
    await waitFor('health shows both', () => t.ctx.ari!.counts().connected === 2)
    expect(await health()).toEqual({ connected: 2, total: 2 })
    expect((await getConfig(first.id)).connected).toBe(true)
    const sockets = fake.requests
      .filter((r) => r.path === '/ari/events')
      .map((r) => r.query.app)
      .sort()
    expect(sockets).toEqual([first.credentials.stasis_app_name, second.credentials.stasis_app_name].sort())
    expect(fake.requests.every((r) => !JSON.stringify(r.query).includes('aripass'))).toBe(true)
  })

  test('create, update and delete take effect without a restart (reactivate: see parking)', async () => {
    start()
    const config = await createConfiguration(t, 'pbx', ariConfig(fake))
    await waitFor('connected after create', () => manager!.isConnected(config.id))

    const other = await startFakeAri({ username: 'u2', password: 'p2' })
    try {
      const updated = await t.request('PUT', `${CONFIGS_PATH}/${config.id}`, {
        body: { config: { provider: 'ari', ari_endpoint: other.url, app_name: 'u2', app_password: 'p2' } },
      })
      expect(updated.status).toBe(200)
      // The fake sees the socket before the client sees it open, so wait for both.
      await waitFor(
        'moved to the new Asterisk',
        () => other.socketCount === 1 && fake.socketCount === 0 && manager!.isConnected(config.id),
      )

      const deleted = await t.request('DELETE', `${CONFIGS_PATH}/${config.id}`)
      expect(deleted.status).toBe(200)
      await waitFor('disconnected after delete', async () => other.socketCount === 0 && (await health()).total === 0)
      expect(await health()).toEqual({ connected: 0, total: 0 })
    } finally {
      await other.close()
    }
  })
})

describe('parking', () => {
  test('credentials refused 5 times in a row park the configuration; reactivate reconnects', async () => {
    fake.setCredentials('ariuser', 'changed-on-the-pbx')
    const config = await createConfiguration(t, 'pbx', ariConfig(fake))
    start()
    await waitFor('parked', async () => (await getConfig(config.id)).inactive)
    expect(t.ctx.ari!.counts()).toEqual({ connected: 0, total: 0 })
    const parked = await getConfig(config.id)
    expect(parked).toMatchObject({ inactive: true, connected: false })
    expect(parked.inactive_since).toBe(new Date(START).toISOString())
    expect(parked.inactive_reason).toStartWith('ari-auth: ARI refused the credentials (HTTP 401')
    expect(parked.inactive_reason).not.toContain('changed-on-the-pbx')
    const pings = fake.requests.filter((r) => r.path === '/ari/asterisk/ping').length
    expect(pings).toBe(5)
    expect(upgrades(fake)).toBe(0)

    fake.setCredentials('ariuser', 'aripass')
    const reactivated = await t.request('POST', `${CONFIGS_PATH}/${config.id}/reactivate`)
    expect(reactivated.body).toMatchObject({ inactive: false, inactive_since: null, inactive_reason: null })
    await waitFor('connected again', () => manager!.isConnected(config.id))
  })

  test('a stored configuration that cannot be used at all is parked at once, without stopping the others', async () => {
    const broken = await createConfiguration(t, 'broken', ariConfig(fake, { ari_endpoint: 'http://[pbx' }))
    const working = await createConfiguration(t, 'working', ariConfig(fake))
    start()
    await waitFor('parked', async () => (await getConfig(broken.id)).inactive)
    expect((await getConfig(broken.id)).inactive_reason).toStartWith('invalid_config: ')
    await waitFor('the other connects', () => manager!.isConnected(working.id))
  })

  test('an hour of unbroken connection failures parks it', async () => {
    await fake.refuseConnections(true)
    const config = await createConfiguration(t, 'pbx', ariConfig(fake))
    start()
    await waitFor('a few failures', () => t.logText().split('ARI events connection failed').length > 3)
    expect((await getConfig(config.id)).inactive).toBe(false)
    clock.advance(PARK_AFTER_FAILING_MS)
    await waitFor('parked', async () => (await getConfig(config.id)).inactive)
    expect((await getConfig(config.id)).inactive_reason).toStartWith('ari-unreachable: failing for 60 min')
  })

  test('a connection that comes back in time is not parked', async () => {
    const config = await createConfiguration(t, 'pbx', ariConfig(fake))
    start()
    await waitFor('connected', () => manager!.isConnected(config.id))
    await fake.refuseConnections(true)
    fake.dropSockets()
    await waitFor('failing', () => t.logText().includes('ARI events connection failed'))
    clock.advance(PARK_AFTER_FAILING_MS - 1_000)
    await fake.refuseConnections(false)
    await waitFor('reconnected', () => manager!.isConnected(config.id))
    expect((await getConfig(config.id)).inactive).toBe(false)
  })
})

describe('calls across reconnects and organizations', () => {
  function dialRequest(config: any, organizationId: number, destination: string): DialRequest {
    return {
      callId: crypto.randomUUID(),
      runId: 1,
      organizationId,
      configurationId: config.id,
      credentials: { allow_raw_dial_strings: true },
      destination,
      callerId: null,
      ringTimeoutSeconds: 30,
      maxCallDurationSeconds: 600,
      agentId: 1,
      detectAnsweringMachine: false,
      mayBeTransferred: false,
    }
  }

  /** One configuration, connected, with two calls up (answered, in the app). */
  async function twoAnsweredCalls() {
    const config = await createConfiguration(t, 'pbx', ariConfig(fake))
    const reports: CallReport[] = []
    t.ctx.telephony.onReport((report) => {
      reports.push(report)
    })
    start()
    await waitFor('connected', () => manager!.isConnected(config.id))
    const calls = [dialRequest(config, 1, 'Local/102@test'), dialRequest(config, 1, 'Local/102@test')]
    for (const call of calls) await t.ctx.telephony.providerFor('ari')!.dial(call)
    await waitFor('both answered', () => reports.filter((r) => r.kind === 'answered').length === 2)
    return { config, reports, calls }
  }

  test('after the socket drops, calls that ended meanwhile are reconciled as failed; live ones continue', async () => {
    const {
      reports,
      calls: [lost, kept],
    } = await twoAnsweredCalls()
    await fake.refuseConnections(true)
    fake.hangup(lost.callId)
    await fake.refuseConnections(false)
    await waitFor('lost call reconciled', () => reports.some((r) => r.callId === lost.callId && r.kind === 'ended'))
    expect(reports.find((r) => r.callId === lost.callId && r.kind === 'ended')).toMatchObject({
      outcome: 'failed',
      providerStatus: 'vanished',
    })
    expect(manager!.isConnected(lost.configurationId)).toBe(true)
    fake.hangup(kept.callId)
    await waitFor('kept call ended', () => reports.some((r) => r.callId === kept.callId && r.kind === 'ended'))
    expect(reports.find((r) => r.callId === kept.callId && r.kind === 'ended')).toMatchObject({ outcome: 'completed' })
  })

  test('the events connection dropped, then restarted by a configuration edit, while calls are up: each keeps its outcome', async () => {
    const { config, reports, calls } = await twoAnsweredCalls()
    const subscriptions = () => fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/subscription'))

    fake.dropSockets()
    await waitFor('reconnected and subscribed again', () => upgrades(fake) === 2 && subscriptions().length === 1)
    // the same server under another spelling of its address: a changed configuration, so a new connection
    const edited = await t.request('PUT', `${CONFIGS_PATH}/${config.id}`, {
      body: { config: { ...ariConfig(fake), ari_endpoint: `${fake.url}/ari/` } },
    })
    expect(edited.status).toBe(200)
    await waitFor(
      'reconnected after the edit',
      () => upgrades(fake) === 3 && subscriptions().length === 2 && manager!.isConnected(config.id),
    )
    expect(fake.socketCount).toBe(1)
    for (const request of subscriptions()) {
      expect(request.path).toBe(`/ari/applications/${config.credentials.stasis_app_name}/subscription`)
      expect(request.query.eventSource.split(',').sort()).toEqual(
        calls.flatMap((call) => [`channel:${call.callId}`, `channel:${call.callId};2`]).sort(),
      )
    }

    for (const call of calls) fake.hangup(call.callId)
    await waitFor('both ended', () => reports.filter((r) => r.kind === 'ended').length === 2)
    for (const call of calls) {
      expect(reports.find((r) => r.callId === call.callId && r.kind === 'ended')).toMatchObject({
        outcome: 'completed',
        cause: { code: 16 },
      })
    }
  })

  test("two organizations on one Asterisk never see each other's calls", async () => {
    const orgB = t.newOrg('org b')
    const configA = await createConfiguration(t, 'pbx', ariConfig(fake))
    const configB = await createConfiguration(t, 'pbx', ariConfig(fake), { key: orgB.key })
    const reports: CallReport[] = []
    t.ctx.telephony.onReport((report) => {
      reports.push(report)
    })
    start()
    await waitFor('both connected', () => manager!.isConnected(configA.id) && manager!.isConnected(configB.id))
    const ari = t.ctx.telephony.providerFor('ari')!
    const callA = dialRequest(configA, 1, 'Local/102@test')
    await ari.dial(callA)
    await waitFor('answered', () => reports.length === 1)
    // B's app may be subscribed to A's channel too (an explicit subscription, another client's subscribeAll): B must not act on it.
    fake.emit(
      { type: 'ChannelDestroyed', cause: 17, cause_txt: 'User busy', channel: { id: callA.callId, state: 'Down' } },
      configB.credentials.stasis_app_name,
    )
    fake.hangup(callA.callId)
    await waitFor('ended', () => reports.length === 2)
    expect(reports[1]).toMatchObject({
      callId: callA.callId,
      outcome: 'completed',
      cause: { code: 16, text: 'Normal Clearing' },
    })
    expect(fake.requests.find((r) => r.method === 'POST' && r.path === '/ari/channels')!.query.app).toBe(
      configA.credentials.stasis_app_name,
    )
    // B's configuration cannot place or look up calls through A's id from B's organization: that is the API's job
    // (resolveOutbound is scoped by organization), covered in test/modules/public-agent.test.ts.
  })
})
