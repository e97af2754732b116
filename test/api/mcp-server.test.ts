import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'

/**
 * Ringbase as an MCP server, driven by the official SDK's client over real HTTP: an agent built, changed and talked to
 * end to end (the LLM is the fake OpenAI-compatible server), with the API's validation, organization scoping and key
 * scopes.
 */

let t: HttpTestApp
let models: FakeModels
let baseUrl: string
const clients: Client[] = []

async function connect(headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/api/v1/mcp`), { requestInit: { headers } }),
  )
  clients.push(client)
  return client
}

/** A tool's answer: the JSON it carries, and whether it is an error. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as {
    content: { type: string; text: string }[]
    isError?: boolean
  }
  return { isError: result.isError ?? false, value: JSON.parse(result.content[0].text) }
}

const DEFINITION = {
  nodes: [
    {
      id: '1',
      type: 'startCall',
      data: { name: 'Start', greeting: 'Hello from the desk!', prompt: 'Answer briefly.' },
    },
    { id: '2', type: 'endCall', data: { name: 'End', prompt: 'Say goodbye.' } },
  ],
  edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
}

beforeAll(async () => {
  t = await startHttpTestApp()
  models = startFakeModels()
  baseUrl = await t.httpUrl()
  const post = async (path: string, body: unknown) => (await t.request('POST', path, { body })).body
  const connection = (
    await post('/api/v1/organizations/provider-connections', {
      name: 'Fake',
      provider: 'openai',
      base_url: models.baseUrl,
      api_key: 'sk-fake',
    })
  ).uuid
  await post('/api/v1/organizations/model-configurations', {
    name: 'Default',
    llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } },
  })
}, 30_000)
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()))
  models.stop()
  await t.close()
})
beforeEach(() => models.reset())

describe('Ringbase as an MCP server', () => {
  test('an MCP client builds an agent, changes it, chats with it and reads the run', async () => {
    const client = await connect({ authorization: `Bearer ${t.adminKey}` })
    expect(client.getServerVersion()).toMatchObject({ name: 'ringbase' })
    expect(client.getInstructions()).toContain('create_workflow')
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual([
      'list_workflows',
      'get_workflow',
      'create_workflow',
      'update_workflow',
      'publish_workflow',
      'list_node_types',
      'get_node_type',
      'start_text_chat',
      'send_text_chat_message',
      'list_runs',
      'get_run',
      'start_test_call',
    ])
    const update = tools.find((tool) => tool.name === 'update_workflow')!.inputSchema
    expect(update.required).toEqual(['workflow_id'])
    expect(update.properties!.workflow_id).toMatchObject({ type: 'integer' })
    expect(Object.keys(update.properties!)).toEqual(expect.arrayContaining(['name', 'workflow_definition']))

    const nodeTypes = await call(client, 'list_node_types')
    expect(nodeTypes.value.node_types.map((spec: { name: string }) => spec.name)).toContain('agentNode')
    expect((await call(client, 'get_node_type', { name: 'startCall' })).value.name).toBe('startCall')

    const created = await call(client, 'create_workflow', { name: 'Desk', workflow_definition: DEFINITION })
    expect(created.isError).toBe(false)
    const workflowId = created.value.id as number
    expect((await call(client, 'list_workflows')).value.map((agent: { id: number }) => agent.id)).toContain(workflowId)
    const renamed = await call(client, 'update_workflow', { workflow_id: workflowId, name: 'Front desk' })
    expect(renamed.value.name).toBe('Front desk')
    expect((await call(client, 'get_workflow', { workflow_id: workflowId })).value).toMatchObject({
      id: workflowId,
      name: 'Front desk',
    })

    const chat = await call(client, 'start_text_chat', { workflow_id: workflowId })
    expect(chat.value.session_data.turns[0].assistant_message.text).toBe('Hello from the desk!')
    const runId = chat.value.workflow_run_id as number
    models.chat.queue(say('We open at nine.'))
    const answer = await call(client, 'send_text_chat_message', {
      workflow_id: workflowId,
      run_id: runId,
      text: 'When do you open?',
    })
    expect(answer.value.session_data.turns.at(-1).assistant_message.text).toBe('We open at nine.')

    const runs = await call(client, 'list_runs', { workflow_id: workflowId })
    expect(runs.value.runs.map((run: { id: number }) => run.id)).toContain(runId)
    const run = await call(client, 'get_run', { workflow_id: workflowId, run_id: runId })
    expect(run.value.logs.transcript.map((turn: { text: string }) => turn.text)).toEqual([
      'Hello from the desk!',
      'When do you open?',
      'We open at nine.',
    ])
  })

  test("a refused input is the API's own answer, word for word", async () => {
    const client = await connect({ 'x-api-key': t.adminKey })
    const bodies = [
      { workflow_definition: DEFINITION },
      { name: 'x'.repeat(300), workflow_definition: DEFINITION },
      {
        name: 'Broken',
        workflow_definition: { nodes: [{ id: '1', type: 'agentNode', data: { name: 'A', prompt: 'p' } }], edges: [] },
      },
    ]
    for (const body of bodies) {
      const viaApi = await t.request('POST', '/api/v1/workflow/create/definition', { body })
      expect(viaApi.status).toBe(422)
      const viaMcp = await call(client, 'create_workflow', body)
      expect(viaMcp).toEqual({ isError: true, value: { status: 422, detail: viaApi.body.detail } })
    }
    const badId = await call(client, 'get_workflow', { workflow_id: 'seven' })
    expect(badId.value.status).toBe(422)
    expect(badId.value.detail[0].loc).toEqual(['path', 'workflow_id'])
    const viaApi = await t.request('POST', '/api/v1/public/agent/test/workflow/no-such-agent', {
      body: { phone_number: '+15550100' },
    })
    expect(
      await call(client, 'start_test_call', { workflow_uuid: 'no-such-agent', phone_number: '+15550100' }),
    ).toEqual({ isError: true, value: { status: viaApi.status, detail: viaApi.body.detail } })
  })

  test("another organization's agents and runs do not exist; a trigger key sees and may use only the trigger tools", async () => {
    const admin = await connect({ authorization: `Bearer ${t.adminKey}` })
    const workflowId = (await call(admin, 'create_workflow', { name: 'Private', workflow_definition: DEFINITION }))
      .value.id
    const other = t.newOrg(`other ${crypto.randomUUID()}`)
    const outsider = await connect({ authorization: `Bearer ${other.key}` })
    expect(await call(outsider, 'get_workflow', { workflow_id: workflowId })).toEqual({
      isError: true,
      value: { status: 404, detail: expect.stringContaining('not found') },
    })
    expect((await call(outsider, 'list_runs', { workflow_id: workflowId })).value.status).toBe(404)
    expect((await call(outsider, 'list_workflows')).value).toEqual([])

    const trigger = await connect({ authorization: `Bearer ${t.newOrg('default', 'trigger').key}` })
    expect((await trigger.listTools()).tools.map((tool) => tool.name)).toEqual([
      'list_runs',
      'get_run',
      'start_test_call',
    ])
    expect(await call(trigger, 'create_workflow', { name: 'Nope', workflow_definition: DEFINITION })).toEqual({
      isError: true,
      value: { status: 403, detail: "This API key's scope 'trigger' does not allow this operation" },
    })
    expect((await call(trigger, 'list_runs', { workflow_id: workflowId })).isError).toBe(false)
  })

  test("without a valid key nothing is answered, initialize included; a body over the API's limit is a 413", async () => {
    await expect(connect({})).rejects.toThrow()
    await expect(connect({ authorization: 'Bearer rb_not-a-key' })).rejects.toThrow()
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }
    const anonymous = await t.request('POST', '/api/v1/mcp', {
      key: null,
      body: initialize,
      headers: { accept: 'application/json, text/event-stream' },
    })
    expect(anonymous.status).toBe(401)
    const oversized = { ...initialize, params: { ...initialize.params, padding: 'x'.repeat(2 * 1024 * 1024) } }
    const tooLarge = await t.request('POST', '/api/v1/mcp', {
      body: oversized,
      headers: { accept: 'application/json, text/event-stream' },
    })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.body.detail).toBeString()
    const wrongAccept = await t.request('POST', '/api/v1/mcp', { body: initialize, headers: { accept: 'text/html' } })
    expect(wrongAccept.status).toBe(406)
    expect(wrongAccept.body.detail).toBeString()
  })

  test('GET and DELETE on the endpoint are 405 with a detail and Allow: POST (stateless: no stream, no session), not 404', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await t.request(method, '/api/v1/mcp', { headers: { accept: 'text/event-stream' } })
      expect(response.status, `${method}: ${response.text}`).toBe(405)
      expect(response.body.detail).toBe(`${method} is not served here; use POST`)
      expect(response.headers.get('allow')).toBe('POST')
    }
  })
})
