import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { TestApp } from '../support/app'
import { inProcessTest, NOW, httpTestAppPerTest, type HttpTestApp } from '../support/http-app'
import { createAgent, sampleDefinition, seedRun } from '../support/agents'
import { otherConnection } from '../support/postgres-databases'
import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { AgentListItem } from '../../src/agents/schemas'

const apps = httpTestAppPerTest()
let t: HttpTestApp
beforeEach(async () => {
  t = await apps.start()
})
afterEach(() => t.close())

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const create = (body: unknown, key?: string) => t.request('POST', '/api/v1/workflow/create/definition', { body, key })

/** The definition with one node's data replaced. */
function withNodeData(nodeId: string, data: Record<string, unknown>) {
  const definition = sampleDefinition()
  const node = definition.nodes.find((candidate) => candidate.id === nodeId)!
  node.data = { ...node.data, ...data } as typeof node.data
  return definition
}

describe('create', () => {
  test('answers the full agent: version 1 published, Agent UUID, no null fields, minted trigger path', async () => {
    const response = await create({
      name: 'Reminders',
      workflow_definition: sampleDefinition({
        prompt: 'Hi {{first_name}}, {{ city | Paris }} {{current_time}} {{contact.tier}}',
      }),
    })
    expect(response.status).toBe(200)
    const agent = response.body
    expect(agent).toEqual({
      id: expect.any(Number),
      name: 'Reminders',
      status: 'active',
      created_at: NOW,
      workflow_definition: expect.any(Object),
      current_definition_id: expect.any(Number),
      template_context_variables: { city: 'Paris', first_name: '' },
      call_disposition_codes: { disposition_codes: [] },
      total_runs: 0,
      workflow_configurations: { max_call_duration_seconds: 600 },
      version_number: 1,
      version_status: 'published',
      workflow_uuid: expect.stringMatching(UUID),
    })
    const trigger = agent.workflow_definition.nodes.find((node: any) => node.type === 'trigger')
    expect(trigger.data.trigger_path).toMatch(UUID)
    expect(agent.workflow_definition.edges).toEqual(sampleDefinition().edges)
  })

  test('keeps a trigger path sent by the client and merges sent configurations over the defaults', async () => {
    const response = await create({
      name: 'A',
      workflow_definition: sampleDefinition({ triggerPath: 'crm-lead_1' }),
      workflow_configurations: { max_call_duration_seconds: 120, ambient_noise: true },
    })
    expect(response.body.workflow_configurations).toEqual({ max_call_duration_seconds: 120, ambient_noise: true })
    expect(response.body.workflow_definition.nodes[2].data.trigger_path).toBe('crm-lead_1')
  })

  test('turn settings in range are saved as sent', async () => {
    const turnSettings = {
      user_turn_stop_timeout: 0.8,
      turn_start_strategy: 'min_words',
      turn_start_min_words: 2,
      turn_stop_strategy: 'turn_analyzer',
      noise_suppression: true,
    }
    const response = await create({
      name: 'Turns',
      workflow_definition: sampleDefinition(),
      workflow_configurations: turnSettings,
    })
    expect(response.status).toBe(200)
    expect(response.body.workflow_configurations).toEqual({ max_call_duration_seconds: 600, ...turnSettings })
  })

  const invalidDefinitions: [string, unknown, { kind: string; id: string | null; field: string | null }][] = [
    ['no start node', { nodes: [sampleDefinition().nodes[1]], edges: [] }, { kind: 'workflow', id: null, field: null }],
    [
      'two start nodes',
      { ...sampleDefinition(), nodes: [...sampleDefinition().nodes, { ...sampleDefinition().nodes[0], id: '9' }] },
      { kind: 'node', id: '9', field: null },
    ],
    [
      'an edge to a missing node',
      { ...sampleDefinition(), edges: [{ id: '1-7', source: '1', target: '7', data: { label: 'x', condition: 'y' } }] },
      { kind: 'edge', id: '1-7', field: 'target' },
    ],
    [
      'an unknown node type',
      { ...sampleDefinition(), nodes: [...sampleDefinition().nodes, { id: '8', type: 'teleport', data: {} }] },
      { kind: 'node', id: '8', field: 'type' },
    ],
    [
      'a trigger path with a space',
      withNodeData('3', { trigger_path: 'bad path' }),
      { kind: 'node', id: '3', field: 'data.trigger_path' },
    ],
    [
      'a trigger path of 37 characters',
      withNodeData('3', { trigger_path: 'a'.repeat(37) }),
      { kind: 'node', id: '3', field: 'data.trigger_path' },
    ],
    ['a missing prompt', withNodeData('1', { prompt: null }), { kind: 'node', id: '1', field: 'data.prompt' }],
    ['nodes that are not a list', { nodes: {}, edges: [] }, { kind: 'workflow', id: null, field: 'nodes' }],
  ]
  test.each(invalidDefinitions)(
    'refuses a definition with %s: 422 {is_valid:false, errors}',
    async (_label, definition, expected) => {
      const response = await create({ name: 'Bad', workflow_definition: definition })
      expect(response.status).toBe(422)
      expect(response.body.detail.is_valid).toBe(false)
      expect(response.body.detail.errors).toContainEqual({ ...expected, message: expect.any(String) })
      expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(0)
    },
  )

  test('refuses two trigger nodes of the workflow with the same path', async () => {
    const definition = sampleDefinition({ triggerPath: 'same' })
    definition.nodes.push({
      id: '4',
      type: 'trigger',
      position: { x: 0, y: 0 },
      data: { name: 'Again', trigger_path: 'same' },
    } as never)
    const response = await create({ name: 'Twice', workflow_definition: definition })
    expect(response.status).toBe(422)
    expect(response.body.detail.errors).toContainEqual({
      kind: 'node',
      id: '4',
      field: 'data.trigger_path',
      message: expect.any(String),
    })
  })

  test('a trigger path taken by another agent, of this or another organization, is a 409; nothing is created', async () => {
    await createAgent(t, 'Owner', undefined, sampleDefinition({ triggerPath: 'taken' }))
    const other = t.newOrg('acme')
    for (const key of [undefined, other.key]) {
      const response = await create(
        { name: 'Copy', workflow_definition: sampleDefinition({ triggerPath: 'taken' }) },
        key,
      )
      expect(response.status).toBe(409)
      expect(response.body).toEqual({
        detail: {
          is_valid: false,
          errors: [{ kind: 'node', id: '3', field: 'data.trigger_path', message: expect.stringContaining('taken') }],
        },
      })
    }
    expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(1)
    expect((await t.request('GET', '/api/v1/workflow/count', { key: other.key })).body.total).toBe(0)
  })

  test.each([
    [
      'no name',
      { workflow_definition: {} },
      [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { workflow_definition: {} } }],
    ],
    [
      'an empty name',
      { name: '', workflow_definition: {} },
      [expect.objectContaining({ type: 'string_too_short', loc: ['body', 'name'] })],
    ],
    [
      'a zero max call duration',
      { name: 'x', workflow_definition: sampleDefinition(), workflow_configurations: { max_call_duration_seconds: 0 } },
      [
        expect.objectContaining({
          type: 'greater_than_equal',
          loc: ['body', 'workflow_configurations', 'max_call_duration_seconds'],
        }),
      ],
    ],
    ...(
      [
        ['user_turn_stop_timeout', 0.1],
        ['user_turn_stop_timeout', 6],
        ['turn_start_strategy', 'provisional_vad'],
        ['turn_start_min_words', 0],
        ['turn_start_min_words', 2.5],
        ['turn_stop_strategy', 'smart'],
        ['noise_suppression', 'yes'],
      ] as const
    ).map(
      ([key, value]) =>
        [
          `${key} ${value}`,
          { name: 'x', workflow_definition: sampleDefinition(), workflow_configurations: { [key]: value } },
          [expect.objectContaining({ loc: ['body', 'workflow_configurations', key] })],
        ] as const,
    ),
  ])('request validation: %s is a 422 with Pydantic items', async (_label, body, detail) => {
    const response = await create(body)
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual(detail)
  })

  test('needs an admin key', async () => {
    expect((await t.request('POST', '/api/v1/workflow/create/definition', { key: null, body: {} })).status).toBe(401)
    expect(
      (await create({ name: 'x', workflow_definition: sampleDefinition() }, t.newOrg('bots', 'trigger').key)).status,
    ).toBe(403)
  })
})

describe('concurrent creates (they share commits)', () => {
  test('50 creates at once all succeed, each with its own id, version and trigger path', async () => {
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        create({ name: `Agent ${index}`, workflow_definition: sampleDefinition() }),
      ),
    )
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200))
    const agents = responses.map((response) => response.body)
    expect(agents.map((agent) => agent.name)).toEqual(Array.from({ length: 50 }, (_, index) => `Agent ${index}`))
    for (const field of ['id', 'current_definition_id', 'workflow_uuid'])
      expect(new Set(agents.map((agent) => agent[field])).size).toBe(50)
    expect(new Set(agents.map((agent) => agent.workflow_definition.nodes[2].data.trigger_path)).size).toBe(50)
    expect(agents.every((agent) => agent.version_number === 1 && agent.version_status === 'published')).toBe(true)
    expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(50)
  })

  test('of creates claiming the same trigger path at once, exactly one gets it; only the other is a 409', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        create({
          name: `Agent ${index}`,
          workflow_definition: sampleDefinition({
            triggerPath: index === 3 || index === 7 ? 'claimed' : `own-${index}`,
          }),
        }),
      ),
    )
    expect(
      responses
        .filter((response) => response.status !== 200)
        .map((response) => [response.status, response.body.detail.errors[0].field]),
    ).toEqual([[409, 'data.trigger_path']])
    expect([responses[3].status, responses[7].status].sort()).toEqual([200, 409])
    // The refused create's workflow row, written before its claim failed, is gone; the others' rows stay.
    expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(9)
  })

  test('a create is answered only once it is committed: another connection sees it then', async () => {
    const reader = otherConnection(t)
    try {
      const responses = await Promise.all(
        Array.from({ length: 5 }, async (_, index) => {
          const response = await create({ name: `Agent ${index}`, workflow_definition: sampleDefinition() })
          const stored = reader
            .query<{ name: string }, [number]>('SELECT name FROM workflows WHERE id = ?')
            .get(response.body.id)
          return { status: response.status, stored: stored?.name }
        }),
      )
      expect(responses).toEqual(Array.from({ length: 5 }, (_, index) => ({ status: 200, stored: `Agent ${index}` })))
    } finally {
      reader.close()
    }
  })
})

describe('versions: update, publish, fetch', () => {
  test('a renamed agent keeps its version; a sent definition becomes a draft that fetch shows; publish archives the old version', async () => {
    const agent = await createAgent(t, 'Sales')
    const renamed = await t.request('PUT', `/api/v1/workflow/${agent.id}`, { body: { name: 'Sales v2' } })
    expect(renamed.body).toMatchObject({
      name: 'Sales v2',
      version_number: 1,
      version_status: 'published',
      current_definition_id: agent.current_definition_id,
    })

    const drafted = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_definition: sampleDefinition({ prompt: 'Ask for {{ order_id }}' }) },
    })
    expect(drafted.status).toBe(200)
    expect(drafted.body).toMatchObject({
      version_number: 2,
      version_status: 'draft',
      template_context_variables: { order_id: '' },
    })
    expect(drafted.body.current_definition_id).not.toBe(agent.current_definition_id)
    // The sent trigger node has no path: the draft gets a freshly minted one.
    expect(drafted.body.workflow_definition.nodes[2].data.trigger_path).toMatch(UUID)

    const again = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { workflow_configurations: { max_call_duration_seconds: 90 } },
    })
    expect(again.body).toMatchObject({
      version_number: 2,
      version_status: 'draft',
      current_definition_id: drafted.body.current_definition_id,
    })
    expect(again.body.workflow_configurations).toEqual({ max_call_duration_seconds: 90 })
    expect(again.body.template_context_variables).toEqual({ order_id: '' })

    const fetched = await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)
    expect(fetched.body).toEqual(again.body)

    const published = await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)
    expect(published.body).toMatchObject({ version_number: 2, version_status: 'published' })
    const versions = await t.request('GET', `/api/v1/workflow/${agent.id}/versions`)
    expect(versions.body.map((version: any) => [version.version_number, version.status])).toEqual([
      [2, 'published'],
      [1, 'archived'],
    ])
    expect(versions.body[0]).toEqual({
      id: drafted.body.current_definition_id,
      version_number: 2,
      status: 'published',
      created_at: NOW,
      published_at: NOW,
      workflow_json: again.body.workflow_definition,
      workflow_configurations: { max_call_duration_seconds: 90 },
      template_context_variables: { order_id: '' },
    })
    const paged = await t.request('GET', `/api/v1/workflow/${agent.id}/versions?limit=1&offset=1`)
    expect(paged.body.map((version: any) => version.version_number)).toEqual([1])

    const nothingToPublish = await t.request('POST', `/api/v1/workflow/${agent.id}/publish`)
    expect(nothingToPublish.status).toBe(400)
    expect(nothingToPublish.body).toEqual({ detail: 'Workflow has no draft to publish' })
  })

  test('an invalid definition on update is a 422 and saves nothing, the name included', async () => {
    const agent = await createAgent(t, 'Keep')
    const response = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { name: 'Changed', workflow_definition: { nodes: [], edges: [] } },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail.is_valid).toBe(false)
    const fetched = await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)
    expect(fetched.body).toMatchObject({ name: 'Keep', version_number: 1, version_status: 'published' })
  })

  test("an agent may keep its own trigger path in a new draft, but not take another agent's", async () => {
    const first = await createAgent(t, 'First', undefined, sampleDefinition({ triggerPath: 'first' }))
    await createAgent(t, 'Second', undefined, sampleDefinition({ triggerPath: 'second' }))
    const kept = await t.request('PUT', `/api/v1/workflow/${first.id}`, {
      body: { workflow_definition: sampleDefinition({ triggerPath: 'first' }) },
    })
    expect(kept.status).toBe(200)
    const stolen = await t.request('PUT', `/api/v1/workflow/${first.id}`, {
      body: { workflow_definition: sampleDefinition({ triggerPath: 'second' }) },
    })
    expect(stolen.status).toBe(409)
    expect(stolen.body.detail.errors[0]).toMatchObject({ kind: 'node', id: '3', field: 'data.trigger_path' })
  })
})

describe('status, list and count', () => {
  test('archive and restore; the list filters by status; count splits by status', async () => {
    const kept = await createAgent(t, 'Kept')
    const archived = await createAgent(t, 'Archived')
    const response = await t.request('PUT', `/api/v1/workflow/${archived.id}/status`, { body: { status: 'archived' } })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({
      id: archived.id,
      status: 'archived',
      version_number: 1,
      workflow_uuid: archived.workflow_uuid,
    })

    const list = async (query: string) =>
      (await t.request('GET', `/api/v1/workflow/fetch${query}`)).body.map((agent: any) => agent.name)
    expect(await list('')).toEqual(['Archived', 'Kept'])
    expect(await list('?status=active')).toEqual(['Kept'])
    expect(await list('?status=archived')).toEqual(['Archived'])
    expect(await list('?status=active,archived')).toEqual(['Archived', 'Kept'])
    expect(await list('?status=archived,archived,active')).toEqual(['Archived', 'Kept'])
    expect((await t.request('GET', '/api/v1/workflow/count')).body).toEqual({ total: 2, active: 1, archived: 1 })

    const listed = await t.request('GET', '/api/v1/workflow/fetch')
    // The list is sent as the database writes it, without Elysia's run-time check (jsonText): the schema it documents must hold.
    expect([...Value.Errors(Type.Array(AgentListItem), listed.body)]).toEqual([])
    expect(listed.headers.get('content-type')).toBe('application/json;charset=utf-8')
    const item = listed.body.find((agent: any) => agent.id === kept.id)
    expect(item).toEqual({
      id: kept.id,
      name: 'Kept',
      status: 'active',
      created_at: kept.created_at,
      total_runs: 0,
      folder_id: null,
      workflow_uuid: kept.workflow_uuid,
    })

    const restored = await t.request('PUT', `/api/v1/workflow/${archived.id}/status`, { body: { status: 'active' } })
    expect(restored.body.status).toBe('active')
  })

  test('the list (JSON written by the database) carries any name as it was saved', async () => {
    const name = 'Quote " back \\ slash / tab \t nl \n nul-free \u0001 é 日本 😀 \u2028 </script>'
    const agent = await createAgent(t, name)
    const listed = await t.request('GET', '/api/v1/workflow/fetch')
    expect(listed.body.find((item: any) => item.id === agent.id)?.name).toBe(name)
    expect((await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body.name).toBe(name)
  })

  test.each(['deleted', 'active,', 'ACTIVE'])('status filter %j is a 422 naming the bad values', async (status) => {
    const response = await t.request('GET', `/api/v1/workflow/fetch?status=${encodeURIComponent(status)}`)
    expect(response.status).toBe(422)
    expect(response.body.detail).toStartWith('Invalid workflow status filter: [')
    expect(response.body.detail).toEndWith("Allowed values: ['active', 'archived'].")
  })

  test('a status other than active or archived is a 422', async () => {
    const agent = await createAgent(t, 'A')
    const response = await t.request('PUT', `/api/v1/workflow/${agent.id}/status`, { body: { status: 'deleted' } })
    expect(response.status).toBe(422)
    expect(response.body.detail[0]).toMatchObject({
      type: 'literal_error',
      loc: ['body', 'status'],
      msg: "Input should be 'active' or 'archived'",
    })
  })

  inProcessTest('total_runs counts the runs of the agent', async () => {
    const agent = await createAgent(t, 'Busy')
    for (let index = 0; index < 3; index++) seedRun(t as TestApp, { organizationId: 1, agent })
    expect((await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body.total_runs).toBe(3)
    expect((await t.request('GET', '/api/v1/workflow/fetch')).body[0].total_runs).toBe(3)
  })
})

describe('organization isolation', () => {
  test("another organization's agent is 404 on every endpoint and never listed or counted", async () => {
    const theirs = t.newOrg('acme')
    const agent = await createAgent(t, 'Theirs', theirs.key)
    await createAgent(t, 'Mine')
    const calls: [string, string, unknown, string][] = [
      ['GET', `/api/v1/workflow/fetch/${agent.id}`, undefined, `Workflow with id ${agent.id} not found`],
      ['PUT', `/api/v1/workflow/${agent.id}`, { name: 'Stolen' }, `Workflow with id ${agent.id} not found`],
      ['POST', `/api/v1/workflow/${agent.id}/publish`, undefined, `Workflow with id ${agent.id} not found`],
      ['GET', `/api/v1/workflow/${agent.id}/versions`, undefined, `Workflow with id ${agent.id} not found`],
      ['PUT', `/api/v1/workflow/${agent.id}/status`, { status: 'archived' }, `Workflow with ID ${agent.id} not found`],
    ]
    for (const [method, path, body, detail] of calls) {
      const response = await t.request(method, path, { body })
      expect({ path, status: response.status, body: response.body }).toEqual({ path, status: 404, body: { detail } })
    }
    const mine = await t.request('GET', '/api/v1/workflow/fetch')
    expect(mine.body.map((item: any) => item.name)).toEqual(['Mine'])
    expect((await t.request('GET', '/api/v1/workflow/count')).body).toEqual({ total: 1, active: 1, archived: 0 })
    expect((await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`, { key: theirs.key })).body).toMatchObject({
      name: 'Theirs',
      status: 'active',
    })
  })
})

describe('node catalog', () => {
  test('lists every node type with its properties', async () => {
    const response = await t.request('GET', '/api/v1/node-types')
    expect(response.status).toBe(200)
    expect(response.body.spec_version).toMatch(/^\d+\.\d+\.\d+$/)
    const byName = new Map(response.body.node_types.map((spec: any) => [spec.name, spec]))
    for (const name of ['startCall', 'agentNode', 'endCall', 'globalNode', 'trigger', 'webhook', 'qa', 'tuner']) {
      expect(byName.get(name)).toMatchObject({
        name,
        display_name: expect.any(String),
        description: expect.any(String),
        category: expect.any(String),
        icon: expect.any(String),
      })
    }
    const property = (node: string, name: string) =>
      (byName.get(node) as any).properties.find((spec: any) => spec.name === name)
    expect(property('startCall', 'prompt')).toMatchObject({ type: expect.any(String), required: true })
    expect(property('trigger', 'trigger_path')).toMatchObject({
      type: 'string',
      max_length: 36,
      pattern: '^[A-Za-z0-9_-]+$',
    })
    expect(property('agentNode', 'extraction_variables')).toMatchObject({
      type: 'fixed_collection',
      properties: expect.any(Array),
    })
  })

  test('every node that names tools also offers mcp_tool_filters, the subset of an MCP server it offers', async () => {
    const response = await t.request('GET', '/api/v1/node-types')
    const naming = response.body.node_types.filter((spec: any) =>
      spec.properties.some((property: any) => property.name === 'tool_uuids'),
    )
    expect(naming.map((spec: any) => spec.name).sort()).toEqual(['agentNode', 'startCall'])
    for (const spec of naming) {
      const filters = spec.properties.find((property: any) => property.name === 'mcp_tool_filters')
      expect(filters, spec.name).toMatchObject({ type: 'json', llm_hint: expect.stringContaining('discovered_tools') })
    }
  })

  test('gets one node type by name; an unknown name is 404', async () => {
    const found = await t.request('GET', '/api/v1/node-types/endCall')
    expect(found.body).toMatchObject({ name: 'endCall', properties: expect.any(Array) })
    const missing = await t.request('GET', '/api/v1/node-types/teleport')
    expect(missing.status).toBe(404)
    expect(typeof missing.body.detail).toBe('string')
    expect((await t.request('GET', '/api/v1/node-types', { key: null })).status).toBe(401)
  })
})
