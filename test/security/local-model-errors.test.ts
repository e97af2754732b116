import { afterAll, beforeAll, expect, test } from 'bun:test'
import { onThisMachineFailed, serverOnThisMachine } from '../../src/models/http'
import { createTestApp, type TestApp } from '../support/app'
import { deadBaseUrl } from '../support/fake-models'

/**
 * A model server on this machine fails the same way to an API caller whatever went wrong (nothing listening, an error
 * status, an answer that is not JSON): the model settings cannot be used to learn which of this machine's ports are
 * open. The real reason is in the Ringbase log.
 */

let t: TestApp
let notFound: ReturnType<typeof Bun.serve>
let html: ReturnType<typeof Bun.serve>

beforeAll(() => {
  t = createTestApp()
  notFound = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => new Response('no such page here', { status: 404 }),
  })
  html = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => new Response('<html><body>admin panel</body></html>', { headers: { 'content-type': 'text/html' } }),
  })
})
afterAll(() => {
  notFound.stop(true)
  html.stop(true)
  t.close()
})

const node = (id: string, type: string, data: Record<string, unknown>) => ({ id, type, position: { x: 0, y: 0 }, data })

/** A one-node agent of a fresh organization whose only model configuration points at `baseUrl`; its chat opened. */
async function chatAgainst(baseUrl: string) {
  const { key } = t.newOrg(`org-${crypto.randomUUID()}`)
  const post = async (path: string, body: unknown) => {
    const response = await t.request('POST', path, { key, body })
    expect(response.status, response.text).toBe(200)
    return response.body
  }
  const connection = (
    await post('/api/v1/organizations/provider-connections', { name: 'Local', provider: 'openai', base_url: baseUrl })
  ).uuid
  await post('/api/v1/organizations/model-configurations', {
    name: 'Default',
    llm: { provider_connection_uuid: connection, settings: { model: 'any' } },
  })
  const definition = { nodes: [node('start', 'startCall', { name: 'Start', prompt: 'Help.' })], edges: [] }
  const workflowId = (
    await post('/api/v1/workflow/create/definition', { name: 'Probe', workflow_definition: definition })
  ).id
  const sessions = `/api/v1/workflow/${workflowId}/text-chat/sessions`
  // No greeting: opening the chat asks the model for the first words.
  const answer = await post(sessions, {})
  const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${answer.workflow_run_id}`, { key })).body
  return { answer, warnings: run.logs.warnings as string[] }
}

test('a closed port, a 404 with a body and a 200 with HTML on this machine read the same in the chat and the run logs', async () => {
  const results = []
  for (const baseUrl of [deadBaseUrl(), `http://127.0.0.1:${notFound.port}/v1`, `http://127.0.0.1:${html.port}/v1`]) {
    results.push(await chatAgainst(baseUrl))
  }
  for (const { answer } of results) {
    expect(answer).toMatchObject({ is_completed: true, session_data: { end_reason: 'pipeline_error' } })
  }
  const warnings = results.map(({ warnings }) => JSON.stringify(warnings))
  expect(new Set(warnings).size).toBe(1)
  expect(warnings[0]).toContain(onThisMachineFailed('chat completion'))
  expect(warnings[0]).not.toMatch(/ECONNREFUSED|refused|\b404\b|answered|JSON|html/i)
  // What each chat answered holds nothing of the reason either.
  for (const { answer } of results)
    expect(JSON.stringify(answer)).not.toMatch(/ECONNREFUSED|\b404\b|no such page|not JSON|admin panel/i)
  // The operator still learns why, from the log.
  const log = t.logText()
  expect(log).toContain('ECONNREFUSED')
  expect(log).toContain('answered 404: no such page here')
  expect(log).toContain('the stream ended before the answer did')
})

test('which servers are on this machine: loopback and local names without a lookup, other literal addresses not', async () => {
  const lookups: string[] = []
  const resolveHost = async (host: string) => {
    lookups.push(host)
    return host === 'models.internal' ? ['127.0.0.1'] : ['192.0.2.7']
  }
  expect(await serverOnThisMachine('http://127.0.0.1:9/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('http://[::1]:9/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('http://localhost:9/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('http://0.0.0.0:9/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('http://192.0.2.1:9/v1', resolveHost)).toBe(false)
  expect(await serverOnThisMachine('http://[2001:db8::1]/v1', resolveHost)).toBe(false)
  expect(lookups).toEqual([])
  expect(await serverOnThisMachine('http://models.internal:8000/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('http://models.internal:8000/v1', resolveHost)).toBe(true)
  expect(await serverOnThisMachine('https://api.example.com/v1', resolveHost)).toBe(false)
  // A name's answer is kept briefly: asked once for two requests.
  expect(lookups).toEqual(['models.internal', 'api.example.com'])
})
