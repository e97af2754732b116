import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { getConfigCredentials } from '../../src/telephony/config/configurations'
import { createTestApp, UNREACHABLE_URL, type TestApp } from '../support/app'
import { FAKE_IDS, startFakeProviders, type FakeProviders } from '../support/fake-providers'
import { CONFIGS_PATH, createConfiguration, VALID_CONFIGS } from '../support/telephony'

let fakes: FakeProviders
let t: TestApp
beforeAll(() => {
  fakes = startFakeProviders()
})
afterAll(() => fakes.stop())
beforeEach(() => {
  t = createTestApp({ flags: { 'public-url': 'https://voice.example.com' } })
  t.ctx.providerApis = { ...fakes.urls }
  fakes.requests.length = 0
})
afterEach(() => t.close())

const INBOUND_URL = 'https://voice.example.com/api/v1/telephony/inbound/run'
const storedCredentials = (id: number) => getConfigCredentials(t.ctx, id)!.credentials

describe('saving a configuration creates what the provider side is missing', () => {
  test('plivo: an application answering at our inbound URL, with basic auth; its id is stored', async () => {
    const created = await createConfiguration(t, 'plivo', {
      provider: 'plivo',
      auth_id: 'MAPLIVO01',
      auth_token: 'S3cr3t-plivo-token',
    })
    expect(fakes.requests).toHaveLength(1)
    const [request] = fakes.requests
    expect(request).toMatchObject({ provider: 'plivo', method: 'POST', path: '/v1/Account/MAPLIVO01/Application/' })
    expect(request.headers.get('authorization')).toBe(
      `Basic ${Buffer.from('MAPLIVO01:S3cr3t-plivo-token').toString('base64')}`,
    )
    expect(request.body).toMatchObject({
      answer_url: INBOUND_URL,
      answer_method: 'POST',
      app_name: expect.stringMatching(/^ringbase-[0-9a-f]{12}$/),
    })
    expect(created.credentials.application_id).toBe(FAKE_IDS.plivoApplication)
    expect(storedCredentials(created.id).application_id).toBe(FAKE_IDS.plivoApplication)
  })

  test('vobiz: the same application API with its own auth headers', async () => {
    const created = await createConfiguration(t, 'vobiz', {
      provider: 'vobiz',
      auth_id: 'MAVOBIZ01',
      auth_token: 'S3cr3t-vobiz-token',
    })
    const [request] = fakes.requests
    expect(request).toMatchObject({ provider: 'vobiz', method: 'POST', path: '/v1/Account/MAVOBIZ01/Application/' })
    expect(request.headers.get('x-auth-id')).toBe('MAVOBIZ01')
    expect(request.headers.get('x-auth-token')).toBe('S3cr3t-vobiz-token')
    expect(created.credentials.application_id).toBe(FAKE_IDS.vobizApplication)
  })

  test('telnyx: a Call Control application whose id becomes connection_id', async () => {
    const created = await createConfiguration(t, 'telnyx', { provider: 'telnyx', api_key: 'S3cr3t-telnyx-key' })
    const [request] = fakes.requests
    expect(request).toMatchObject({
      provider: 'telnyx',
      method: 'POST',
      path: '/v2/call_control_applications',
      body: { webhook_event_url: INBOUND_URL },
    })
    expect(request.headers.get('authorization')).toBe('Bearer S3cr3t-telnyx-key')
    expect(created.credentials.connection_id).toBe(FAKE_IDS.telnyxConnection)
  })

  test('cloudonix: domain lookup, voice application, domain default; the provider ids are stored but not shown', async () => {
    const created = await createConfiguration(t, 'cx', {
      provider: 'cloudonix',
      bearer_token: 'S3cr3t-cx-token',
      domain_id: 'acme',
    })
    expect(fakes.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /customers/self/domains/acme.cloudonix.net',
      'POST /customers/self/domains/acme.cloudonix.net/applications',
      'PATCH /customers/self/domains/acme.cloudonix.net',
    ])
    expect(fakes.requests[1].body).toMatchObject({ type: 'cxml', url: INBOUND_URL, method: 'POST' })
    expect(fakes.requests[2].body).toEqual({ defaultApplication: FAKE_IDS.cloudonixApplication })
    const applicationName = fakes.requests[1].body as { name: string }
    expect(created.credentials).toEqual({
      bearer_token: '***********oken',
      domain_id: 'acme.cloudonix.net',
      application_name: applicationName.name,
    })
    expect(storedCredentials(created.id)).toMatchObject({
      domain_uuid: FAKE_IDS.cloudonixDomainUuid,
      application_id: String(FAKE_IDS.cloudonixApplication),
      application_uuid: FAKE_IDS.cloudonixApplicationUuid,
    })
  })

  test.each([['plivo'], ['vobiz'], ['telnyx'], ['cloudonix']] as const)(
    '%s: ids in the request mean no provider call',
    async (provider) => {
      await createConfiguration(t, provider, VALID_CONFIGS[provider].config)
      expect(fakes.requests).toEqual([])
    },
  )

  test('an update calls the provider only when the id is cleared', async () => {
    const created = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    await t.request('PUT', `${CONFIGS_PATH}/${created.id}`, {
      body: { name: 'plivo renamed', config: { auth_token: 'S3cr3t-rotated' } },
    })
    expect(fakes.requests).toEqual([])
    const cleared = await t.request('PUT', `${CONFIGS_PATH}/${created.id}`, {
      body: { config: { application_id: null } },
    })
    expect(cleared.body.credentials.application_id).toBe(FAKE_IDS.plivoApplication)
    expect(fakes.requests).toHaveLength(1)
  })
})

describe('a provider that fails: nothing is stored', () => {
  const listed = async () => (await t.request('GET', CONFIGS_PATH)).body.configurations

  test('unreachable → 502 naming the provider', async () => {
    t.ctx.providerApis.plivo = UNREACHABLE_URL
    const response = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'plivo', config: { provider: 'plivo', auth_id: 'MA1', auth_token: 'S3cr3t-x' } },
    })
    expect(response.status).toBe(502)
    expect(response.body).toEqual({ detail: 'Failed to reach Plivo to create an application: connection refused' })
    expect(await listed()).toEqual([])
  })

  test('a refusal (4xx) → 400 with the provider message; a server error or garbage → 502', async () => {
    fakes.failNext('telnyx', 401, { errors: [{ detail: 'Authentication failed' }] })
    const refused = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'telnyx', config: { provider: 'telnyx', api_key: 'S3cr3t-bad' } },
    })
    expect(refused.status).toBe(400)
    expect(refused.body).toEqual({
      detail: 'Telnyx refused to create a Call Control application (HTTP 401): Authentication failed',
    })
    fakes.failNext('cloudonix', 500, { message: 'boom' })
    const broken = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'cx', config: { provider: 'cloudonix', bearer_token: 'S3cr3t-x', domain_id: 'acme' } },
    })
    expect(broken.status).toBe(502)
    expect(broken.body.detail).toBe(
      'Cloudonix gave an unusable answer (HTTP 500) when asked to look up the domain: boom',
    )
    fakes.failNext('vobiz', 201, { no_app_id: true })
    const noId = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'vobiz', config: { provider: 'vobiz', auth_id: 'MA1', auth_token: 'S3cr3t-x' } },
    })
    expect(noId.status).toBe(502)
    expect(noId.body.detail).toBe('Vobiz did not return an id when asked to create an application')
    expect(await listed()).toEqual([])
  })

  test('an update that cannot provision keeps the stored configuration', async () => {
    const created = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    t.ctx.providerApis.plivo = UNREACHABLE_URL
    const response = await t.request('PUT', `${CONFIGS_PATH}/${created.id}`, {
      body: { name: 'renamed', config: { application_id: null } },
    })
    expect(response.status).toBe(502)
    const stored = await t.request('GET', `${CONFIGS_PATH}/${created.id}`)
    expect(stored.body).toMatchObject({ name: 'plivo', credentials: { application_id: 'plivo-app-existing' } })
  })
})
