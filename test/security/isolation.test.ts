import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { DialError } from '../../src/telephony/provider'
import type { TestApp } from '../support/app'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { sampleDefinition } from '../support/agents'
import { createRecording, lineToneWav } from '../support/recordings'
import { VALID_CONFIGS } from '../support/telephony'

/*
 * Organizations stay apart and trigger keys stay in their lane, for every operation the OpenAPI document lists (not a
 * hand list): a new operation fails here until it is covered. Black-box; also run against the compiled binary.
 */

type Operation = {
  key: string
  method: string
  path: string
  pathParameters: string[]
  hasBody: boolean
  isPublic: boolean
}

let t: HttpTestApp
let operations: Operation[]
/** A value for every path parameter, naming a resource of organization A (the `default` one, of `t.adminKey`). */
const ids: Record<string, string> = {}
/** Names every resource of organization A carries: none may show up in organization B's answers. */
const MARK = 'OrgA-only'
/**
 * Parameters whose resource depends on the route, over `ids`: the first entry whose fragment the path contains.
 * `{uuid}` is a trigger path in `ids`; trunks belong to a configuration whose provider has them (Cloudonix), while
 * `ids.config_id` is the ARI one; text chat sessions are runs of their own mode.
 */
const idsOnPaths: { fragment: string; ids: Record<string, string> }[] = []
let otherKey: string

const ok = async (method: string, path: string, body?: unknown) => {
  const response = await t.request(method, path, { body })
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
  return response.body
}

/** Uploads a CSV through its signed URL, over real HTTP. */
async function upload(csv: string): Promise<string> {
  const grant = await ok('POST', '/api/v1/s3/presigned-upload-url', {
    file_name: 'contacts.csv',
    file_size: csv.length,
  })
  const { pathname, search } = new URL(grant.upload_url)
  const put = await fetch(`${await t.httpUrl()}${pathname}${search}`, {
    method: 'PUT',
    body: csv,
    headers: { 'content-type': 'text/csv' },
  })
  expect(put.status).toBe(200)
  return grant.file_key
}

beforeAll(async () => {
  t = await startHttpTestApp()
  otherKey = t.newOrg('other').key
  const document = (await t.request('GET', '/api/v1/openapi.json')).body
  operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({
      key: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      pathParameters: (operation.parameters ?? [])
        .filter((p: any) => p.in === 'path')
        .map((p: any) => p.name as string),
      hasBody: operation.requestBody !== undefined,
      isPublic: Array.isArray(operation.security) && operation.security.length === 0,
    })),
  )

  const triggerPath = crypto.randomUUID()
  const definition = sampleDefinition({ triggerPath })
  Object.assign(definition.nodes[0].data, { greeting: 'Hello.' }) // a text chat opens with it, no model server asked
  const agent = await ok('POST', '/api/v1/workflow/create/definition', {
    name: `${MARK} agent`,
    workflow_definition: definition,
  })
  Object.assign(ids, { workflow_id: String(agent.id), workflow_uuid: agent.workflow_uuid, uuid: triggerPath })
  ids.api_key_id = String((await ok('POST', '/api/v1/user/api-keys', { name: `${MARK} key` })).id)
  const ari = await ok('POST', '/api/v1/organizations/telephony-configs', {
    name: `${MARK} pbx`,
    is_default_outbound: true,
    config: {
      provider: 'ari',
      ari_endpoint: 'http://127.0.0.1:9',
      app_name: 'u',
      app_password: 'p',
      allow_raw_dial_strings: false,
    },
  })
  ids.config_id = String(ari.id)
  ids.phone_number_id = String(
    (
      await ok('POST', `/api/v1/organizations/telephony-configs/${ari.id}/phone-numbers`, {
        address: '1001',
        label: MARK,
      })
    ).id,
  )
  const cloudonix = await ok('POST', '/api/v1/organizations/telephony-configs', {
    name: `${MARK} cloudonix`,
    config: VALID_CONFIGS.cloudonix.config,
  })
  idsOnPaths.push({ fragment: '/trunks', ids: { config_id: String(cloudonix.id) } })
  ids.trunk_id = String(
    (
      await ok('POST', `/api/v1/organizations/telephony-configs/${cloudonix.id}/trunks`, {
        name: `${MARK}-trunk`,
        settings: { region: 'india', sip_domain: 'acme.cloudonix.net' },
      })
    ).id,
  )
  // Nothing listens at the model server's address: no operation here asks it (a run start needs
  // models to dial).
  const connection = await ok('POST', '/api/v1/organizations/provider-connections', {
    name: `${MARK} models`,
    provider: 'openai',
    base_url: 'http://127.0.0.1:9/v1',
    api_key: 'k',
  })
  idsOnPaths.push({ fragment: '/provider-connections/', ids: { uuid: connection.uuid } })
  const configuration = await ok('POST', '/api/v1/organizations/model-configurations', {
    name: `${MARK} models`,
    llm: { provider_connection_uuid: connection.uuid },
    stt: { provider_connection_uuid: connection.uuid, settings: { model: 'whisper-1' } },
  })
  idsOnPaths.push({ fragment: '/model-configurations/', ids: { uuid: configuration.uuid } })
  // A run: the trigger writes it before dialling, and the dial fails (the compiled server's PBX address has nothing
  // listening; in-process, where no ARI connection manager runs, a provider that refuses stands in for it).
  if ('ctx' in t)
    (t as TestApp).ctx.telephony.register('ari', {
      dial: async () => {
        throw new DialError('unreachable')
      },
      hangup: async () => {},
      callState: async () => 'unknown',
    })
  await t.request('POST', `/api/v1/public/agent/workflow/${agent.workflow_uuid}`, { body: { phone_number: '1000' } })
  ids.run_id = String((await ok('GET', `/api/v1/workflow/${agent.id}/runs`)).runs[0].id)
  const campaign = await ok('POST', '/api/v1/campaign/create', {
    name: `${MARK} campaign`,
    source_type: 'csv',
    source_id: await upload('phone_number,first_name\n1002,Ada\n'),
    workflow_id: agent.id,
  })
  ids.campaign_id = String(campaign.id)
  ids.credential_uuid = (
    await ok('POST', '/api/v1/credentials', {
      name: `${MARK} credential`,
      credential_type: 'bearer_token',
      credential_data: { token: 't0ken' },
    })
  ).uuid
  ids.tool_uuid = (
    await ok('POST', '/api/v1/tools/', { name: `${MARK} tool`, definition: { type: 'calculator' } })
  ).tool_uuid
  // A knowledge-base document: full_document needs no embeddings model (and it is never processed here).
  const grant = await ok('POST', '/api/v1/knowledge-base/upload-url', { filename: 'faq.txt', mime_type: 'text/plain' })
  const { pathname, search } = new URL(grant.upload_url)
  expect(
    (
      await fetch(`${await t.httpUrl()}${pathname}${search}`, {
        method: 'PUT',
        body: 'FAQ',
        headers: { 'content-type': 'text/plain' },
      })
    ).status,
  ).toBe(200)
  ids.document_uuid = (
    await ok('POST', '/api/v1/knowledge-base/process-document', {
      document_uuid: grant.document_uuid,
      s3_key: grant.s3_key,
      retrieval_mode: 'full_document',
    })
  ).document_uuid
  const recording = (await createRecording(t, 'orga-clip', lineToneWav(440, 200), { transcript: MARK })).body
    .recordings[0]
  // `{id}` is only a recording's numeric id so far (PATCH /workflow-recordings/{id}, as the reference names it).
  Object.assign(ids, { id: String(recording.id), recording_id: recording.recording_id })
  const chat = await ok('POST', `/api/v1/workflow/${agent.id}/text-chat/sessions`, { name: `${MARK} chat` })
  idsOnPaths.push({ fragment: '/text-chat/', ids: { run_id: String(chat.workflow_run_id) } })
})
afterAll(() => t.close())

const CARRIER_WEBHOOK =
  "a carrier's webhook: takes no API key, the carrier's signature is checked against the stored secret of the configuration it names"
/**
 * GETs of what the setup's resources have no data for (its call was never recorded): the resource is found, and the
 * answer says what is missing, where another organization's request is told the resource is not found.
 */
const ANSWERED_WITHOUT_DATA: Record<string, string> = {
  'GET /api/v1/workflow/{workflow_id}/runs/{run_id}/recording-peaks': 'No recording available for this workflow run',
}

/** Path parameters that name no organization's resource, and why. */
const NOT_ORGANIZATION_SCOPED: Record<string, string> = {
  'GET /api/v1/node-types/{name}': 'the node catalog is the same for every organization',
  'GET /api/v1/public/download/workflow/{token}/{artifact_type}':
    'takes no API key: the token in the path is the credential',
  'POST /api/v1/telephony/{provider}/inbound': CARRIER_WEBHOOK,
  'GET /api/v1/telephony/{provider}/inbound': CARRIER_WEBHOOK,
  'POST /api/v1/telephony/{provider}/answer/{run_id}': CARRIER_WEBHOOK,
  'GET /api/v1/telephony/{provider}/answer/{run_id}': CARRIER_WEBHOOK,
  'POST /api/v1/telephony/{provider}/{callback}/{run_id}': CARRIER_WEBHOOK,
  'POST /api/v1/telephony/{provider}/{callback}': CARRIER_WEBHOOK,
  'GET /api/v1/telephony/{provider}/{callback}': CARRIER_WEBHOOK,
}

/** A body the schema accepts, for operations that take one: the organization check must be what answers. */
const VALID_BODIES: Record<string, unknown> = {
  'PUT /api/v1/workflow/{workflow_id}': { name: 'Renamed' },
  'PUT /api/v1/workflow/{workflow_id}/status': { status: 'archived' },
  'PUT /api/v1/organizations/telephony-configs/{config_id}': { name: 'Renamed' },
  'POST /api/v1/organizations/telephony-configs/{config_id}/trunks': { name: 'other-trunk' },
  'PUT /api/v1/organizations/telephony-configs/{config_id}/trunks/{trunk_id}': { enabled: false },
  'POST /api/v1/organizations/telephony-configs/{config_id}/phone-numbers': { address: '1003' },
  'PUT /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}': { label: 'Renamed' },
  'PATCH /api/v1/campaign/{campaign_id}': { name: 'Renamed' },
  'POST /api/v1/campaign/{campaign_id}/redial': {},
  'POST /api/v1/public/agent/{uuid}': { phone_number: '1000' },
  'POST /api/v1/public/agent/test/{uuid}': { phone_number: '1000' },
  'POST /api/v1/public/agent/workflow/{workflow_uuid}': { phone_number: '1000' },
  'POST /api/v1/public/agent/test/workflow/{workflow_uuid}': { phone_number: '1000' },
  'PUT /api/v1/credentials/{credential_uuid}': { name: 'Renamed' },
  'POST /api/v1/user/api-keys': { name: 'k' },
  'POST /api/v1/workflow/create/definition': { name: 'A', workflow_definition: sampleDefinition() },
  'POST /api/v1/organizations/telephony-configs': { name: 'c', config: VALID_CONFIGS.twilio.config },
  'POST /api/v1/s3/presigned-upload-url': { file_name: 'a.csv', file_size: 1 },
  'POST /api/v1/campaign/create': { name: 'c', source_type: 'csv', source_id: 'missing', workflow_id: 1 },
  'POST /api/v1/credentials': { name: 'c', credential_type: 'bearer_token', credential_data: { token: 't' } },
  'PUT /api/v1/organizations/provider-connections/{uuid}': { name: 'Renamed' },
  'PUT /api/v1/organizations/model-configurations/{uuid}': { name: 'Renamed' },
  'POST /api/v1/workflow/{workflow_id}/text-chat/sessions': {},
  'POST /api/v1/workflow/{workflow_id}/web-calls': {},
  'POST /api/v1/knowledge-base/documents/{document_uuid}/reprocess': {},
  'POST /api/v1/workflow/{workflow_id}/text-chat/sessions/{run_id}/messages': { text: 'Hi' },
  'PUT /api/v1/tools/{tool_uuid}': { name: 'Renamed' },
  'PATCH /api/v1/workflow-recordings/{id}': { recording_id: 'renamed' },
  'POST /api/v1/workflow-recordings/upload-url': { files: [{ filename: 'a.wav', file_size: 1 }] },
}

const urlOf = (operation: Operation) =>
  operation.path.replace(
    /\{(\w+)\}/g,
    (_, name: string) =>
      idsOnPaths.find((entry) => operation.path.includes(entry.fragment) && name in entry.ids)?.ids[name] ??
      ids[name] ??
      'unknown',
  )

describe("another organization's ids do not exist", () => {
  test('every operation with a path parameter answers 404 {detail} to another organization', async () => {
    const scoped = operations.filter(
      (operation) => operation.pathParameters.length > 0 && !(operation.key in NOT_ORGANIZATION_SCOPED),
    )
    expect(scoped.length).toBeGreaterThan(40)
    const unknown = scoped.flatMap((operation) =>
      operation.pathParameters.filter((name) => !(name in ids)).map((name) => `${operation.key}: ${name}`),
    )
    expect(unknown, 'path parameters this test cannot create a resource for: add them to the setup').toEqual([])
    const leaks: string[] = []
    for (const operation of scoped) {
      if (operation.hasBody && !(operation.key in VALID_BODIES)) {
        leaks.push(`${operation.key}: no valid body in VALID_BODIES`)
        continue
      }
      const response = await t.request(operation.method, urlOf(operation), {
        key: otherKey,
        body: VALID_BODIES[operation.key],
      })
      if (response.status !== 404 || typeof response.body?.detail !== 'string')
        leaks.push(`${operation.key}: ${response.status} ${response.text.slice(0, 200)}`)
    }
    expect(leaks).toEqual([])
  })

  test('and they exist for their own organization (every GET of them answers 200 to it)', async () => {
    const missing: string[] = []
    for (const operation of operations.filter(
      (o) => o.method === 'GET' && o.pathParameters.length > 0 && !(o.key in NOT_ORGANIZATION_SCOPED),
    )) {
      const response = await t.request('GET', urlOf(operation))
      const withoutData = ANSWERED_WITHOUT_DATA[operation.key]
      if (response.status !== 200 && !(response.status === 404 && response.body?.detail === withoutData))
        missing.push(`${operation.key}: ${response.status}`)
    }
    expect(missing).toEqual([])
  })

  test("no list shows another organization's resources", async () => {
    const shown: string[] = []
    for (const operation of operations.filter(
      (o) => o.method === 'GET' && o.pathParameters.length === 0 && !o.isPublic,
    )) {
      const response = await t.request('GET', operation.path, { key: otherKey })
      if (response.text.includes(MARK)) shown.push(operation.key)
    }
    expect(shown).toEqual([])
    // What the lists of organization A show, so the check above can fail.
    expect((await t.request('GET', '/api/v1/campaign/')).text).toContain(MARK)
  })
})

/**
 * docs/api.md: "Scopes: `admin` (everything) and `trigger` (only starting runs, reading runs, and health)". Operations
 * that take no key at all (security: [] in the document) are outside scopes.
 */
const TRIGGER_SCOPE = new Set([
  'POST /api/v1/public/agent/{uuid}',
  'POST /api/v1/public/agent/test/{uuid}',
  'POST /api/v1/public/agent/workflow/{workflow_uuid}',
  'POST /api/v1/public/agent/test/workflow/{workflow_uuid}',
  'GET /api/v1/workflow/{workflow_id}/runs',
  'GET /api/v1/workflow/{workflow_id}/runs/{run_id}',
  'GET /api/v1/workflow/{workflow_id}/runs/{run_id}/recording-peaks',
  // a browser session of the key (the console), and the changes of its runs as they happen
  'GET /api/v1/auth/session',
  'DELETE /api/v1/auth/session',
  'GET /api/v1/events',
  // The MCP server: a trigger key is offered only the tools that start and read runs (test/api/mcp-server.test.ts).
  'POST /api/v1/mcp',
])

describe('a trigger key reaches only what docs/api.md says', () => {
  test('every other operation of the document answers 403 to it, before reading anything', async () => {
    const trigger = t.newOrg('default', 'trigger').key
    const wrong: string[] = []
    const keyed = operations.filter((operation) => !operation.isPublic && operation.path !== '/api/v1/openapi.json')
    expect(keyed.length).toBeGreaterThan(50)
    for (const operation of keyed) {
      const response = await t.request(operation.method, urlOf(operation), {
        key: trigger,
        body: operation.hasBody ? (VALID_BODIES[operation.key] ?? {}) : undefined,
      })
      const allowed = TRIGGER_SCOPE.has(operation.key)
      if (allowed ? [401, 403].includes(response.status) : response.status !== 403)
        wrong.push(`${operation.key}: ${response.status}`)
    }
    expect(wrong).toEqual([])
  })

  test("health, the signed links, the carriers' signed webhooks and signing in (which takes the key in its body) are the operations that take no key", () => {
    expect(
      operations
        .filter((operation) => operation.isPublic)
        .map((operation) => operation.key)
        .sort(),
    ).toEqual([
      'GET /api/v1/health',
      'GET /api/v1/public/download/workflow/{token}/{artifact_type}',
      'GET /api/v1/s3/download',
      'GET /api/v1/telephony/inbound/run',
      'GET /api/v1/telephony/{provider}/answer/{run_id}',
      'GET /api/v1/telephony/{provider}/inbound',
      'GET /api/v1/telephony/{provider}/{callback}',
      'POST /api/v1/auth/session',
      'POST /api/v1/telephony/inbound/run',
      'POST /api/v1/telephony/{provider}/answer/{run_id}',
      'POST /api/v1/telephony/{provider}/inbound',
      'POST /api/v1/telephony/{provider}/{callback}',
      'POST /api/v1/telephony/{provider}/{callback}/{run_id}',
      'PUT /api/v1/s3/upload',
    ])
  })
})
