import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createTestApp, type TestApp } from '../support/app'
import { callTool, say, startFakeModels, type FakeModels } from '../support/fake-models'

/**
 * Tools end to end through text chat: tools, a credential and the agent created over the API, the LLM a fake
 * OpenAI-compatible server and the tool's service a local HTTP server, both on 127.0.0.1; the run read back over HTTP.
 */

const SECRET = 'orders-api-secret-4242'
let t: TestApp
let models: FakeModels
let service: Server<undefined>
const served: { url: URL; authorization: string | null }[] = []

async function post(path: string, body: unknown) {
  const response = await t.request('POST', path, { body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

beforeAll(async () => {
  t = createTestApp()
  models = startFakeModels()
  service = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      served.push({ url: new URL(request.url), authorization: request.headers.get('authorization') })
      return Response.json({
        order: new URL(request.url).pathname.split('/').pop(),
        state: 'shipped',
        eta: '2026-01-08',
      })
    },
  })
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
})
afterAll(() => {
  models.stop()
  service.stop(true)
  t.close()
})
beforeEach(() => {
  models.reset()
  served.length = 0
})

async function chatAgent() {
  const credential = (
    await post('/api/v1/credentials', {
      name: `Orders ${crypto.randomUUID()}`,
      credential_type: 'bearer_token',
      credential_data: { token: SECRET },
    })
  ).uuid
  const orders = await post('/api/v1/tools/', {
    name: 'Look up order',
    description: 'Where an order is',
    definition: {
      type: 'http_api',
      config: {
        method: 'GET',
        url: `http://127.0.0.1:${service.port}/customers/{{customer_id}}/orders/{{order_number}}`,
        credential_uuid: credential,
        parameters: [{ name: 'order_number', type: 'string', description: 'The order number' }],
        preset_parameters: [{ name: 'customer_id', type: 'string', value_template: '{{initial_context.customer_id}}' }],
      },
    },
  })
  const hangUp = await post('/api/v1/tools/', {
    name: 'Hang up',
    definition: { type: 'end_call', config: { messageType: 'custom', customMessage: 'Goodbye!', endCallReason: true } },
  })
  const transfer = await post('/api/v1/tools/', {
    name: 'Transfer',
    definition: { type: 'transfer_call', config: { destination: '2001' } },
  })
  const agent = await post('/api/v1/workflow/create/definition', {
    name: 'Orders desk',
    workflow_definition: {
      nodes: [
        {
          id: '1',
          type: 'startCall',
          data: {
            name: 'Start',
            greeting: 'Hello!',
            prompt: 'Help with orders.',
            tool_uuids: [orders.tool_uuid, hangUp.tool_uuid, transfer.tool_uuid],
          },
        },
        { id: '2', type: 'endCall', data: { name: 'End', prompt: 'Say goodbye.' } },
      ],
      edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
    },
  })
  return agent.id as number
}

describe('tools through text chat', () => {
  test('an http_api tool with a credential and a preset: the model sees the result and answers; the run logs the request, never the secret', async () => {
    const workflowId = await chatAgent()
    const sessions = `/api/v1/workflow/${workflowId}/text-chat/sessions`
    const opened = await post(sessions, { initial_context: { customer_id: 'C 9' } })
    models.chat.queue(
      callTool('look_up_order', { order_number: 'A-17' }),
      say('Order A-17 has shipped; it arrives on January 8.'),
    )
    const answer = await post(`${sessions}/${opened.workflow_run_id}/messages`, {
      text: 'Where is order A-17?',
      expected_revision: 1,
    })
    expect(answer.session_data.turns[1].assistant_message.text).toBe('Order A-17 has shipped; it arrives on January 8.')

    expect(served).toHaveLength(1)
    expect(served[0].url.pathname).toBe('/customers/C%209/orders/A-17')
    expect(served[0].authorization).toBe(`Bearer ${SECRET}`)

    const [first, second] = models.requestsTo('/chat/completions')
    // Transfer tools are not offered on chat runs.
    expect(first.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual([
      'done',
      'look_up_order',
      'hang_up',
    ])
    expect(second.body.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: JSON.stringify({
        status: 'success',
        status_code: 200,
        data: { order: 'A-17', state: 'shipped', eta: '2026-01-08' },
      }),
    })

    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`)).body
    expect(run.logs.tool_calls).toEqual([
      expect.objectContaining({
        function_name: 'look_up_order',
        type: 'http_api',
        status: 'success',
        http: { method: 'GET', host: `127.0.0.1:${service.port}`, status_code: 200, duration_ms: expect.any(Number) },
      }),
    ])
    expect(run.logs.warnings.join('\n')).toContain("tool 'Transfer' transfers calls, which this channel cannot do")
    expect(JSON.stringify(run)).not.toContain(SECRET)
    expect(t.logText()).not.toContain(SECRET)
  })

  test("end_call: the goodbye is the last turn, the chat ends at once with the model's reason as disposition", async () => {
    const workflowId = await chatAgent()
    const sessions = `/api/v1/workflow/${workflowId}/text-chat/sessions`
    const opened = await post(sessions, { initial_context: { customer_id: 'C-1' } })
    models.chat.queue(callTool('hang_up', { reason: 'no_order_found' }))
    const answer = await post(`${sessions}/${opened.workflow_run_id}/messages`, {
      text: 'Never mind, bye',
      expected_revision: 1,
    })
    expect(answer).toMatchObject({
      is_completed: true,
      session_data: { status: 'completed', end_reason: 'end_call_tool' },
      gathered_context: {
        call_disposition: 'no_order_found',
        call_tags: expect.arrayContaining(['no_order_found', 'end_call_tool']),
      },
    })
    expect(answer.session_data.turns[1].assistant_message.text).toBe('Goodbye!')
    expect(models.requestsTo('/chat/completions')).toHaveLength(1)
  })
})
