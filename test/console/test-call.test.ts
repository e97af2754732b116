import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { startAriManager } from '../../src/telephony/ari/manager'
import { createTestApp, type TestApp } from '../support/app'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { createConfiguration } from '../support/telephony'
import { configureModelsNeverAsked } from '../support/voice-models'
import { waitFor } from '../support/wait'

// The console's test call: the public trigger accepts a signed-in browser session (with its CSRF token) as well as a key.

const PUBLIC = '/api/v1/public/agent'
let t: TestApp
let fake: FakeAri

beforeEach(async () => {
  fake = await startFakeAri()
  t = createTestApp({ flags: { 'ring-timeout': '5' } })
  startAriManager(t.ctx, { events: { backoff: { baseMs: 2, capMs: 10 } } })
  const config = await createConfiguration(
    t,
    'pbx',
    {
      provider: 'ari',
      ari_endpoint: fake.url,
      app_name: 'ariuser',
      app_password: 'aripass',
      allow_raw_dial_strings: true,
    },
    { isDefaultOutbound: true },
  )
  await waitFor('ARI connected', () => t.ctx.ariConnected(config.id))
  // Run starts refuse an agent without models (models/readiness.ts).
  await configureModelsNeverAsked(t)
})
afterEach(async () => {
  await t.ctx.ari!.stop()
  await fake.close()
  t.close()
})

async function createAgent(key = t.adminKey) {
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    key,
    body: {
      name: 'Reminder',
      workflow_definition: {
        nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { name: 'Start', prompt: 'Hi.' } }],
        edges: [],
      },
    },
  })
  expect(response.status, response.text).toBe(200)
  return response.body as { id: number; workflow_uuid: string }
}

async function signIn(apiKey: string) {
  const response = await t.request('POST', '/api/v1/auth/session', { key: null, body: { api_key: apiKey } })
  expect(response.status).toBe(200)
  return { cookie: response.headers.get('set-cookie')!.split(';')[0], csrf: response.body.session.csrf_token as string }
}

const testCall = (
  agentUuid: string,
  headers: Record<string, string>,
  body: unknown = { phone_number: 'Local/102@test' },
) => t.request('POST', `${PUBLIC}/test/workflow/${agentUuid}`, { key: null, headers, body })

describe('a test call from a signed-in browser', () => {
  test('a session with its CSRF token starts a run of its own organization', async () => {
    const agent = await createAgent()
    const { cookie, csrf } = await signIn(t.adminKey)
    const response = await testCall(agent.workflow_uuid, { cookie, 'x-csrf-token': csrf })
    expect(response.status, response.text).toBe(200)
    const run = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${response.body.workflow_run_id}`)
    expect(run.status).toBe(200)
  })

  test('without the CSRF token, or with a wrong one, it is 403 and no run is made', async () => {
    const agent = await createAgent()
    const { cookie } = await signIn(t.adminKey)
    const attempts: Record<string, string>[] = [{ cookie }, { cookie, 'x-csrf-token': 'forged' }]
    for (const headers of attempts) {
      const response = await testCall(agent.workflow_uuid, headers)
      expect(response.status).toBe(403)
      expect(response.body.detail).toContain('X-CSRF-Token')
    }
    expect(t.ctx.sqlite.query('SELECT COUNT(*) AS n FROM workflow_runs').get()).toEqual({ n: 0 })
  })

  test("a trigger key's session may call; another organization's agent is 404", async () => {
    const agent = await createAgent()
    const triggerKey = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'trigger', scope: 'trigger' } })
    expect(triggerKey.status, triggerKey.text).toBe(200)
    const trigger = await signIn(triggerKey.body.api_key)
    const called = await testCall(agent.workflow_uuid, { cookie: trigger.cookie, 'x-csrf-token': trigger.csrf })
    expect(called.status, called.text).toBe(200)
    const other = await signIn(t.newOrg('other').key)
    const foreign = await testCall(agent.workflow_uuid, { cookie: other.cookie, 'x-csrf-token': other.csrf })
    expect(foreign.status).toBe(404)
  })

  test('neither key nor session: the missing key is still a 422 (with the body problems); an ended session is 401', async () => {
    const agent = await createAgent()
    const missing = await testCall(agent.workflow_uuid, {}, {})
    expect(missing.status).toBe(422)
    expect(missing.body.detail.map((item: { loc: unknown }) => item.loc)).toEqual([
      ['header', 'X-API-Key'],
      ['body', 'phone_number'],
    ])
    const onlyKey = await testCall(agent.workflow_uuid, {})
    expect(onlyKey.status).toBe(422)
    expect(onlyKey.body.detail).toEqual([
      { type: 'missing', loc: ['header', 'X-API-Key'], msg: 'Field required', input: null },
    ])
    const ended = await testCall(agent.workflow_uuid, { cookie: 'ringbase_session=unknown', 'x-csrf-token': 'x' })
    expect(ended.status).toBe(401)
  })

  test('the OpenAPI document says the key is optional and names the session', async () => {
    const document = await t.request('GET', '/api/v1/openapi.json', { key: null })
    const operation = document.body.paths[`${PUBLIC}/test/workflow/{workflow_uuid}`].post
    const keyParameter = operation.parameters.find(
      (parameter: { name: string }) => parameter.name.toLowerCase() === 'x-api-key',
    )
    expect(keyParameter.required).toBeFalsy()
    expect(keyParameter.schema.description).toContain('X-CSRF-Token')
  })
})
