import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createAgent, seedRun } from '../support/agents'
import { createTestApp, type TestApp, type TestResponse } from '../support/app'
import { CONFIGS_PATH, VALID_CONFIGS } from '../support/telephony'

/*
 * A scenario that creates every kind of secret the server holds or hands out (provider credentials, credentials for
 * other services, model server keys, the webhook signing secret, API keys, public download tokens, upload signatures),
 * then uses the API the way clients do, errors included. No response carries a secret except the one response that
 * hands it out, and no log line ever does.
 * In-process: a run with artifacts is seeded through the domain (no call needed to get a download token).
 */

type Recorded = { method: string; path: string; status: number; text: string }
type Secret = { value: string; kind: string; handedOutIn: (response: Recorded) => boolean }

let t: TestApp
const responses: Recorded[] = []
const secrets: Secret[] = []
const never = () => false

async function call(
  method: string,
  path: string,
  options: Parameters<TestApp['request']>[2] = {},
): Promise<TestResponse> {
  const response = await t.request(method, path, options)
  responses.push({ method, path, status: response.status, text: response.text })
  return response
}

const ok = async (method: string, path: string, body?: unknown) => {
  const response = await call(method, path, { body })
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body
}

beforeAll(async () => {
  t = createTestApp()
  secrets.push({ value: t.adminKey, kind: 'bootstrap API key', handedOutIn: never })

  // Provider credentials of every provider, then read, sent back masked, and edited wrongly.
  const configIds: Record<string, number> = {}
  for (const [provider, { config, secrets: values }] of Object.entries(VALID_CONFIGS)) {
    for (const value of values) secrets.push({ value, kind: `${provider} credential`, handedOutIn: never })
    configIds[provider] = (await ok('POST', CONFIGS_PATH, { name: provider, config })).id
  }
  await ok('GET', CONFIGS_PATH)
  for (const id of Object.values(configIds)) {
    const shown = await ok('GET', `${CONFIGS_PATH}/${id}`)
    await ok('PUT', `${CONFIGS_PATH}/${id}`, { config: shown.credentials })
  }
  await call('PUT', `${CONFIGS_PATH}/${configIds.ari}`, {
    body: { config: { ari_endpoint: 'http://elsewhere.example:8088' } },
  })
  await call('PUT', `${CONFIGS_PATH}/${configIds.twilio}`, { body: { config: { auth_token: '****oken' } } })
  await call('PUT', `${CONFIGS_PATH}/${configIds.vonage}`, { body: { config: { api_secret: 5 } } })

  // Credentials for other services, of every type, and a 422 carrying one.
  const credentialData = {
    bearer_token: { token: 'cred-bearer-S3cr3t-value' },
    api_key: { api_key: 'cred-apikey-S3cr3t-value', header_name: 'X-Key' },
    basic_auth: { username: 'svc', password: 'cred-basic-S3cr3t-value' },
    custom_header: { header_name: 'X-Token', header_value: 'cred-header-S3cr3t-value' },
  }
  for (const [credential_type, credential_data] of Object.entries(credentialData)) {
    secrets.push({
      value: Object.values(credential_data).find((value) => value.includes('S3cr3t'))!,
      kind: `${credential_type} credential`,
      handedOutIn: never,
    })
    const created = await ok('POST', '/api/v1/credentials', { name: credential_type, credential_type, credential_data })
    await ok('GET', `/api/v1/credentials/${created.uuid}`)
    await ok('PUT', `/api/v1/credentials/${created.uuid}`, { description: 'rotated' })
  }
  secrets.push({ value: 'cred-refused-S3cr3t-value', kind: 'credential in a refused request', handedOutIn: never })
  await call('POST', '/api/v1/credentials', {
    body: { name: 'x', credential_type: 'bearer_token', credential_data: { token: 'cred-refused-S3cr3t-value\n' } },
  })
  await ok('GET', '/api/v1/credentials')

  // A model server connection's key: shown masked, sent back masked, checked against a server that is not there.
  const modelKey = 'sk-model-S3cr3t-value'
  secrets.push({ value: modelKey, kind: 'provider connection API key', handedOutIn: never })
  const connection = await ok('POST', '/api/v1/organizations/provider-connections', {
    name: 'models',
    provider: 'openai',
    base_url: 'http://127.0.0.1:9/v1',
    api_key: modelKey,
  })
  const connectionPath = `/api/v1/organizations/provider-connections/${connection.uuid}`
  await ok('PUT', connectionPath, { api_key: (await ok('GET', connectionPath)).api_key })
  await ok('POST', `${connectionPath}/check`)
  await call('PUT', connectionPath, { body: { api_key: 5 } })
  await ok('GET', '/api/v1/organizations/provider-connections')
  await ok('POST', '/api/v1/organizations/model-configurations', {
    name: 'models',
    llm: { provider_connection_uuid: connection.uuid },
  })

  // The webhook signing secret: shown once, in the answer that creates (or rotates) it.
  for (const round of ['created', 'rotated']) {
    const { secret } = await ok('POST', '/api/v1/organizations/webhook-signing-secret')
    const handout = responses.at(-1)!
    secrets.push({ value: secret, kind: `webhook signing secret (${round})`, handedOutIn: (r) => r === handout })
    await ok('GET', '/api/v1/organizations/webhook-signing-secret')
  }

  // API keys: each is shown once, in the answer that creates it.
  for (const scope of ['admin', 'trigger']) {
    const created = await ok('POST', '/api/v1/user/api-keys', { name: `${scope} key`, scope })
    secrets.push({
      value: created.api_key,
      kind: `${scope} API key`,
      handedOutIn: (r) =>
        r.method === 'POST' && r.path === '/api/v1/user/api-keys' && r.text.includes(`"id":${created.id},`),
    })
    await ok('DELETE', `/api/v1/user/api-keys/${created.id}`)
  }
  await ok('GET', '/api/v1/user/api-keys?include_archived=true')
  await call('GET', '/api/v1/user/api-keys', { key: 'rb_not-a-key' })

  // A run with a recording: its public download token is in the run's own read endpoints, and is used without a key.
  const agent = await createAgent(t, 'Secrets')
  await t.ctx.objects.put('recordings/1/secrets.wav', 'RIFF-recording')
  const run = seedRun(t, {
    organizationId: 1,
    agent,
    outcome: { durationSeconds: 30 },
    artifacts: { recording: 'recordings/1/secrets.wav' },
  })
  const detail = await ok('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)
  secrets.push({
    value: detail.public_access_token,
    kind: 'download token',
    handedOutIn: (r) => r.method === 'GET' && /\/runs(\/|\?|$)/.test(r.path),
  })
  await ok('GET', `/api/v1/workflow/${agent.id}/runs`)
  await ok('GET', '/api/v1/organizations/usage/runs')
  const download = await call('GET', new URL(detail.recording_public_url).pathname, { key: null })
  expect(download.text).toBe('RIFF-recording')

  // An upload: the signed URL is handed out once.
  const grant = await ok('POST', '/api/v1/s3/presigned-upload-url', { file_name: 'leads.csv', file_size: 4 })
  const signature = new URL(grant.upload_url).searchParams.get('signature')!
  secrets.push({
    value: signature,
    kind: 'upload signature',
    handedOutIn: (r) => r.path === '/api/v1/s3/presigned-upload-url' && r.text.includes(signature),
  })
  const { pathname, search } = new URL(grant.upload_url)
  const put = await t.app.handle(
    new Request(`http://localhost${pathname}${search}`, {
      method: 'PUT',
      body: 'a,b\n',
      headers: { 'content-type': 'text/csv' },
    }),
  )
  responses.push({ method: 'PUT', path: pathname, status: put.status, text: await put.text() })

  // Every GET operation of the document, with the ids of this scenario.
  const ids: Record<string, string> = {
    workflow_id: String(agent.id),
    run_id: String(run.id),
    config_id: String(configIds.ari),
    name: 'startCall',
    uuid: connection.uuid,
  }
  const document = await ok('GET', '/api/v1/openapi.json')
  for (const [path, byMethod] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    if ('get' in byMethod)
      await call(
        'GET',
        path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? '1'),
      )
  }
  await new Promise((resolve) => setImmediate(resolve)) // the last request's log line
})
afterAll(() => t.close())

test('the scenario made every kind of secret and handed out those meant to be', () => {
  const kinds = secrets.map((secret) => secret.kind)
  for (const provider of Object.keys(VALID_CONFIGS))
    if (VALID_CONFIGS[provider as keyof typeof VALID_CONFIGS].secrets.length > 0)
      expect(kinds).toContain(`${provider} credential`)
  for (const kind of [
    'bearer_token credential',
    'basic_auth credential',
    'admin API key',
    'trigger API key',
    'download token',
    'upload signature',
    'provider connection API key',
    'webhook signing secret (created)',
    'webhook signing secret (rotated)',
  ]) {
    expect(kinds).toContain(kind)
  }
  for (const secret of secrets.filter((s) => s.handedOutIn !== never)) {
    expect(
      responses.some((response) => secret.handedOutIn(response) && response.text.includes(secret.value)),
      secret.kind,
    ).toBe(true)
  }
  expect(responses.filter((response) => response.status === 422).length).toBeGreaterThanOrEqual(4)
})

test('no response carries a secret, except the one that hands it out', () => {
  const leaks = secrets.flatMap((secret) =>
    responses
      .filter((response) => response.text.includes(secret.value) && !secret.handedOutIn(response))
      .map((response) => `${secret.kind} in ${response.method} ${response.path} (${response.status})`),
  )
  expect(leaks).toEqual([])
})

test('no log line carries a secret', () => {
  const lines = t.logText().split('\n')
  expect(lines.length).toBeGreaterThan(responses.length)
  const leaks = secrets.flatMap((secret) =>
    lines.filter((line) => line.includes(secret.value)).map((line) => `${secret.kind}: ${line.slice(0, 200)}`),
  )
  expect(leaks).toEqual([])
})
