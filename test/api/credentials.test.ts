import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { credentialHeaders } from '../../src/credentials/headers'
import { readCredential } from '../../src/credentials/store'
import { ensureOrganization } from '../../src/auth/keys'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition } from '../support/agents'
import { httpApiConfig } from '../support/tools'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const BASE = '/api/v1/credentials'
const TOKEN = 'tok-5ecret-value-1234'

const bearer = (name = 'CRM') => ({
  name,
  description: 'CRM API',
  credential_type: 'bearer_token',
  credential_data: { token: TOKEN },
})

async function create(body: unknown = bearer()) {
  const response = await t.request('POST', BASE, { body })
  expect(response.status).toBe(200)
  return response.body
}

/** The organization of `t.adminKey`. */
const adminOrganization = () => ensureOrganization(t.ctx, 'default')

describe('credentials CRUD', () => {
  test('create, list, get, update and delete; the secret is never in a response', async () => {
    const created = await create()
    expect(created).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'CRM',
      description: 'CRM API',
      credential_type: 'bearer_token',
      created_at: '2026-01-05T10:00:00.000Z',
      updated_at: '2026-01-05T10:00:00.000Z',
    })
    const path = `${BASE}/${created.uuid}`
    const responses = [
      await t.request('GET', BASE),
      await t.request('GET', path),
      await t.request('PUT', path, { body: { name: 'CRM prod', description: null } }),
    ]
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200])
    expect(responses[0].body).toEqual([created])
    expect(responses[1].body).toEqual(created)
    expect(responses[2].body).toEqual({ ...created, name: 'CRM prod', description: null })
    for (const response of [...responses, { text: JSON.stringify(created) }]) expect(response.text).not.toContain(TOKEN)

    // Left out, the stored secret stays.
    expect(readCredential(t.ctx, adminOrganization(), created.uuid)).toEqual({
      uuid: created.uuid,
      name: 'CRM prod',
      credential_type: 'bearer_token',
      credential_data: { token: TOKEN },
    })

    const deleted = await t.request('DELETE', path)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ message: 'Credential deleted' })
    expect((await t.request('GET', path)).status).toBe(404)
    expect((await t.request('GET', BASE)).body).toEqual([])
    expect(readCredential(t.ctx, adminOrganization(), created.uuid)).toBeNull()
  })

  test('new credential_data replaces the secret; a type change needs it', async () => {
    const created = await create()
    const path = `${BASE}/${created.uuid}`
    const withoutData = await t.request('PUT', path, { body: { credential_type: 'api_key' } })
    expect(withoutData.status).toBe(422)
    expect(withoutData.body.detail.map((item: any) => item.loc)).toEqual([['body', 'credential_data']])

    const changed = await t.request('PUT', path, {
      body: { credential_type: 'api_key', credential_data: { api_key: 'k-2', header_name: 'X-Key', extra: 'dropped' } },
    })
    expect(changed.status).toBe(200)
    expect(changed.body.credential_type).toBe('api_key')
    expect(readCredential(t.ctx, adminOrganization(), created.uuid)!.credential_data).toEqual({
      api_key: 'k-2',
      header_name: 'X-Key',
    })

    // Checked against the stored type when the type is left out.
    const wrongFields = await t.request('PUT', path, { body: { credential_data: { token: 'x' } } })
    expect(wrongFields.status).toBe(422)
    expect(wrongFields.body.detail.map((item: any) => item.loc)).toEqual([['body', 'credential_data', 'api_key']])
  })

  test('a name is unique in the organization (409), not across organizations', async () => {
    await create()
    const duplicate = await t.request('POST', BASE, { body: { ...bearer(), name: '  CRM ' } })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body).toEqual({ detail: "A credential named 'CRM' already exists in this organization." })
    const other = await create(bearer('Other'))
    expect((await t.request('PUT', `${BASE}/${other.uuid}`, { body: { name: 'CRM' } })).status).toBe(409)
    const { key } = t.newOrg('acme')
    expect((await t.request('POST', BASE, { key, body: bearer() })).status).toBe(200)
  })
})

describe('a credential in use', () => {
  /** An agent whose webhook node (and, with `preCallFetch`, start node's fetch) sends the credential. */
  function definitionNaming(credentialUuid: string, preCallFetch = false) {
    const start = sampleDefinition({ triggerPath: null })
    const webhook = { name: 'CRM', endpoint_url: 'http://127.0.0.1:9/calls', credential_uuid: credentialUuid }
    const [startNode, ...rest] = start.nodes
    const fetching = {
      ...startNode,
      data: {
        ...startNode.data,
        pre_call_fetch_enabled: true,
        pre_call_fetch_url: 'http://127.0.0.1:9/lookup',
        pre_call_fetch_credential_uuid: credentialUuid,
      },
    }
    return {
      ...start,
      nodes: [
        preCallFetch ? fetching : startNode,
        ...rest,
        ...(preCallFetch ? [] : [{ id: 'crm', type: 'webhook', position: { x: 0, y: 0 }, data: webhook }]),
      ],
    }
  }

  test('is not deleted while an active tool, a webhook node or a pre-call fetch names it (409 naming them); once none does, it is', async () => {
    const credential = await create()
    const path = `${BASE}/${credential.uuid}`
    const tool = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Lookup',
        definition: {
          type: 'http_api',
          config: httpApiConfig({ url: 'http://127.0.0.1:9/lookup', credential_uuid: credential.uuid }),
        },
      },
    })
    expect(tool.status, tool.text).toBe(200)
    const hooked = await createAgent(t, 'Hooked', undefined, definitionNaming(credential.uuid))
    const fetching = await createAgent(t, 'Fetching', undefined, definitionNaming(credential.uuid, true))

    const refused = await t.request('DELETE', path)
    expect(refused.status).toBe(409)
    expect(refused.body.detail).toContain("Credential 'CRM' cannot be deleted while it is named by")
    for (const user of [`agent 'Hooked' (id ${hooked.id}`, `agent 'Fetching' (id ${fetching.id}`, `tool 'Lookup'`])
      expect(refused.body.detail).toContain(user)
    expect((await t.request('GET', path)).status).toBe(200)

    // the tool archived and both agents changed: nothing names it any more
    expect((await t.request('DELETE', `/api/v1/tools/${tool.body.tool_uuid}`)).status).toBe(200)
    for (const agent of [hooked, fetching]) {
      const changed = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
        body: { workflow_definition: sampleDefinition({ triggerPath: null }) },
      })
      expect(changed.status, changed.text).toBe(200)
    }
    // the published versions still name it until the drafts are published
    expect((await t.request('DELETE', path)).status).toBe(409)
    for (const agent of [hooked, fetching])
      expect((await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)).status).toBe(200)
    expect((await t.request('DELETE', path)).status).toBe(200)
  })

  test("another organization's agents and tools naming the same uuid do not hold it", async () => {
    const credential = await create()
    const other = t.newOrg('other')
    await createAgent(t, 'Theirs', other.key, definitionNaming(credential.uuid))
    expect((await t.request('DELETE', `${BASE}/${credential.uuid}`)).status).toBe(200)
  })
})

describe('secrets at rest and in logs', () => {
  test('the database row holds only sealed data; the log never has the secret', async () => {
    const created = await create({
      name: 'Basic',
      credential_type: 'basic_auth',
      credential_data: { username: 'svc-user', password: 'pa55-w0rd-xyz' },
    })
    const row = t.ctx.sqlite
      .query<Record<string, unknown>, [string]>('SELECT * FROM credentials WHERE uuid = ?')
      .get(created.uuid)!
    expect(row.sealed_data).toMatch(/^v1:[^:]+:[^:]+:[^:]+$/)
    const rowText = JSON.stringify(row)
    for (const secret of ['svc-user', 'pa55-w0rd-xyz']) {
      expect(rowText).not.toContain(secret)
      expect(t.logText()).not.toContain(secret)
    }
    expect(readCredential(t.ctx, adminOrganization(), created.uuid)!.credential_data).toEqual({
      username: 'svc-user',
      password: 'pa55-w0rd-xyz',
    })
  })

  test('a 422 does not echo credential_data, even for a missing top-level field', async () => {
    for (const body of [
      { credential_type: 'bearer_token', credential_data: { token: TOKEN } },
      { name: 'x', credential_type: 'bearer_token', credential_data: { token: `${TOKEN}\r\nX-Evil: 1` } },
      { name: 'x', credential_type: 'api_key', credential_data: { api_key: TOKEN, header_name: 'Bad Header' } },
      { name: 'x', credential_type: 'nope', credential_data: { token: TOKEN } },
    ]) {
      const response = await t.request('POST', BASE, { body })
      expect(response.status).toBe(422)
      expect(response.text).not.toContain(TOKEN)
    }
  })
})

describe('access', () => {
  test("another organization's credential is 404 everywhere and never read", async () => {
    const created = await create()
    const { key, organizationId } = t.newOrg('acme')
    const path = `${BASE}/${created.uuid}`
    expect((await t.request('GET', path, { key })).status).toBe(404)
    expect((await t.request('PUT', path, { key, body: { name: 'mine' } })).status).toBe(404)
    expect((await t.request('DELETE', path, { key })).status).toBe(404)
    expect((await t.request('GET', BASE, { key })).body).toEqual([])
    expect(readCredential(t.ctx, organizationId, created.uuid)).toBeNull()
    expect((await t.request('GET', path)).body.name).toBe('CRM')
    expect((await t.request('GET', `${BASE}/not-a-uuid`)).body).toEqual({ detail: 'Credential not found' })
  })

  test('a trigger key is refused (403) before its body is looked at; no key is 401', async () => {
    const created = await create()
    const { key } = t.newOrg('default', 'trigger')
    expect((await t.request('GET', BASE, { key })).status).toBe(403)
    expect((await t.request('GET', `${BASE}/${created.uuid}`, { key })).status).toBe(403)
    expect((await t.request('POST', BASE, { key, body: {} })).status).toBe(403)
    expect((await t.request('PUT', `${BASE}/${created.uuid}`, { key, body: { name: 'x' } })).status).toBe(403)
    expect((await t.request('DELETE', `${BASE}/${created.uuid}`, { key })).status).toBe(403)
    expect((await t.request('GET', BASE, { key: null })).status).toBe(401)
    expect((await t.request('GET', `${BASE}/${created.uuid}`)).status).toBe(200)
  })
})

describe('validation', () => {
  const locs = (response: { body: any }) => response.body.detail.map((item: any) => item.loc)

  test('required fields per type', async () => {
    const cases: [unknown, (string | number)[][]][] = [
      [
        {},
        [
          ['body', 'name'],
          ['body', 'credential_type'],
          ['body', 'credential_data'],
        ],
      ],
      [{ name: 'a', credential_type: 'bearer_token', credential_data: {} }, [['body', 'credential_data', 'token']]],
      [{ name: 'a', credential_type: 'api_key', credential_data: {} }, [['body', 'credential_data', 'api_key']]],
      [
        { name: 'a', credential_type: 'basic_auth', credential_data: {} },
        [
          ['body', 'credential_data', 'username'],
          ['body', 'credential_data', 'password'],
        ],
      ],
      [
        { name: 'a', credential_type: 'custom_header', credential_data: { header_value: 'v' } },
        [['body', 'credential_data', 'header_name']],
      ],
      [{ name: 'a', credential_type: 'custom_header', credential_data: 'token' }, [['body', 'credential_data']]],
      [
        { name: '   ', credential_type: 'bearer_token', credential_data: { token: 1 } },
        [
          ['body', 'name'],
          ['body', 'credential_data', 'token'],
        ],
      ],
      [{ name: 'a', credential_type: 'oauth', credential_data: {} }, [['body', 'credential_type']]],
      [[1], [['body']]],
    ]
    for (const [body, expected] of cases) {
      const response = await t.request('POST', BASE, { body })
      expect(response.status).toBe(422)
      expect(locs(response)).toEqual(expected)
    }
    expect((await t.request('GET', BASE)).body).toEqual([])
  })

  test('header names are HTTP tokens and not ones the client owns; values have no CR, LF or NUL', async () => {
    const custom = (header_name: string, header_value = 'v') => ({
      name: 'c',
      credential_type: 'custom_header',
      credential_data: { header_name, header_value },
    })
    for (const body of [
      custom('X Bad'),
      custom('X-Bad:'),
      custom('Ünïcode'),
      custom('Host'),
      custom('content-length'),
      custom('X-Ringbase-Signature'),
      custom('X-Ok', 'a\r\nInjected: 1'),
      custom('X-Ok', 'a\nb'),
      custom('X-Ok', 'a\0b'),
      { name: 'b', credential_type: 'basic_auth', credential_data: { username: 'a:b', password: 'p' } },
    ]) {
      const response = await t.request('POST', BASE, { body })
      expect(response.status).toBe(422)
      expect(response.body.detail[0].loc[0]).toBe('body')
      expect(response.body.detail[0].loc[1]).toBe('credential_data')
    }
    expect((await t.request('POST', BASE, { body: custom("X-Sig_1.~!#$%&'*+^`|", 'tab\tok') })).status).toBe(200)
  })

  test('a 100k-character string is 422 in every field, not 500', async () => {
    const huge = 'x'.repeat(100_000)
    const cases: [unknown, (string | number)[]][] = [
      [{ ...bearer(), name: huge }, ['body', 'name']],
      [{ ...bearer(), description: huge }, ['body', 'description']],
      [{ ...bearer(), credential_data: { token: huge } }, ['body', 'credential_data', 'token']],
      [
        { name: 'c', credential_type: 'custom_header', credential_data: { header_name: huge, header_value: 'v' } },
        ['body', 'credential_data', 'header_name'],
      ],
      [
        { name: 'c', credential_type: 'custom_header', credential_data: { header_name: 'X-A', header_value: huge } },
        ['body', 'credential_data', 'header_value'],
      ],
    ]
    for (const [body, loc] of cases) {
      const response = await t.request('POST', BASE, { body })
      expect(response.status).toBe(422)
      expect(locs(response)).toEqual([loc])
    }
    expect(
      (await t.request('POST', BASE, { body: { ...bearer(), credential_data: { token: 'x'.repeat(4096) } } })).status,
    ).toBe(200)
    const created = (await t.request('GET', BASE)).body[0]
    const update = await t.request('PUT', `${BASE}/${created.uuid}`, { body: { credential_data: { token: huge } } })
    expect(update.status).toBe(422)
    expect(locs(update)).toEqual([['body', 'credential_data', 'token']])
  })
})

describe('credentialHeaders', () => {
  const headers = (credential_type: string, credential_data: Record<string, string>) =>
    credentialHeaders({ uuid: 'u', name: 'n', credential_type, credential_data } as Parameters<
      typeof credentialHeaders
    >[0])

  test('one header per type', () => {
    expect(headers('bearer_token', { token: 'abc' })).toEqual({ Authorization: 'Bearer abc' })
    expect(headers('api_key', { api_key: 'k' })).toEqual({ 'X-API-Key': 'k' })
    expect(headers('api_key', { api_key: 'k', header_name: 'X-Key' })).toEqual({ 'X-Key': 'k' })
    expect(headers('basic_auth', { username: 'ü', password: 'p:q' })).toEqual({
      Authorization: `Basic ${Buffer.from('ü:p:q').toString('base64')}`,
    })
    expect(headers('basic_auth', { username: 'u', password: '' })).toEqual({ Authorization: `Basic ${btoa('u:')}` })
    expect(headers('custom_header', { header_name: 'X-Sig', header_value: 'v' })).toEqual({ 'X-Sig': 'v' })
  })

  test('a stored credential read back produces its header', async () => {
    const created = await create({
      name: 'k',
      credential_type: 'api_key',
      credential_data: { api_key: 'key-1', header_name: '' },
    })
    expect(credentialHeaders(readCredential(t.ctx, adminOrganization(), created.uuid)!)).toEqual({
      'X-API-Key': 'key-1',
    })
  })
})
