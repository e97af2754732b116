import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { inProcessTest, startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { callTool, say, startFakeModels, type FakeModels } from '../support/fake-models'
import {
  startEverythingServer,
  startHostileMcpServer,
  type EverythingServer,
  type HostileMcpServer,
} from '../support/mcp-servers'

/**
 * MCP servers as agent tools, over the API: the tool's server listed on save and on refresh, its tools offered to the
 * model in text chat and called through `tools/call`; against the protocol's reference server (server-everything) and
 * a hostile one (silent, huge, broken, 10,000 tools, a giant schema). The LLM is the fake OpenAI-compatible server.
 */

let t: HttpTestApp
let models: FakeModels
let everything: EverythingServer
let hostile: HostileMcpServer

async function post(path: string, body: unknown, key?: string) {
  const response = await t.request('POST', path, { body, key })
  expect(response.status, response.text).toBe(200)
  return response.body
}

const mcpTool = (name: string, url: string, config: Record<string, unknown> = {}) =>
  post('/api/v1/tools/', {
    name,
    description: 'Tools of an MCP server',
    definition: { type: 'mcp', config: { url, ...config } },
  })

async function chatWith(toolUuid: string, nodeData: Record<string, unknown> = {}) {
  const agent = await post('/api/v1/workflow/create/definition', {
    name: `MCP desk ${crypto.randomUUID()}`,
    workflow_definition: {
      nodes: [
        {
          id: '1',
          type: 'startCall',
          data: { name: 'Start', greeting: 'Hello!', prompt: 'Help.', tool_uuids: [toolUuid], ...nodeData },
        },
        { id: '2', type: 'endCall', data: { name: 'End', prompt: 'Say goodbye.' } },
      ],
      edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
    },
  })
  const sessions = `/api/v1/workflow/${agent.id}/text-chat/sessions`
  const opened = await post(sessions, {})
  return {
    async send(text: string) {
      return post(`${sessions}/${opened.workflow_run_id}/messages`, {
        text,
        expected_revision: (await t.request('GET', `${sessions}/${opened.workflow_run_id}`)).body.revision,
      })
    },
    run: async () => (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${opened.workflow_run_id}`)).body,
  }
}

const offeredNames = (request: { body: { tools?: { function: { name: string } }[] } }) =>
  (request.body.tools ?? []).map((tool) => tool.function.name)

beforeAll(async () => {
  t = await startHttpTestApp()
  models = startFakeModels()
  hostile = startHostileMcpServer()
  everything = await startEverythingServer()
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
  models.stop()
  hostile.stop()
  everything.stop()
  await t.close()
})
beforeEach(() => models.reset())

describe('an MCP server as a tool (server-everything)', () => {
  test("saving lists the server's tools with their input schemas; tools_filter keeps the chosen ones", async () => {
    const all = await mcpTool('Everything', everything.url)
    expect(all.category).toBe('mcp')
    const names = all.definition.config.discovered_tools.map((tool: { name: string }) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['echo', 'get-sum']))
    expect(all.definition.config.discovery_error).toBeNull()
    expect(
      all.definition.config.discovered_tools.find((tool: { name: string }) => tool.name === 'get-sum'),
    ).toMatchObject({
      description: 'Returns the sum of two numbers',
      input_schema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
    })

    const chosen = await mcpTool('Everything', everything.url, { tools_filter: ['echo', 'get-sum', 'no-such-tool'] })
    expect(chosen.definition.config.discovered_tools.map((tool: { name: string }) => tool.name).sort()).toEqual([
      'echo',
      'get-sum',
    ])
    expect(chosen.definition.config.discovery_error).toContain('no-such-tool')
    expect(
      (await t.request('GET', `/api/v1/tools/${chosen.tool_uuid}`)).body.definition.config.discovered_tools,
    ).toHaveLength(2)
  })

  test("text chat: the model is offered the server's tools, calls one through tools/call and reads its answer; the run logs it", async () => {
    const tool = await mcpTool('Everything', everything.url, { tools_filter: ['echo', 'get-sum'] })
    const chat = await chatWith(tool.tool_uuid)
    models.chat.queue(callTool('mcp__everything__get-sum', { a: 2, b: 40 }), say('That makes 42.'))
    const answer = await chat.send('What is 2 + 40?')
    expect(answer.session_data.turns.at(-1).assistant_message.text).toBe('That makes 42.')

    const [first, second] = models.requestsTo('/chat/completions')
    expect(offeredNames(first).sort()).toEqual(['done', 'mcp__everything__echo', 'mcp__everything__get-sum'])
    const sum = first.body.tools.find(
      (offered: { function: { name: string } }) => offered.function.name === 'mcp__everything__get-sum',
    )
    expect(sum.function).toMatchObject({
      description: 'Returns the sum of two numbers',
      parameters: { type: 'object', required: ['a', 'b'] },
    })
    const result = JSON.parse(second.body.messages.at(-1).content)
    expect(result).toMatchObject({ status: 'success' })
    expect(result.content).toContain('42')

    const run = await chat.run()
    expect(run.logs.tool_calls).toEqual([
      expect.objectContaining({
        function_name: 'mcp__everything__get-sum',
        type: 'mcp',
        status: 'success',
        tool_uuid: tool.tool_uuid,
        mcp: { host: new URL(everything.url).host, tool: 'get-sum', duration_ms: expect.any(Number) },
      }),
    ])
  })

  test('an older server over HTTP+SSE (transport sse): listed and called the same way', async () => {
    const sse = await startEverythingServer('sse')
    try {
      const tool = await mcpTool('Legacy', sse.url, { transport: 'sse', tools_filter: ['echo'] })
      expect(tool.definition.config).toMatchObject({
        transport: 'sse',
        discovery_error: null,
        discovered_tools: [expect.objectContaining({ name: 'echo' })],
      })
      const chat = await chatWith(tool.tool_uuid)
      models.chat.queue(callTool('mcp__legacy__echo', { message: 'over SSE' }), say('It echoed.'))
      await chat.send('Echo something')
      expect(JSON.parse(models.requestsTo('/chat/completions')[1].body.messages.at(-1).content)).toEqual({
        status: 'success',
        content: 'Echo: over SSE',
      })
    } finally {
      sse.stop()
    }
  })

  test("a node's mcp_tool_filters offers only the tools it lists", async () => {
    const tool = await mcpTool('Everything', everything.url)
    const chat = await chatWith(tool.tool_uuid, { mcp_tool_filters: { [tool.tool_uuid]: ['echo'] } })
    models.chat.queue(say('Hello.'))
    await chat.send('Hi')
    expect(offeredNames(models.requestsTo('/chat/completions')[0])).toEqual(['done', 'mcp__everything__echo'])
  })

  test("refresh lists the server again; a tool of another type is a 400, an unknown or another organization's a 404", async () => {
    const tool = await mcpTool('Everything', everything.url, { tools_filter: ['echo'] })
    const refreshed = await post(`/api/v1/tools/${tool.tool_uuid}/mcp/refresh`, {})
    expect(refreshed).toMatchObject({
      tool_uuid: tool.tool_uuid,
      error: null,
      discovered_tools: [expect.objectContaining({ name: 'echo' })],
    })

    const calculator = await post('/api/v1/tools/', { name: 'Calc', definition: { type: 'calculator' } })
    const notMcp = await t.request('POST', `/api/v1/tools/${calculator.tool_uuid}/mcp/refresh`, { body: {} })
    expect(notMcp.status).toBe(400)
    expect(notMcp.body.detail).toContain('not an MCP tool')
    expect((await t.request('POST', `/api/v1/tools/${crypto.randomUUID()}/mcp/refresh`, { body: {} })).status).toBe(404)
    const other = t.newOrg(`other ${crypto.randomUUID()}`)
    expect(
      (await t.request('POST', `/api/v1/tools/${tool.tool_uuid}/mcp/refresh`, { body: {}, key: other.key })).status,
    ).toBe(404)
  })
})

describe('MCP tools under the outbound rules', () => {
  // The in-process app's configured address is 127.0.0.1:8000; the binary is started on a port chosen as it listens.
  inProcessTest('a URL naming this server is refused on save', async () => {
    const self = await t.request('POST', '/api/v1/tools/', {
      body: { name: 'Me', definition: { type: 'mcp', config: { url: 'http://127.0.0.1:8000/api/v1/mcp' } } },
    })
    expect(self.status).toBe(422)
    expect(self.body.detail[0]).toMatchObject({
      loc: ['body', 'definition', 'mcp', 'config', 'url'],
      msg: expect.stringContaining('this Ringbase server itself'),
    })
  })

  test('an unknown credential and a placeholder in the URL are 422s', async () => {
    const credential = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'X',
        definition: { type: 'mcp', config: { url: hostile.url('well-behaved'), credential_uuid: crypto.randomUUID() } },
      },
    })
    expect(credential.status).toBe(422)
    expect(credential.body.detail[0].loc).toEqual(['body', 'definition', 'mcp', 'config', 'credential_uuid'])
    const placeholder = await t.request('POST', '/api/v1/tools/', {
      body: { name: 'X', definition: { type: 'mcp', config: { url: 'http://{{host}}/mcp' } } },
    })
    expect(placeholder.status).toBe(422)
  })

  test('a host off the allow-list is not contacted: the save keeps the tool and says why', async () => {
    const org = t.newOrg(`allow-list ${crypto.randomUUID()}`)
    const put = await t.request('PUT', '/api/v1/organizations/tool-settings', {
      body: { allowed_hosts: ['api.example.com'] },
      key: org.key,
    })
    expect(put.status).toBe(200)
    const before = hostile.authorizations.length
    const saved = await post(
      '/api/v1/tools/',
      { name: 'Blocked', definition: { type: 'mcp', config: { url: hostile.url('well-behaved') } } },
      org.key,
    )
    expect(saved.definition.config.discovered_tools).toEqual([])
    expect(saved.definition.config.discovery_error).toContain("not on this organization's list of allowed hosts")
    expect(hostile.authorizations.length).toBe(before)
  })

  test('the credential goes to the server on listing and calls; a credential gone since fails the call without calling unauthenticated', async () => {
    const credential = await post('/api/v1/credentials', {
      name: `MCP ${crypto.randomUUID()}`,
      credential_type: 'bearer_token',
      credential_data: { token: 'mcp-secret-77' },
    })
    const tool = await mcpTool('Ledger', hostile.url('well-behaved'), { credential_uuid: credential.uuid })
    expect(hostile.authorizations.at(-1)).toBe('Bearer mcp-secret-77')
    const chat = await chatWith(tool.tool_uuid)
    models.chat.queue(callTool('mcp__ledger__add', { a: 1, b: 2 }), say('Three.'))
    await chat.send('1 + 2?')
    expect(JSON.parse(models.requestsTo('/chat/completions')[1].body.messages.at(-1).content)).toEqual({
      status: 'success',
      content: '3\n[image image/png]',
    })

    // refused while the tool names it; gone once the tool is archived (the conversation already holds the tool)
    expect((await t.request('DELETE', `/api/v1/credentials/${credential.uuid}`)).status).toBe(409)
    expect((await t.request('DELETE', `/api/v1/tools/${tool.tool_uuid}`)).status).toBe(200)
    expect((await t.request('DELETE', `/api/v1/credentials/${credential.uuid}`)).status).toBe(200)
    const calls = hostile.calls()
    models.chat.queue(callTool('mcp__ledger__add', { a: 1, b: 2 }), say('Sorry.'))
    await chat.send('again?')
    expect(JSON.parse(models.requestsTo('/chat/completions').at(-1)!.body.messages.at(-1).content)).toEqual({
      status: 'error',
      error: 'The credential of this MCP tool cannot be used',
    })
    expect(hostile.calls()).toBe(calls)
    expect(t.logText()).not.toContain('mcp-secret-77')
  })
})

describe('a hostile MCP server', () => {
  test('listing: silence, a huge answer, invalid JSON and 10,000 tools each end in a clean discovery_error', async () => {
    const silent = await mcpTool('Silent', hostile.url('silent'), { timeout_secs: 1 })
    expect(silent.definition.config).toMatchObject({
      discovered_tools: [],
      discovery_error: 'The MCP server did not answer within 1 s',
    })
    const chat = await chatWith(silent.tool_uuid)
    expect((await chat.run()).logs.warnings).toContain(
      "Node 'Start' (1): MCP tool 'Silent' has no tools listed from its server (The MCP server did not answer within 1 s); refresh it once the server answers",
    )
    const huge = await mcpTool('Huge', hostile.url('huge'))
    expect(huge.definition.config.discovery_error).toBe('The answer is larger than 1048576 bytes')
    const invalid = await mcpTool('Broken', hostile.url('invalid-json'))
    expect(invalid.definition.config.discovered_tools).toEqual([])
    expect(invalid.definition.config.discovery_error).toStartWith('The MCP server could not be used')
    const many = await mcpTool('Many', hostile.url('many-tools'))
    expect(many.definition.config.discovered_tools).toEqual([])
    expect(many.definition.config.discovery_error).toBe('The MCP server lists more than 1000 tools')
  })

  test('a silent server holds the request that saves the tool 10 s at most, whatever its timeout_secs', async () => {
    const silent = await mcpTool('Patient', hostile.url('silent'), { timeout_secs: 120 })
    expect(silent.definition.config).toMatchObject({
      timeout_secs: 120,
      discovered_tools: [],
      discovery_error: 'The MCP server did not answer within 10 s',
    })
  }, 30_000)

  test('a giant input schema leaves that tool out; a failed refresh keeps the last list', async () => {
    const tool = await mcpTool('Giant', hostile.url('giant-schema'))
    expect(tool.definition.config.discovered_tools.map((found: { name: string }) => found.name)).toEqual(['add'])
    expect(tool.definition.config.discovery_error).toContain("'giant' is left out")
    const moved = await t.request('PUT', `/api/v1/tools/${tool.tool_uuid}`, {
      body: { definition: { type: 'mcp', config: { url: hostile.url('giant-schema'), timeout_secs: 1 } } },
    })
    expect(moved.body.definition.config.discovered_tools).toHaveLength(1)
    hostile.stop()
    const refreshed = await post(`/api/v1/tools/${tool.tool_uuid}/mcp/refresh`, {})
    hostile = startHostileMcpServer()
    expect(refreshed.error).toBeString()
    expect(refreshed.discovered_tools.map((found: { name: string }) => found.name)).toEqual(['add'])
  })

  test('calls: silence, a huge result and a tool error reach the model as tool errors; the chat goes on', async () => {
    const silent = await mcpTool('Slow', hostile.url('silent-call'), { timeout_secs: 1 })
    const slowChat = await chatWith(silent.tool_uuid)
    models.chat.queue(callTool('mcp__slow__add', { a: 1, b: 1 }), say('It did not answer.'))
    expect((await slowChat.send('1 + 1?')).session_data.turns.at(-1).assistant_message.text).toBe('It did not answer.')
    expect(JSON.parse(models.requestsTo('/chat/completions')[1].body.messages.at(-1).content)).toEqual({
      status: 'error',
      error: 'The MCP server did not answer within 1 s',
    })
    expect((await slowChat.run()).logs.tool_calls[0]).toMatchObject({ type: 'mcp', status: 'error' })

    models.reset()
    const huge = await mcpTool('Big', hostile.url('huge-call'))
    const hugeChat = await chatWith(huge.tool_uuid)
    models.chat.queue(callTool('mcp__big__add', { a: 1, b: 1 }), say('Too much.'))
    await hugeChat.send('1 + 1?')
    expect(JSON.parse(models.requestsTo('/chat/completions')[1].body.messages.at(-1).content)).toEqual({
      status: 'error',
      error: 'The answer is larger than 1048576 bytes',
    })

    models.reset()
    const failing = await mcpTool('Books', hostile.url('error-call'))
    const failingChat = await chatWith(failing.tool_uuid)
    models.chat.queue(
      callTool('mcp__books__add', { a: 1 }),
      callTool('mcp__books__add', { a: 1, b: 2 }),
      say('The ledger is closed.'),
    )
    await failingChat.send('1 + 2?')
    const [, missing, closed] = models.requestsTo('/chat/completions')
    expect(JSON.parse(missing.body.messages.at(-1).content)).toEqual({
      status: 'error',
      error: 'Missing required argument: b',
    })
    expect(JSON.parse(closed.body.messages.at(-1).content)).toEqual({ status: 'error', error: 'the ledger is closed' })
  })
})
