import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import type { AgentDefinition } from '../../src/definition/definition'
import type { ConversationTools } from '../../src/conversation/tool-calls'
import { conversationTools } from '../../src/runs/tools'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition } from '../support/agents'

/** A run's tools from the database: the organization's active tools, its allow-list and its credentials. */

let t: TestApp
let service: Server<undefined>
const seenHeaders: Record<string, string>[] = []
beforeAll(() => {
  service = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      seenHeaders.push(Object.fromEntries(request.headers))
      return Response.json({ balance: 42 })
    },
  })
})
afterAll(() => service.stop(true))
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const SECRET = 'tok-0123456789-secret'

async function createCredential(key?: string) {
  const response = await t.request('POST', '/api/v1/credentials', {
    key,
    body: { name: 'Billing API', credential_type: 'bearer_token', credential_data: { token: SECRET } },
  })
  expect(response.status).toBe(200)
  return response.body.uuid as string
}

const balanceTool = (credentialUuid: string | null) => ({
  name: 'Balance',
  definition: {
    type: 'http_api',
    config: { method: 'GET', url: `http://127.0.0.1:${service.port}/balance`, credential_uuid: credentialUuid },
  },
})

function withTools(uuids: string[]): AgentDefinition {
  const definition = sampleDefinition()
  return {
    ...definition,
    nodes: definition.nodes.map((node) =>
      node.id === '1' ? { ...node, data: { ...node.data, tool_uuids: uuids } } : node,
    ),
  }
}

/** Calls an http_api tool of the run with no arguments, as the engine would. */
function callTool(tools: ConversationTools, toolUuid: string) {
  const tool = tools.byUuid.get(toolUuid)!
  if (tool.definition.type !== 'http_api') throw new Error('not an http_api tool')
  return tools.callHttp(tool, tool.definition.config, {}, {}, new AbortController().signal)
}

describe("a run's tools", () => {
  test('a tool names a credential of its organization; the request carries it, and no log line or result shows it', async () => {
    const foreign = await createCredential(t.newOrg('other').key)
    const refused = await t.request('POST', '/api/v1/tools/', { body: balanceTool(foreign) })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'definition', 'http_api', 'config', 'credential_uuid'],
      msg: expect.stringContaining(foreign),
    })

    const credential = await createCredential()
    const tool = (await t.request('POST', '/api/v1/tools/', { body: balanceTool(credential) })).body
    const definition = withTools([tool.tool_uuid])
    await createAgent(t, 'billing', undefined, definition)

    const tools = conversationTools(t.ctx, 1, definition, { id: 7 })
    seenHeaders.length = 0
    const outcome = await callTool(tools, tool.tool_uuid)
    expect(outcome.result).toEqual({ status: 'success', status_code: 200, data: { balance: 42 } })
    expect(seenHeaders[0].authorization).toBe(`Bearer ${SECRET}`)
    expect(JSON.stringify(outcome)).not.toContain(SECRET)
    const logLine = t
      .logText()
      .split('\n')
      .find((line) => line.includes('tool HTTP request'))!
    expect(JSON.parse(logLine)).toMatchObject({
      runId: 7,
      toolUuid: tool.tool_uuid,
      method: 'GET',
      host: `127.0.0.1:${service.port}`,
      status_code: 200,
      outcome: 'success',
    })
    expect(t.logText()).not.toContain(SECRET)
  })

  test('only active tools of the organization are offered; the allow-list in force is read at each call', async () => {
    const tool = (await t.request('POST', '/api/v1/tools/', { body: balanceTool(null) })).body
    const archived = (await t.request('POST', '/api/v1/tools/', { body: balanceTool(null) })).body
    await t.request('DELETE', `/api/v1/tools/${archived.tool_uuid}`)
    const foreign = (await t.request('POST', '/api/v1/tools/', { body: balanceTool(null), key: t.newOrg('other').key }))
      .body
    const tools = conversationTools(t.ctx, 1, withTools([tool.tool_uuid, archived.tool_uuid, foreign.tool_uuid]))
    expect([...tools.byUuid.keys()]).toEqual([tool.tool_uuid])

    const call = () => callTool(tools, tool.tool_uuid)
    expect((await call()).result.status).toBe('success')
    await t.request('PUT', '/api/v1/organizations/tool-settings', { body: { allowed_hosts: ['api.example.com'] } })
    expect((await call()).result).toEqual({
      status: 'error',
      error: `The host 127.0.0.1:${service.port} is not on this organization's list of allowed hosts`,
    })
  })

  test('the appliance itself: a URL naming it is refused on save, a name resolving to it when the tool is called', async () => {
    const tool = (url: string) => ({ name: 'Self', definition: { type: 'http_api', config: { method: 'GET', url } } })
    for (const url of [
      'http://127.0.0.1:8000/api/v1/tools/',
      'http://localhost:8000/x',
      'http://[::ffff:127.0.0.1]:8000/x',
      'http://2130706433:8000/{{id}}',
    ]) {
      const refused = await t.request('POST', '/api/v1/tools/', { body: tool(url) })
      expect(refused.status).toBe(422)
      expect(refused.body.detail[0]).toMatchObject({
        loc: ['body', 'definition', 'http_api', 'config', 'url'],
        msg: expect.stringContaining('this Ringbase server itself'),
      })
    }
    t.ctx.resolveHost = async () => ['127.0.0.1']
    const self = (await t.request('POST', '/api/v1/tools/', { body: tool('http://intranet.test:8000/api/v1/tools/') }))
      .body
    const outcome = await callTool(conversationTools(t.ctx, 1, withTools([self.tool_uuid])), self.tool_uuid)
    expect(outcome.result).toEqual({ status: 'error', error: 'This server itself is never called' })
  })
})
