import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createWebhookDispatcher } from '../../src/runs/webhook-outbox'
import { THIS_SERVER_MESSAGE } from '../../src/egress/policy'
import type { TestApp } from '../support/app'
import { deadBaseUrl, startFakeModels, type FakeModels } from '../support/fake-models'
import { inProcessTest, startHttpTestApp, type HttpTestApp } from '../support/http-app'

/**
 * The URL rules a request body cannot walk around: where an HTTP tool, a webhook node or a pre-call fetch sends its
 * request is written out by the admin (never filled from a template, never an empty authority); a model server's
 * base_url cannot swallow the path requests append, nor be this Ringbase server; the connection check does not tell a
 * caller which ports of this machine are open; a run's webhook log shows where a delivery went, not its secret path.
 * Over HTTP only, so test/binary-http.test.ts runs it against the compiled binary too, except the tests that need the
 * in-process app (its resolver, its webhook dispatcher).
 */

let t: HttpTestApp
let models: FakeModels

// One server for the file: against the binary, starting one takes seconds on a loaded machine.
beforeAll(async () => {
  t = await startHttpTestApp()
  models = startFakeModels()
}, 30_000)
afterAll(async () => {
  models.stop()
  await t.close()
})

/** The in-process app behind `t` (tests marked inProcessTest only). */
const inProcess = () => t as TestApp

/** URLs whose host is not written out: each would let a variable (from the request or the model) pick it. */
const HOST_NOT_WRITTEN = [
  'http:///{{host}}:18912/x', // the probe's finding: parsed as http://{{host}}:18912/x
  'http://\\{{host}}/x',
  'https://{{host}}/x',
  'https://{{sub}}.example.com/x',
  'https://api.example.com{{suffix}}/x',
  'https://api.example.com:{{port}}/x',
  'http:/{{host}}/x',
  'http:{{host}}/x',
]

const node = (id: string, type: string, data: Record<string, unknown>) => ({ id, type, position: { x: 0, y: 0 }, data })

describe("a request's host is written out, never filled from a template", () => {
  test.each(HOST_NOT_WRITTEN)('HTTP tool url %p is refused (422)', async (url) => {
    const response = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Lookup',
        definition: {
          type: 'http_api',
          config: { method: 'GET', url, parameters: [{ name: 'host', type: 'string', description: 'Host' }] },
        },
      },
    })
    expect(response.status, response.text).toBe(422)
    expect(response.body.detail[0].loc).toEqual(['body', 'definition', 'http_api', 'config', 'url'])
  })

  test('a host written out with placeholders after it is accepted', async () => {
    const response = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Lookup',
        definition: { type: 'http_api', config: { method: 'GET', url: 'https://api.example.com/{{path}}?q={{q}}' } },
      },
    })
    expect(response.status, response.text).toBe(200)
  })

  test.each(HOST_NOT_WRITTEN)('webhook node endpoint_url and pre-call fetch url %p are refused (422)', async (url) => {
    const definition = {
      nodes: [
        node('start', 'startCall', {
          name: 'Start',
          prompt: 'Help.',
          pre_call_fetch_enabled: true,
          pre_call_fetch_url: url,
        }),
        node('hook', 'webhook', { name: 'CRM', endpoint_url: url }),
      ],
      edges: [],
    }
    const response = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Hooks', workflow_definition: definition },
    })
    expect(response.status, response.text).toBe(422)
    expect(response.text).toContain('data.pre_call_fetch_url')
    expect(response.text).toContain('data.endpoint_url')
  })
})

describe('model server base_url', () => {
  const create = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/organizations/provider-connections', {
      body: { name: crypto.randomUUID(), provider: 'openai', ...body },
    })

  test.each(['?', '#', '?x=1', '#frag'])(
    'a base_url ending in %p (which would swallow the path every request appends) is refused',
    async (suffix) => {
      const response = await create({ base_url: `${models.baseUrl}/admin${suffix}` })
      expect(response.status, response.text).toBe(422)
      expect(response.body.detail[0]).toMatchObject({
        loc: ['body', 'base_url'],
        msg: expect.stringContaining('query or fragment'),
      })
    },
  )

  inProcessTest(
    'this Ringbase server itself is refused as a model server, on save (as written) and on check (a name that resolves to it)',
    async () => {
      for (const baseUrl of ['http://127.0.0.1:8000/v1', 'http://localhost:8000/v1', 'http://localhost.:8000/v1']) {
        const response = await create({ base_url: baseUrl })
        expect(response.status, `${baseUrl}: ${response.text}`).toBe(422)
        expect(response.body.detail[0].msg).toContain(THIS_SERVER_MESSAGE)
      }
      // speaches' default address is this server's default one
      expect((await create({ provider: 'speaches' })).status).toBe(422)

      const named = await create({ base_url: 'http://models.internal:8000/v1' })
      expect(named.status).toBe(200)
      const { ctx } = inProcess()
      const resolveHost = ctx.resolveHost
      ctx.resolveHost = async () => ['127.0.0.1']
      try {
        const check = await t.request('POST', `/api/v1/organizations/provider-connections/${named.body.uuid}/check`)
        expect(check.body).toEqual({ ok: false, models: [], error: THIS_SERVER_MESSAGE })
      } finally {
        ctx.resolveHost = resolveHost
      }
    },
  )

  test('the check tells a caller nothing about a port of this machine: nothing listening and an HTTP answer read the same', async () => {
    const answering = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response('no such page', { status: 404 }),
    })
    try {
      const errors: string[] = []
      for (const baseUrl of [
        deadBaseUrl(),
        `http://127.0.0.1:${answering.port}/v1`,
        `http://localhost:${answering.port}/v1`,
      ]) {
        const connection = await create({ base_url: baseUrl })
        const check = await t.request(
          'POST',
          `/api/v1/organizations/provider-connections/${connection.body.uuid}/check`,
        )
        expect(check.body.ok).toBe(false)
        errors.push(check.body.error)
      }
      expect(new Set(errors).size).toBe(1)
      expect(errors[0]).not.toMatch(/ECONNREFUSED|refused|404|answered/i)
      // The operator still learns why, from the log.
      expect(t.logText()).toContain('provider connection check failed')
    } finally {
      answering.stop(true)
    }
    // A real model server on this machine still checks fine.
    const fake = await create({ base_url: models.baseUrl })
    expect(
      (await t.request('POST', `/api/v1/organizations/provider-connections/${fake.body.uuid}/check`)).body.ok,
    ).toBe(true)
  })
})

describe("a run's webhook log", () => {
  inProcessTest('a trigger-scope key reads scheme, host and port of a delivery, never its path or query', async () => {
    const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
    try {
      const secretPath = '/hooks/T0KEN-in-the-path?signature=s3cr3t-query'
      const connection = (
        await t.request('POST', '/api/v1/organizations/provider-connections', {
          body: { name: 'Fake', provider: 'openai', base_url: models.baseUrl },
        })
      ).body.uuid
      await t.request('POST', '/api/v1/organizations/model-configurations', {
        body: { name: 'Default', llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } } },
      })
      const definition = {
        nodes: [
          node('start', 'startCall', { name: 'Start', greeting: 'Hi.', prompt: 'Help.' }),
          node('hook', 'webhook', { name: 'CRM', endpoint_url: `http://127.0.0.1:${receiver.port}${secretPath}` }),
        ],
        edges: [],
      }
      const workflowId = (
        await t.request('POST', '/api/v1/workflow/create/definition', {
          body: { name: 'Hooked', workflow_definition: definition },
        })
      ).body.id
      const chat = (await t.request('POST', `/api/v1/workflow/${workflowId}/text-chat/sessions`, { body: {} })).body
      await t.request('POST', `/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`, {
        body: {},
      })
      expect(await createWebhookDispatcher(inProcess().ctx).tick()).toBe(1)

      const trigger = t.newOrg('default', 'trigger').key
      const read = await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${chat.workflow_run_id}`, {
        key: trigger,
      })
      expect(read.status, read.text).toBe(200)
      expect(read.body.logs.webhook_deliveries).toEqual([
        expect.objectContaining({ url: `http://127.0.0.1:${receiver.port}`, outcome: 'delivered' }),
      ])
      expect(read.text).not.toContain('T0KEN')
      expect(read.text).not.toContain('s3cr3t')
    } finally {
      receiver.stop(true)
    }
  })
})
