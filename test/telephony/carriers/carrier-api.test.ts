import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildContext } from '../../../src/boot'
import { ConfigError, loadConfig } from '../../../src/config'
import { DomainError } from '../../../src/lib/errors'
import { createLogger } from '../../../src/log'
import { callCarrier, PROVIDER_API_BASE_URLS } from '../../../src/telephony/carriers/http'
import { createTestApp, type TestApp } from '../../support/app'
import { startFakeServer, type FakeServer } from '../../support/fake-carriers/shared'

/** Carrier base URLs as configuration, and the HTTP plumbing every carrier call shares. */

describe('RINGBASE_PROVIDER_API_<PROVIDER>', () => {
  test('replaces the public base URL of that carrier only; unknown carriers and non-URLs are refused at start', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-carrier-config-'))
    try {
      const config = loadConfig(
        { dir: dataDir },
        {
          RINGBASE_PROVIDER_API_TWILIO: 'http://127.0.0.1:9000/',
          RINGBASE_PROVIDER_API_VONAGE: 'https://eu.proxy.example',
        },
      )
      expect(config.providerApiOverrides).toEqual({
        twilio: 'http://127.0.0.1:9000',
        vonage: 'https://eu.proxy.example',
      })
      const ctx = buildContext(config, { log: createLogger('silent') })
      expect(ctx.providerApis).toEqual({
        ...PROVIDER_API_BASE_URLS,
        twilio: 'http://127.0.0.1:9000',
        vonage: 'https://eu.proxy.example',
      })
      ctx.sqlite.close()
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
    expect(() => loadConfig({}, { RINGBASE_PROVIDER_API_ACME: 'http://x' })).toThrow(ConfigError)
    expect(() => loadConfig({}, { RINGBASE_PROVIDER_API_TELNYX: 'telnyx.local' })).toThrow(
      /RINGBASE_PROVIDER_API_TELNYX must be an http\(s\) URL/,
    )
  })
})

describe('callCarrier', () => {
  let t: TestApp
  let fake: FakeServer
  let answers: Response[]
  beforeEach(() => {
    t = createTestApp()
    answers = []
    fake = startFakeServer(() => answers.shift() ?? Response.json({ ok: true }))
  })
  afterEach(() => {
    fake.stop()
    t.close()
  })
  const call = (method: 'GET' | 'POST', idempotent = false) =>
    callCarrier(t.ctx, {
      provider: 'twilio',
      displayName: 'Twilio',
      baseUrl: fake.baseUrl,
      action: 'place the call',
      method,
      path: '/calls',
      headers: {},
      json: method === 'POST' ? {} : undefined,
      idempotent,
      secrets: ['AC-secret-sid'],
    })
  const failure = async (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: DomainError) => ({ kind: error.kind, detail: error.detail }),
    )

  test('a dial the carrier declined (429, 503) is sent again after a backoff; one it may have acted on (500) is not', async () => {
    answers.push(Response.json({ message: 'Too many requests' }, { status: 429 }))
    expect((await call('POST')).status).toBe(200)
    expect(fake.requests).toHaveLength(2)
    answers.push(Response.json({ message: 'Internal error for AC-secret-sid' }, { status: 500 }))
    expect(await failure(call('POST'))).toEqual({
      kind: 'upstream_failed',
      detail: 'Twilio gave an unusable answer (HTTP 500) when asked to place the call: Internal error for ***',
    })
    expect(fake.requests).toHaveLength(3)
  })

  test('reads and hang-ups are retried at most twice, then 502; a 4xx is a refusal (400) at once', async () => {
    answers.push(...[1, 2, 3].map(() => new Response('busy', { status: 502 })))
    expect(await failure(call('GET', true))).toMatchObject({ kind: 'upstream_failed' })
    expect(fake.requests).toHaveLength(3)
    answers.push(Response.json({ errors: [{ detail: 'Unknown account' }] }, { status: 404 }))
    expect(await failure(call('GET', true))).toEqual({
      kind: 'refused',
      detail: 'Twilio refused to place the call (HTTP 404): Unknown account',
    })
    expect(fake.requests).toHaveLength(4)
  })
})
