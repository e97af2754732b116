import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition } from '../support/agents'
import { httpApiConfig } from '../support/tools'
import { createRecording, lineToneWav } from '../support/recordings'
import { CONFIGS_PATH, createConfiguration, VALID_CONFIGS } from '../support/telephony'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const httpTool = (overrides: Record<string, unknown> = {}) => ({
  name: 'Look up order!',
  description: 'Find an order by its number',
  definition: {
    type: 'http_api',
    config: {
      method: 'GET',
      url: 'https://shop.example.com/orders/{{order_number}}',
      parameters: [{ name: 'order_number', type: 'string', description: 'The order number the caller gives' }],
      ...overrides,
    },
  },
})

async function create(body: unknown, key?: string) {
  const response = await t.request('POST', '/api/v1/tools/', { body, key })
  if (response.status !== 200) throw new Error(`create tool: ${response.status} ${response.text}`)
  return response.body
}

/** The start node of the sample agent with `tool_uuids`. */
function definitionWithTools(toolUuids: string[]) {
  const definition = sampleDefinition()
  return {
    ...definition,
    nodes: definition.nodes.map((node) =>
      node.id === '1' ? { ...node, data: { ...node.data, tool_uuids: toolUuids } } : node,
    ),
  }
}

describe('tools resource', () => {
  test('create fills defaults and derives the function name the reference way; get, list, update and archive', async () => {
    const created = await create(httpTool())
    expect(created.tool_uuid).toMatch(/^[0-9a-f-]{36}$/)
    expect(created).toMatchObject({
      name: 'Look up order!',
      description: 'Find an order by its number',
      category: 'http_api',
      status: 'active',
      function_name: 'look_up_order',
      icon: 'globe',
      icon_color: '#3B82F6',
      created_at: '2026-01-05T10:00:00.000Z',
    })
    expect(created.definition).toEqual({
      schema_version: 1,
      type: 'http_api',
      config: httpApiConfig({
        url: 'https://shop.example.com/orders/{{order_number}}',
        parameters: [
          { name: 'order_number', type: 'string', description: 'The order number the caller gives', required: true },
        ],
      }),
    })
    expect((await t.request('GET', `/api/v1/tools/${created.tool_uuid}`)).body).toEqual(created)
    // The path without the trailing slash works too.
    expect((await t.request('GET', '/api/v1/tools')).body.map((tool: any) => tool.tool_uuid)).toEqual([
      created.tool_uuid,
    ])

    const updated = await t.request('PUT', `/api/v1/tools/${created.tool_uuid}`, {
      body: { name: '  Order -- status  ', description: null },
    })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({
      name: '  Order -- status  ',
      function_name: 'order_status',
      description: null,
    })
    expect(updated.body.definition).toEqual(created.definition)

    const archived = await t.request('DELETE', `/api/v1/tools/${created.tool_uuid}`)
    expect(archived.body).toEqual({ status: 'archived', tool_uuid: created.tool_uuid })
    expect((await t.request('GET', '/api/v1/tools/')).body).toEqual([])
    expect((await t.request('GET', '/api/v1/tools/?status=archived')).body.map((tool: any) => tool.status)).toEqual([
      'archived',
    ])
    expect((await t.request('GET', `/api/v1/tools/${created.tool_uuid}`)).body.status).toBe('archived')
    const restored = await t.request('PUT', `/api/v1/tools/${created.tool_uuid}`, { body: { status: 'active' } })
    expect(restored.body.status).toBe('active')
  })

  test('a tool whose credential was deleted while it was archived is restored only with a definition naming another', async () => {
    const credential = async (name: string) =>
      (
        await t.request('POST', '/api/v1/credentials', {
          body: { name, credential_type: 'bearer_token', credential_data: { token: `${name}-token` } },
        })
      ).body.uuid as string
    const first = await credential('first')
    const config = (credential_uuid: string) => httpApiConfig({ url: 'http://127.0.0.1:9/orders', credential_uuid })
    const tool = await create({ name: 'Orders', definition: { type: 'http_api', config: config(first) } })
    expect((await t.request('DELETE', `/api/v1/tools/${tool.tool_uuid}`)).status).toBe(200)
    expect((await t.request('DELETE', `/api/v1/credentials/${first}`)).status).toBe(200)

    const refused = await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, { body: { status: 'active' } })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0].loc).toEqual(['body', 'status'])
    expect(refused.body.detail[0].msg).toContain('the tool cannot be restored as it is')
    expect(refused.body.detail[0].msg).toContain(`credential '${first}' is not a credential of this organization`)
    expect((await t.request('GET', `/api/v1/tools/${tool.tool_uuid}`)).body.status).toBe('archived')

    const second = await credential('second')
    const restored = await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, {
      body: { status: 'active', definition: { type: 'http_api', config: config(second) } },
    })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.body.status).toBe('active')
    expect(restored.body.definition.config.credential_uuid).toBe(second)
  })

  test('a tool whose recording was deleted while it was archived is restored only with a definition without it', async () => {
    expect((await createRecording(t, 'goodbye', lineToneWav(400, 200))).status).toBe(200)
    const audioConfig = { messageType: 'audio', audioRecordingId: 'goodbye' }
    const tool = await create({ name: 'Hang up', definition: { type: 'end_call', config: audioConfig } })
    expect((await t.request('DELETE', `/api/v1/tools/${tool.tool_uuid}`)).status).toBe(200)
    expect((await t.request('DELETE', '/api/v1/workflow-recordings/goodbye')).status).toBe(200)

    const refused = await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, { body: { status: 'active' } })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0].loc).toEqual(['body', 'status'])
    expect(refused.body.detail[0].msg).toContain("recording 'goodbye' is not a recording of this organization")
    expect((await t.request('GET', `/api/v1/tools/${tool.tool_uuid}`)).body.status).toBe('archived')

    const restored = await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, {
      body: {
        status: 'active',
        definition: { type: 'end_call', config: { messageType: 'custom', customMessage: 'Bye!' } },
      },
    })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.body.status).toBe('active')
  })

  test('each type: end_call, transfer_call (static and chosen by the model), calculator; list filters by category', async () => {
    const endCall = await create({
      name: 'Hang up',
      definition: { type: 'end_call', config: { messageType: 'custom', customMessage: 'Bye!', endCallReason: true } },
    })
    expect(endCall.definition.config).toEqual({
      messageType: 'custom',
      customMessage: 'Bye!',
      audioRecordingId: null,
      endCallReason: true,
      endCallReasonDescription: null,
    })
    const transfer = await create({
      name: 'To sales',
      definition: { type: 'transfer_call', config: { destination: '+14155550100' } },
    })
    expect(transfer.definition.config).toMatchObject({
      destination_source: 'static',
      destination: '+14155550100',
      destinations: [],
      timeout: 30,
    })
    const choice = await create({
      name: 'Route',
      definition: {
        type: 'transfer_call',
        config: {
          destination_source: 'llm_choice',
          timeout: 120,
          destinations: [
            { name: 'billing', destination: '2001' },
            { name: 'support', destination: 'PJSIP/support' },
          ],
        },
      },
    })
    expect(choice.definition.config.destinations).toEqual([
      { name: 'billing', destination: '2001', description: null },
      { name: 'support', destination: 'PJSIP/support', description: null },
    ])
    const calculator = await create({ name: 'Calculator', category: 'calculator', definition: { type: 'calculator' } })
    expect(calculator.definition).toEqual({ schema_version: 1, type: 'calculator', config: {} })
    const transfers = await t.request('GET', '/api/v1/tools/?category=transfer_call')
    expect(transfers.body.map((tool: any) => tool.name)).toEqual(['To sales', 'Route'])
    const badFilter = await t.request('GET', '/api/v1/tools/?category=smtp')
    expect(badFilter.status).toBe(422)
    expect(badFilter.body.detail[0].loc).toEqual(['query', 'category'])
  })

  test('tools are scoped to their organization; a trigger key gets 403', async () => {
    const tool = await create(httpTool())
    const other = t.newOrg('other')
    expect((await t.request('GET', `/api/v1/tools/${tool.tool_uuid}`, { key: other.key })).status).toBe(404)
    expect(
      (await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, { key: other.key, body: { name: 'x' } })).status,
    ).toBe(404)
    expect((await t.request('DELETE', `/api/v1/tools/${tool.tool_uuid}`, { key: other.key })).status).toBe(404)
    expect((await t.request('GET', '/api/v1/tools/', { key: other.key })).body).toEqual([])
    expect((await t.request('GET', `/api/v1/tools/${crypto.randomUUID()}`)).body).toEqual({ detail: 'Tool not found' })

    const trigger = t.newOrg('default', 'trigger')
    for (const [method, path] of [
      ['GET', '/api/v1/tools/'],
      ['POST', '/api/v1/tools/'],
      ['GET', `/api/v1/tools/${tool.tool_uuid}`],
      ['DELETE', `/api/v1/tools/${tool.tool_uuid}`],
      ['GET', '/api/v1/organizations/tool-settings'],
    ]) {
      const response = await t.request(method, path, {
        key: trigger.key,
        body: method === 'POST' ? httpTool() : undefined,
      })
      expect({ path, status: response.status }).toEqual({ path, status: 403 })
    }
    expect((await t.request('GET', '/api/v1/tools/', { key: null })).status).toBe(401)
  })

  test('validation names each problem with its loc', async () => {
    const cases: [unknown, (string | number)[], RegExp][] = [
      [{ ...httpTool(), name: '' }, ['body', 'name'], /at least 1 character/],
      [
        { name: 'x', definition: { type: 'smtp', config: {} } },
        ['body', 'definition'],
        /does not match any of the expected tags/,
      ],
      [httpTool({ method: 'get' }), ['body', 'definition', 'http_api', 'config', 'method'], /'GET'/],
      [
        httpTool({ url: 'ftp://example.com/x' }),
        ['body', 'definition', 'http_api', 'config', 'url'],
        /http:\/\/ or https:\/\//,
      ],
      [
        httpTool({ url: 'https://{{host}}/x' }),
        ['body', 'definition', 'http_api', 'config', 'url'],
        /host cannot be a placeholder/,
      ],
      [
        httpTool({ url: 'https://user:pw@example.com/x' }),
        ['body', 'definition', 'http_api', 'config', 'url'],
        /credential_uuid/,
      ],
      [
        httpTool({ timeout_ms: 0 }),
        ['body', 'definition', 'http_api', 'config', 'timeout_ms'],
        /greater than or equal to 100/,
      ],
      [
        httpTool({ body_template: { a: 1 } }),
        ['body', 'definition', 'http_api', 'config', 'body_template'],
        /GET request has no body/,
      ],
      [
        httpTool({ headers: { 'Bad Header': 'x' } }),
        ['body', 'definition', 'http_api', 'config', 'headers', 'Bad Header'],
        /token/,
      ],
      [
        httpTool({ parameters: [{ name: '1abc', type: 'string', description: '' }] }),
        ['body', 'definition', 'http_api', 'config', 'parameters', 0, 'name'],
        /pattern/,
      ],
      [
        httpTool({
          parameters: [{ name: 'id', type: 'string', description: '' }],
          preset_parameters: [{ name: 'id', type: 'string', value_template: '{{x}}' }],
        }),
        ['body', 'definition', 'http_api', 'config', 'preset_parameters', 0, 'name'],
        /used twice/,
      ],
      [
        httpTool({ customMessageType: 'text' }),
        ['body', 'definition', 'http_api', 'config', 'customMessage'],
        /needs customMessage/,
      ],
      [
        { name: 'x', definition: { type: 'end_call', config: { messageType: 'audio' } } },
        ['body', 'definition', 'end_call', 'config', 'audioRecordingId'],
        /audioRecordingId/,
      ],
      [
        { name: 'x', definition: { type: 'transfer_call', config: {} } },
        ['body', 'definition', 'transfer_call', 'config', 'destination'],
        /needs a destination/,
      ],
      [
        { name: 'x', definition: { type: 'transfer_call', config: { destination: '555 0100' } } },
        ['body', 'definition', 'transfer_call', 'config', 'destination'],
        /spaces/,
      ],
      [
        { name: 'x', definition: { type: 'transfer_call', config: { destination: '100', timeout: 4 } } },
        ['body', 'definition', 'transfer_call', 'config', 'timeout'],
        /greater than or equal to 5/,
      ],
      [
        { name: 'x', definition: { type: 'transfer_call', config: { destination: '100', timeout: 121 } } },
        ['body', 'definition', 'transfer_call', 'config', 'timeout'],
        /less than or equal to 120/,
      ],
      [
        {
          name: 'x',
          definition: {
            type: 'transfer_call',
            config: {
              destination_source: 'llm_choice',
              destinations: [
                { name: 'A', destination: '1' },
                { name: 'a', destination: '2' },
              ],
            },
          },
        },
        ['body', 'definition', 'transfer_call', 'config', 'destinations', 1, 'name'],
        /used twice/,
      ],
      [
        { name: 'x', category: 'end_call', definition: { type: 'calculator' } },
        ['body', 'category'],
        /must match definition.type/,
      ],
      [
        { name: 'x', definition: { type: 'mcp', config: { url: 'ftp://example.com/mcp' } } },
        ['body', 'definition', 'mcp', 'config', 'url'],
        /http:\/\/ or https:\/\//,
      ],
      [
        { name: 'x', definition: { type: 'mcp', config: { url: 'https://example.com/mcp', transport: 'stdio' } } },
        ['body', 'definition', 'mcp', 'config', 'transport'],
        /streamable_http/,
      ],
      [
        { name: 'x', definition: { type: 'mcp', config: { url: 'https://example.com/mcp', timeout_secs: 0 } } },
        ['body', 'definition', 'mcp', 'config', 'timeout_secs'],
        /greater than or equal to 1/,
      ],
    ]
    for (const [body, loc, message] of cases) {
      const response = await t.request('POST', '/api/v1/tools/', { body })
      expect({ loc, status: response.status }).toEqual({ loc, status: 422 })
      const item = response.body.detail.find((candidate: any) => JSON.stringify(candidate.loc) === JSON.stringify(loc))
      expect({ loc, found: item !== undefined }).toEqual({ loc, found: true })
      expect(item.msg).toMatch(message)
    }
    expect((await t.request('GET', '/api/v1/tools/')).body).toEqual([])
  })

  test('100k-character strings are refused with 422 wherever they are sent', async () => {
    const huge = 'x'.repeat(100_000)
    const bodies = [
      { ...httpTool(), name: huge },
      { ...httpTool(), description: huge },
      httpTool({ url: `https://example.com/${huge}` }),
      httpTool({ headers: { 'X-Big': huge } }),
      httpTool({ parameters: [{ name: 'a', type: 'string', description: huge }] }),
      httpTool({ preset_parameters: [{ name: 'a', type: 'string', value_template: huge }] }),
      httpTool({ method: 'POST', body_template: { text: huge } }),
      { name: 'x', definition: { type: 'end_call', config: { messageType: 'custom', customMessage: huge } } },
      { name: 'x', definition: { type: 'transfer_call', config: { destination: huge } } },
    ]
    for (const body of bodies) {
      const response = await t.request('POST', '/api/v1/tools/', { body })
      expect(response.status).toBe(422)
    }
    const tool = await create(httpTool())
    expect((await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, { body: { name: huge } })).status).toBe(422)
    expect(
      (await t.request('PUT', '/api/v1/organizations/tool-settings', { body: { allowed_hosts: [huge] } })).status,
    ).toBe(422)
    expect((await t.request('GET', '/api/v1/tools/')).body.map((row: any) => row.name)).toEqual(['Look up order!'])
  })

  test("a node's tool_uuids must name active tools of the organization: on create, on save and again at publish", async () => {
    const tool = await create(httpTool())
    const foreign = await create(httpTool(), t.newOrg('other').key)
    const missing = crypto.randomUUID()

    const refused = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'agent', workflow_definition: definitionWithTools([tool.tool_uuid, foreign.tool_uuid, missing]) },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.detail.errors).toEqual(
      [foreign.tool_uuid, missing].map((uuid) => ({
        kind: 'node',
        id: '1',
        field: 'data.tool_uuids',
        message: `Tool '${uuid}' is not an active tool of this organization`,
      })),
    )

    const agent = await createAgent(t, 'agent', undefined, definitionWithTools([tool.tool_uuid]))
    const saveForeign = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_definition: definitionWithTools([foreign.tool_uuid]) },
    })
    expect(saveForeign.status).toBe(422)
    expect(saveForeign.text).toContain(foreign.tool_uuid)

    // A draft naming a tool that is archived before publishing cannot be published.
    expect(
      (
        await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
          body: { workflow_definition: definitionWithTools([tool.tool_uuid]), name: 'v2' },
        })
      ).status,
    ).toBe(200)
    await t.request('DELETE', `/api/v1/tools/${tool.tool_uuid}`)
    const publish = await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)
    expect(publish.status).toBe(422)
    expect(publish.body.detail.errors[0]).toMatchObject({
      id: '1',
      field: 'data.tool_uuids',
      message: expect.stringContaining(tool.tool_uuid),
    })
    await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, { body: { status: 'active' } })
    expect((await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)).status).toBe(200)
  })

  test('transfer_call tools are refused at publish (create publishes too) while the default telephony configuration cannot transfer; drafts may be saved', async () => {
    const transfer = await create({
      name: 'Front desk',
      definition: { type: 'transfer_call', config: { destination: '+14155550199' } },
    })
    const lookup = await create(httpTool())
    await createConfiguration(t, 'exotel line', VALID_CONFIGS.exotel.config, { isDefaultOutbound: true })
    const refusal = {
      kind: 'node',
      id: '1',
      field: 'data.tool_uuids',
      message: `Tool 'Front desk' (${transfer.tool_uuid}) transfers calls, which Exotel, the provider of the default telephony configuration, cannot do`,
    }

    const refused = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'agent', workflow_definition: definitionWithTools([lookup.tool_uuid, transfer.tool_uuid]) },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.detail.errors).toEqual([refusal])
    const withoutTransfer = await createAgent(t, 'agent', undefined, definitionWithTools([lookup.tool_uuid]))
    const draft = await t.request('PUT', `/api/v1/workflow/${withoutTransfer.id}`, {
      body: { workflow_definition: definitionWithTools([transfer.tool_uuid]) },
    })
    expect(draft.status, draft.text).toBe(200)
    const publish = await t.request('POST', `/api/v1/workflow/${withoutTransfer.id}/publish`)
    expect(publish.status).toBe(422)
    expect(publish.body.detail.errors).toEqual([refusal])

    // A default configuration that can transfer (Twilio) lets it through; so does having no default configuration.
    const twilio = await createConfiguration(t, 'twilio line', VALID_CONFIGS.twilio.config)
    expect((await t.request('POST', `${CONFIGS_PATH}/${twilio.id}/set-default-outbound`)).status).toBe(200)
    expect((await t.request('POST', `/api/v1/workflow/${withoutTransfer.id}/publish`)).status).toBe(200)
    expect((await t.request('DELETE', `${CONFIGS_PATH}/${twilio.id}`)).status).toBe(200)
    expect(
      (
        await t.request('POST', '/api/v1/workflow/create/definition', {
          body: { name: 'agent 2', workflow_definition: definitionWithTools([transfer.tool_uuid]) },
        })
      ).status,
    ).toBe(200)
  })

  test('tool settings: any host until set; hosts are validated and lower-cased; per organization', async () => {
    expect((await t.request('GET', '/api/v1/organizations/tool-settings')).body).toEqual({
      allowed_hosts: null,
      updated_at: null,
    })
    const saved = await t.request('PUT', '/api/v1/organizations/tool-settings', {
      body: { allowed_hosts: ['API.example.com', '*.example.org', '10.0.0.7:8443', '[::1]:9000', 'api.example.com'] },
    })
    expect(saved.body).toEqual({
      allowed_hosts: ['api.example.com', '*.example.org', '10.0.0.7:8443', '[::1]:9000'],
      updated_at: '2026-01-05T10:00:00.000Z',
    })
    expect((await t.request('GET', '/api/v1/organizations/tool-settings')).body.allowed_hosts).toHaveLength(4)
    expect(
      (await t.request('GET', '/api/v1/organizations/tool-settings', { key: t.newOrg('other').key })).body
        .allowed_hosts,
    ).toBeNull()
    for (const host of ['https://api.example.com', 'api.example.com/path', 'a b', 'example.com:99999', '']) {
      const response = await t.request('PUT', '/api/v1/organizations/tool-settings', {
        body: { allowed_hosts: [host] },
      })
      expect({ host, status: response.status }).toEqual({ host, status: 422 })
      expect(response.body.detail[0].loc).toEqual(['body', 'allowed_hosts', 0])
    }
    expect(
      (await t.request('PUT', '/api/v1/organizations/tool-settings', { body: { allowed_hosts: null } })).body
        .allowed_hosts,
    ).toBeNull()
  })
})

test('the tools metadata lists every tool type with the fields of its definition.config, as a save checks them', async () => {
  const response = await t.request('GET', '/api/v1/tools/metadata')
  expect(response.status, response.text).toBe(200)
  const byType = Object.fromEntries(
    response.body.types.map((entry: { type: string; fields: { name: string }[] }) => [
      entry.type,
      Object.fromEntries(entry.fields.map((field) => [field.name, field])),
    ]),
  )
  expect(Object.keys(byType)).toEqual(['http_api', 'end_call', 'transfer_call', 'calculator', 'mcp'])
  expect(byType.http_api.url).toMatchObject({ type: 'string', required: true })
  expect(byType.http_api.method).toMatchObject({ type: 'options', options: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] })
  expect(byType.transfer_call.destination_source).toMatchObject({
    default: 'static',
    options: ['static', 'llm_choice'],
  })
  expect(byType.end_call.endCallReason).toMatchObject({ type: 'boolean', required: false, default: false })
  expect(byType.calculator).toEqual({})
  expect(byType.mcp.url).toMatchObject({ type: 'string', required: true })
  expect(byType.mcp.timeout_secs).toMatchObject({ type: 'integer', default: 30 })
  expect(byType.mcp.tools_filter).toMatchObject({ type: 'array', required: false })
  expect((await t.request('GET', '/api/v1/tools/metadata', { key: null })).status).toBe(401)
})
