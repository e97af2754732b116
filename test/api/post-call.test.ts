import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { closeSessionsInterruptedByRestart } from '../../src/runs/session-recovery'
import { createWebhookDispatcher, releaseHeldDeliveries } from '../../src/runs/webhook-outbox'
import type { manualClock } from '../../src/lib/clock'
import { createTestApp, UNREACHABLE_URL, type TestApp } from '../support/app'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'
import { waitFor } from '../support/wait'
import { verifyWebhookSignature } from '../support/webhook-signature'

/**
 * After the call: pre-call fetch before the opening, QA nodes after the end, webhook deliveries through the durable
 * outbox (signed, with the node's credential, retried by class, every attempt on the run, surviving a restart).
 */

type Received = { method: string; path: string; headers: Headers; body: string }

/** A receiver on 127.0.0.1 answering each request with the next scripted status (then 200). */
function startReceiver() {
  const received: Received[] = []
  const statuses: number[] = []
  let answer: (path: string) => Response | null = () => null
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      received.push({ method: request.method, path, headers: new Headers(request.headers), body: await request.text() })
      return answer(path) ?? new Response('ok', { status: statuses.shift() ?? 200 })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    received,
    statuses,
    answerWith(handler: (path: string) => Response | null) {
      answer = handler
    },
    stop: () => server.stop(true),
  }
}

const CREDENTIAL_TOKEN = 'crm-token-0123456789'
let t: TestApp
let models: FakeModels
let receiver: ReturnType<typeof startReceiver>
let clock: ReturnType<typeof manualClock>

async function post(path: string, body: unknown = {}, app = t) {
  const response = await app.request('POST', path, { body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

async function setUpModels(app: TestApp) {
  const connection = (
    await post(
      '/api/v1/organizations/provider-connections',
      { name: 'Fake', provider: 'openai', base_url: models.baseUrl },
      app,
    )
  ).uuid
  await post(
    '/api/v1/organizations/model-configurations',
    { name: 'Default', llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } } },
    app,
  )
}

const node = (id: string, type: string, data: Record<string, unknown>) => ({ id, type, position: { x: 0, y: 0 }, data })

function agentWith(...extra: ReturnType<typeof node>[]) {
  return {
    nodes: [
      node('start', 'startCall', { name: 'Start', greeting: 'Hi {{first_name | there}}.', prompt: 'Help.' }),
      ...extra,
    ],
    edges: [],
  }
}

async function agent(definition: unknown, app = t): Promise<number> {
  return (
    await post('/api/v1/workflow/create/definition', { name: 'After call', workflow_definition: definition }, app)
  ).id
}

const run = (workflowId: number, runId: number, app = t) =>
  app.request('GET', `/api/v1/workflow/${workflowId}/runs/${runId}`).then((response) => response.body)

/** The run once its QA review is stored (the review runs after the run completes). */
async function reviewed(workflowId: number, runId: number) {
  await waitFor('the QA annotation', async () => Boolean((await run(workflowId, runId)).annotations.qa_qa))
  return run(workflowId, runId)
}

beforeEach(async () => {
  t = createTestApp()
  clock = t.ctx.clock as ReturnType<typeof manualClock>
  models = startFakeModels()
  receiver = startReceiver()
  await setUpModels(t)
})
afterEach(() => {
  models.stop()
  receiver.stop()
  t.close()
})

describe('webhook deliveries', () => {
  test('queued when the run completes, delivered after a restart: signed, with the credential, on the run', async () => {
    expect((await t.request('GET', '/api/v1/organizations/webhook-signing-secret')).body).toEqual({
      configured: false,
      hint: null,
      created_at: null,
    })
    const first = (await post('/api/v1/organizations/webhook-signing-secret')).secret as string
    const secret = (await post('/api/v1/organizations/webhook-signing-secret')).secret as string
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
    expect(secret).not.toBe(first)
    const sealed = t.ctx.sqlite
      .query<{ secret: string }, []>('SELECT secret FROM webhook_signing_secrets')
      .get()!.secret
    expect(sealed).toStartWith('v1:')
    expect(sealed).not.toContain(secret)
    const status = await t.request('GET', '/api/v1/organizations/webhook-signing-secret')
    expect(status.body).toEqual({ configured: true, hint: secret.slice(-4), created_at: expect.any(String) })
    expect(status.text).not.toContain(secret.slice(0, 20))
    const credential = (
      await post('/api/v1/credentials', {
        name: 'CRM',
        credential_type: 'bearer_token',
        credential_data: { token: CREDENTIAL_TOKEN },
      })
    ).uuid
    const workflowId = await agent(
      agentWith(
        node('hook', 'webhook', {
          name: 'CRM',
          endpoint_url: `${receiver.url}/calls`,
          credential_uuid: credential,
          custom_headers: [
            { key: 'X-Team', value: 'sales' },
            { key: 'X-Api-Key', value: 'leaky' },
          ],
          payload_template: {
            run: '{{workflow_run_id}}',
            who: '{{initial_context.first_name}}',
            agent: '{{workflow_name}}',
            transcript: '{{transcript_url}}',
          },
        }),
      ),
    )
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {
      initial_context: { first_name: 'Ada' },
    })
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    const queued = t.ctx.sqlite
      .query('SELECT state, attempts FROM webhook_deliveries WHERE run_id = ?')
      .all(chat.workflow_run_id)
    expect(queued).toEqual([{ state: 'pending', attempts: 0 }])
    expect(receiver.received).toHaveLength(0)

    // The process stops before delivering; the same data dir is served again.
    t.close({ keepData: true })
    t = createTestApp({ restartOf: t })
    expect(await createWebhookDispatcher(t.ctx).tick()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    const [delivery] = receiver.received
    expect(delivery.method).toBe('POST')
    expect(delivery.path).toBe('/calls')
    expect(delivery.headers.get('authorization')).toBe(`Bearer ${CREDENTIAL_TOKEN}`)
    expect(delivery.headers.get('x-team')).toBe('sales')
    expect(delivery.headers.get('x-api-key')).toBeNull()
    expect(delivery.headers.get('x-ringbase-run-id')).toBe(String(chat.workflow_run_id))
    expect(delivery.headers.get('x-ringbase-delivery-attempt')).toBe('1')
    expect(delivery.headers.get('x-ringbase-delivery-id')).toMatch(/^[0-9a-f-]{36}$/)
    const now = Math.floor(t.ctx.clock.now() / 1000)
    expect(verifyWebhookSignature(secret, delivery.headers.get('x-ringbase-signature')!, delivery.body, now)).toBe(true)
    const payload = JSON.parse(delivery.body)
    expect(payload).toMatchObject({
      run: String(chat.workflow_run_id),
      who: 'Ada',
      agent: 'After call',
      call_disposition: 'user_hangup',
    })
    expect(payload.transcript).toContain('/api/v1/public/download/workflow/')

    const detail = await run(workflowId, chat.workflow_run_id)
    expect(detail.logs.webhook_deliveries).toEqual([
      expect.objectContaining({
        delivery_id: delivery.headers.get('x-ringbase-delivery-id'),
        node_id: 'hook',
        node_name: 'CRM',
        attempt: 1,
        status_code: 200,
        signed: true,
        outcome: 'delivered',
      }),
    ])
    expect(await createWebhookDispatcher(t.ctx).tick()).toBe(0)
    expect(JSON.stringify(detail)).not.toContain(CREDENTIAL_TOKEN)
    expect(t.logText()).not.toContain(CREDENTIAL_TOKEN)
  })

  test('retried on 503 and network errors with backoff, dead at once on 400, at most 5 attempts', async () => {
    const workflowId = await agent(
      agentWith(
        node('flaky', 'webhook', { name: 'Flaky', endpoint_url: `${receiver.url}/flaky` }),
        node('refusing', 'webhook', { name: 'Refusing', endpoint_url: `${receiver.url}/refusing` }),
        node('down', 'webhook', { name: 'Down', endpoint_url: `${UNREACHABLE_URL}/down` }),
      ),
    )
    receiver.answerWith((path) => (path === '/refusing' ? new Response('no', { status: 400 }) : null))
    receiver.statuses.push(503)
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    const dispatcher = createWebhookDispatcher(t.ctx)
    expect(await dispatcher.tick()).toBe(3)
    expect(await dispatcher.tick()).toBe(0)
    const states = () =>
      Object.fromEntries(
        t.ctx.sqlite
          .query<{ node_id: string; state: string; attempts: number }, [number]>(
            'SELECT node_id, state, attempts FROM webhook_deliveries WHERE run_id = ?',
          )
          .all(chat.workflow_run_id)
          .map((row) => [row.node_id, `${row.state}/${row.attempts}`]),
      )
    expect(states()).toEqual({ flaky: 'pending/1', refusing: 'dead/1', down: 'pending/1' })

    clock.advance(29_000)
    expect(await dispatcher.tick()).toBe(0)
    clock.advance(1000)
    expect(await dispatcher.tick()).toBe(2)
    expect(states()).toEqual({ flaky: 'delivered/2', refusing: 'dead/1', down: 'pending/2' })
    expect(
      receiver.received
        .filter(({ path }) => path === '/flaky')
        .map(({ headers }) => headers.get('x-ringbase-delivery-attempt')),
    ).toEqual(['1', '2'])
    expect(receiver.received.find(({ path }) => path === '/flaky')!.headers.get('x-ringbase-signature')).toBeNull()
    for (const waitSeconds of [60, 120, 240]) {
      clock.advance(waitSeconds * 1000)
      expect(await dispatcher.tick()).toBe(1)
    }
    expect(states().down).toBe('dead/5')
    clock.advance(3_600_000)
    expect(await dispatcher.tick()).toBe(0)

    const attempts = (await run(workflowId, chat.workflow_run_id)).logs.webhook_deliveries as {
      node_id: string
      outcome: string
      error?: string
      status_code: number | null
    }[]
    expect(attempts.filter(({ node_id }) => node_id === 'down').map(({ outcome }) => outcome)).toEqual([
      'retry',
      'retry',
      'retry',
      'retry',
      'dead',
    ])
    expect(attempts.find(({ node_id }) => node_id === 'refusing')).toMatchObject({
      outcome: 'dead',
      status_code: 400,
      error: 'HTTP 400',
    })
    expect(attempts.find(({ node_id }) => node_id === 'down')!.error).toStartWith('Network error')
  })

  test("a last attempt lost with its process is given up once its lease ends, and the run's watchers hear of it", async () => {
    const workflowId = await agent(
      agentWith(node('lost', 'webhook', { name: 'Lost', endpoint_url: `${receiver.url}/lost` })),
    )
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    // as the claim of a fifth attempt leaves it, the process then killed before any outcome was written
    const { organization_id: organizationId } = t.ctx.sqlite
      .query<{ organization_id: number }, [number, number]>(
        'UPDATE webhook_deliveries SET attempts = 5, next_attempt_at = ? WHERE run_id = ? RETURNING organization_id',
      )
      .get(clock.now() + 60_000, chat.workflow_run_id)!
    const heard: number[] = []
    const stopListening = t.ctx.events.subscribe(organizationId, (event) => {
      if (event.kind === 'run') heard.push(event.runId)
    })
    const dispatcher = createWebhookDispatcher(t.ctx)
    try {
      expect(await dispatcher.tick()).toBe(0)
      expect(heard).toEqual([])
      clock.advance(60_000)
      expect(await dispatcher.tick()).toBe(0)
      expect(heard).toEqual([chat.workflow_run_id])
      const listed = await t.request(
        'GET',
        `/api/v1/workflow/${workflowId}/runs/${chat.workflow_run_id}/webhook-deliveries`,
      )
      const [delivery] = listed.body.deliveries
      expect(delivery).toMatchObject({ state: 'dead', attempts: 5, last_error: 'No answer recorded after 5 attempts' })
      expect(receiver.received.filter(({ path }) => path === '/lost')).toEqual([])
    } finally {
      stopListening()
    }
  })

  test("a run's deliveries over the API: state, next attempt and each attempt; another organization's run is a 404", async () => {
    const workflowId = await agent(
      agentWith(
        node('flaky', 'webhook', { name: 'Flaky', endpoint_url: `${receiver.url}/flaky?token=secret-in-query` }),
        node('refusing', 'webhook', { name: 'Refusing', endpoint_url: `${receiver.url}/refusing` }),
      ),
    )
    receiver.answerWith((path) => (path === '/refusing' ? new Response('no', { status: 400 }) : null))
    receiver.statuses.push(503)
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    const path = `/api/v1/workflow/${workflowId}/runs/${chat.workflow_run_id}/webhook-deliveries`
    const queued = await t.request('GET', path)
    expect(queued.status, queued.text).toBe(200)
    expect(
      queued.body.deliveries.map((delivery: any) => [delivery.node_name, delivery.state, delivery.attempts]),
    ).toEqual([
      ['Flaky', 'pending', 0],
      ['Refusing', 'pending', 0],
    ])
    await createWebhookDispatcher(t.ctx).tick()
    const [flaky, refusing] = (await t.request('GET', path)).body.deliveries
    expect(flaky).toMatchObject({
      node_id: 'flaky',
      state: 'pending',
      attempts: 1,
      next_attempt_at: new Date(t.ctx.clock.now() + 30_000).toISOString(),
      last_error: 'HTTP 503',
      attempt_log: [{ attempt: 1, status_code: 503, outcome: 'retry', url: receiver.url, signed: false }],
    })
    expect(flaky.delivery_id).toBe(
      receiver.received.find((request) => request.path === '/flaky')!.headers.get('x-ringbase-delivery-id'),
    )
    expect(refusing).toMatchObject({ state: 'dead', attempts: 1, next_attempt_at: null, last_error: 'HTTP 400' })
    expect(refusing.attempt_log).toEqual([
      expect.objectContaining({ outcome: 'dead', status_code: 400, error: 'HTTP 400' }),
    ])
    expect(JSON.stringify(flaky)).not.toContain('secret-in-query')

    const other = t.newOrg('other')
    expect((await t.request('GET', path, { key: other.key })).status).toBe(404)
    const elsewhere = await t.request(
      'GET',
      `/api/v1/workflow/${workflowId + 1000}/runs/${chat.workflow_run_id}/webhook-deliveries`,
    )
    expect(elsewhere.status).toBe(404)
    expect(elsewhere.body).toEqual({ detail: 'Workflow run not found' })
  })

  test('a chat the process died in is closed at the next start, and its webhook still goes out', async () => {
    const workflowId = await agent(
      agentWith(
        node('hook', 'webhook', {
          name: 'CRM',
          endpoint_url: `${receiver.url}/calls`,
          payload_template: { disposition: '{{gathered_context.call_disposition}}' },
        }),
      ),
    )
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
    t.close({ keepData: true })
    t = createTestApp({ restartOf: t })
    expect(await closeSessionsInterruptedByRestart(t.ctx)).toBe(1)
    expect(await createWebhookDispatcher(t.ctx).tick()).toBe(1)
    expect(JSON.parse(receiver.received[0].body)).toEqual({
      disposition: 'interrupted',
      call_disposition: 'interrupted',
    })
    expect((await run(workflowId, chat.workflow_run_id)).logs.session).toMatchObject({ end_reason: 'system_cancelled' })
  })
})

describe('QA nodes', () => {
  const review = JSON.stringify({ tags: ['goal_achieved'], overall_sentiment: 'positive', score: 9, summary: 'Fine.' })

  test('reviewed per node visited, annotations and QA usage on the run, then the held webhook carries them', async () => {
    const workflowId = await agent(
      agentWith(
        node('qa', 'qa', { name: 'Review', qa_min_call_duration: 10 }),
        node('hook', 'webhook', {
          name: 'CRM',
          endpoint_url: `${receiver.url}/calls`,
          payload_template: { annotations: '{{annotations}}' },
        }),
      ),
    )
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {
      initial_context: { first_name: 'Bo' },
    })
    models.chat.queue(say('Sure.'), say(review))
    clock.advance(12_000)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/messages`, { text: 'Hello' })
    // The run completes first; the delivery waits for the review.
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    expect(t.ctx.sqlite.query('SELECT state FROM webhook_deliveries').all()).toEqual([{ state: 'held' }])
    const detail = await reviewed(workflowId, chat.workflow_run_id)
    expect(detail.annotations.qa_qa).toEqual({
      model: 'fake-llm',
      node_results: {
        start: {
          node_name: 'Start',
          raw_response: review,
          tags: ['goal_achieved'],
          summary: 'Fine.',
          score: 9,
          overall_sentiment: 'positive',
        },
      },
    })
    expect(detail.annotations.tags).toEqual(['goal_achieved'])
    const qaRequest = models.requestsTo('/chat/completions').at(-1)!
    expect(qaRequest.body.messages[0].content).toContain('assistant: Hi Bo.\nuser: Hello\nassistant: Sure.')
    expect(detail.usage_info.llm['QAAnalysis|||fake-llm'].total_tokens).toBeGreaterThan(0)
    expect(detail.usage_info.llm['openai|||fake-llm'].total_tokens).toBeGreaterThan(0)

    expect(await createWebhookDispatcher(t.ctx).tick()).toBe(1)
    expect(JSON.parse(JSON.parse(receiver.received[0].body).annotations).tags).toEqual(['goal_achieved'])
  })

  test("a QA node's own model server is never this server: refused on save", async () => {
    const ownModel = (data: Record<string, unknown>) =>
      agentWith(
        node('qa', 'qa', {
          name: 'Review',
          qa_use_workflow_llm: false,
          qa_model: 'judge',
          qa_min_call_duration: 0,
          ...data,
        }),
      )
    const self = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Self review', workflow_definition: ownModel({ qa_endpoint: 'http://localhost:8000/v1' }) },
    })
    expect(self.status).toBe(422)
    expect(self.body.detail.errors).toEqual([
      {
        kind: 'node',
        id: 'qa',
        field: 'data.qa_endpoint',
        message: expect.stringContaining('this Ringbase server itself'),
      },
    ])
    expect(
      (
        await t.request('POST', '/api/v1/workflow/create/definition', {
          body: { name: 'Own review', workflow_definition: ownModel({ qa_endpoint: 'http://127.0.0.1:8001/v1' }) },
        })
      ).status,
    ).toBe(200)
  })

  test('skip rules: too short, not sampled; a held delivery is released at start-up if the review never finished', async () => {
    const skipped = async (qa: Record<string, unknown>) => {
      const workflowId = await agent(
        agentWith(
          node('qa', 'qa', { name: 'Review', ...qa }),
          node('hook', 'webhook', { name: 'CRM', endpoint_url: `${receiver.url}/calls` }),
        ),
      )
      const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
      await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
      return (await reviewed(workflowId, chat.workflow_run_id)).annotations.qa_qa
    }
    expect(await skipped({})).toEqual({ skipped: true, reason: 'call_too_short' })
    expect(await skipped({ qa_min_call_duration: 0, qa_sample_rate: 0 })).toEqual({
      skipped: true,
      reason: 'not_sampled',
    })
    expect(models.requestsTo('/chat/completions')).toHaveLength(0)
    expect(t.ctx.sqlite.query('SELECT state FROM webhook_deliveries').all()).toEqual([
      { state: 'pending' },
      { state: 'pending' },
    ])

    t.ctx.sqlite.run("UPDATE webhook_deliveries SET state = 'held'")
    releaseHeldDeliveries(t.ctx)
    expect(t.ctx.sqlite.query('SELECT state FROM webhook_deliveries').all()).toEqual([
      { state: 'pending' },
      { state: 'pending' },
    ])
  })
})

describe('pre-call fetch', () => {
  test('its initial_context is merged before the opening; reserved keys are refused; the credential is sent', async () => {
    const credential = (
      await post('/api/v1/credentials', {
        name: 'Lookup',
        credential_type: 'api_key',
        credential_data: { api_key: 'lookup-key-1', header_name: 'X-Lookup' },
      })
    ).uuid
    receiver.answerWith((path) =>
      path === '/lookup'
        ? Response.json({
            call_inbound: {
              initial_context: {
                first_name: 'Zed',
                provider: 'evil',
                greeting_override: { type: 'text', text: 'Welcome back {{first_name}}!' },
              },
            },
          })
        : null,
    )
    const workflowId = await agent({
      nodes: [
        node('start', 'startCall', {
          name: 'Start',
          greeting: 'Hi {{first_name | there}}.',
          prompt: 'Help.',
          pre_call_fetch_enabled: true,
          pre_call_fetch_url: `${receiver.url}/lookup`,
          pre_call_fetch_credential_uuid: credential,
        }),
      ],
      edges: [],
    })
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {
      initial_context: { caller_number: '+14155550100' },
    })
    expect(chat.session_data.turns[0].assistant_message.text).toBe('Welcome back Zed!')
    expect(chat.initial_context).toMatchObject({ first_name: 'Zed', caller_number: '+14155550100' })
    expect(chat.initial_context.provider).toBeUndefined()
    const [request] = receiver.received
    expect(request.headers.get('x-lookup')).toBe('lookup-key-1')
    expect(JSON.parse(request.body)).toEqual({
      event: 'call_inbound',
      call_inbound: { agent_id: workflowId, from_number: '+14155550100', to_number: null },
    })
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    const detail = await run(workflowId, chat.workflow_run_id)
    expect(detail.logs.pre_call_fetch).toMatchObject({
      ok: true,
      status: 200,
      variables: ['first_name', 'greeting_override'],
      refused: ['provider'],
    })
    expect(detail.logs.warnings).toContain('Pre-call fetch: reserved keys refused: provider')
  })

  test('a failing fetch is logged on the run and the conversation goes on', async () => {
    receiver.statuses.push(500)
    const workflowId = await agent({
      nodes: [
        node('start', 'startCall', {
          name: 'Start',
          greeting: 'Hi {{first_name | there}}.',
          prompt: 'Help.',
          pre_call_fetch_enabled: true,
          pre_call_fetch_url: `${receiver.url}/lookup`,
        }),
      ],
      edges: [],
    })
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
    expect(chat.session_data.turns[0].assistant_message.text).toBe('Hi there.')
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`)
    const detail = await run(workflowId, chat.workflow_run_id)
    expect(detail.logs.pre_call_fetch).toEqual({
      url: `${receiver.url}/lookup`,
      ok: false,
      error: 'Pre-call fetch answered HTTP 500',
    })
    expect(detail.logs.warnings).toContain('Pre-call fetch ignored: Pre-call fetch answered HTTP 500')
  })
})

describe("webhook nodes and pre-call fetch under the organization's network rules", () => {
  const receiverPort = () => new URL(receiver.url).port

  /** An app that listens (as far as its config says) where the receiver does: the receiver stands for this server. */
  async function appAtReceiver() {
    const self = createTestApp({ flags: { http: `127.0.0.1:${receiverPort()}` } })
    await setUpModels(self)
    return self
  }

  const deliveries = (app: TestApp, runId: number) =>
    Object.fromEntries(
      app.ctx.sqlite
        .query<{ node_id: string; state: string; attempts: number; last_error: string | null }, [number]>(
          'SELECT node_id, state, attempts, last_error FROM webhook_deliveries WHERE run_id = ?',
        )
        .all(runId)
        .map((row) => [row.node_id, `${row.state}/${row.attempts}: ${row.last_error}`]),
    )

  async function finishedChat(workflowId: number, app = t) {
    const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {}, app)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${chat.workflow_run_id}/end`, {}, app)
    return chat.workflow_run_id as number
  }

  test('a URL naming this server is refused on save; a name resolving to it is refused when sent: dead at once, never retried', async () => {
    const self = await appAtReceiver()
    try {
      const saved = await self.request('POST', '/api/v1/workflow/create/definition', {
        body: {
          name: 'Self',
          workflow_definition: agentWith(
            node('hook', 'webhook', { name: 'Loop', endpoint_url: `${receiver.url}/api/v1/tools` }),
          ),
        },
      })
      expect(saved.status).toBe(422)
      expect(saved.body.detail.errors).toEqual([
        {
          kind: 'node',
          id: 'hook',
          field: 'data.endpoint_url',
          message: expect.stringContaining('this Ringbase server itself'),
        },
      ])
      const viaPublicUrl = await self.request('POST', '/api/v1/workflow/create/definition', {
        body: {
          name: 'Self',
          workflow_definition: agentWith(
            node('hook', 'webhook', { name: 'Loop', endpoint_url: `http://localhost:${receiverPort()}/x` }),
          ),
        },
      })
      expect(viaPublicUrl.status).toBe(422)

      self.ctx.resolveHost = async () => ['198.51.100.7', '127.0.0.1']
      const workflowId = await agent(
        agentWith(
          node('hook', 'webhook', {
            name: 'Loop',
            endpoint_url: `http://hooks.partner.test:${receiverPort()}/api/v1/tools`,
          }),
        ),
        self,
      )
      const runId = await finishedChat(workflowId, self)
      const dispatcher = createWebhookDispatcher(self.ctx)
      expect(await dispatcher.tick()).toBe(1)
      expect(deliveries(self, runId)).toEqual({ hook: 'dead/1: Not sent: This server itself is never called' })
      ;(self.ctx.clock as ReturnType<typeof manualClock>).advance(3_600_000)
      expect(await dispatcher.tick()).toBe(0)
      expect(receiver.received).toEqual([])
      expect((await run(workflowId, runId, self)).logs.webhook_deliveries).toEqual([
        expect.objectContaining({
          node_id: 'hook',
          attempt: 1,
          status_code: null,
          outcome: 'dead',
          error: 'Not sent: This server itself is never called',
        }),
      ])
    } finally {
      self.close()
    }
  })

  test('a draft saved before the server moved to the port its webhook names is refused at publish', async () => {
    const workflowId = await agent(agentWith())
    const draft = await t.request('PUT', `/api/v1/workflow/${workflowId}`, {
      body: {
        workflow_definition: agentWith(
          node('hook', 'webhook', { name: 'Loop', endpoint_url: `${receiver.url}/calls` }),
        ),
      },
    })
    expect(draft.status).toBe(200)
    t.close({ keepData: true })
    t = createTestApp({ restartOf: t, flags: { http: `127.0.0.1:${receiverPort()}` } })
    const published = await t.request('POST', `/api/v1/workflow/${workflowId}/publish`)
    expect(published.status).toBe(422)
    expect(published.body.detail.errors).toEqual([
      {
        kind: 'node',
        id: 'hook',
        field: 'data.endpoint_url',
        message: expect.stringContaining('this Ringbase server itself'),
      },
    ])
  })

  test('the allow-list: a host on it is delivered (to the address checked, the name as Host), one outside it is dead at once', async () => {
    await t.request('PUT', '/api/v1/organizations/tool-settings', { body: { allowed_hosts: ['hooks.partner.test'] } })
    t.ctx.resolveHost = async () => ['127.0.0.1']
    const workflowId = await agent(
      agentWith(
        node('listed', 'webhook', { name: 'Listed', endpoint_url: `http://hooks.partner.test:${receiverPort()}/in` }),
        node('unlisted', 'webhook', { name: 'Unlisted', endpoint_url: `${receiver.url}/out` }),
      ),
    )
    const runId = await finishedChat(workflowId)
    expect(await createWebhookDispatcher(t.ctx).tick()).toBe(2)
    expect(deliveries(t, runId)).toEqual({
      listed: 'delivered/1: null',
      unlisted: `dead/1: Not sent: The host 127.0.0.1:${receiverPort()} is not on this organization's list of allowed hosts`,
    })
    expect(receiver.received.map(({ path, headers }) => [path, headers.get('host')])).toEqual([
      ['/in', `hooks.partner.test:${receiverPort()}`],
    ])
  })

  test('redirects: a 307 within the host is followed with the same body; to another host, or a 302, it is not', async () => {
    const elsewhere = startReceiver()
    try {
      receiver.answerWith(
        (path) =>
          (
            ({
              '/moved': Response.redirect(`${receiver.url}/calls`, 307),
              '/away': Response.redirect(`${elsewhere.url}/steal`, 307),
              '/found': Response.redirect(`${receiver.url}/calls`, 302),
            }) as Record<string, Response>
          )[path] ?? null,
      )
      const workflowId = await agent(
        agentWith(
          node('moved', 'webhook', {
            name: 'Moved',
            endpoint_url: `${receiver.url}/moved`,
            payload_template: { hello: 'world' },
          }),
          node('away', 'webhook', { name: 'Away', endpoint_url: `${receiver.url}/away` }),
          node('found', 'webhook', { name: 'Found', endpoint_url: `${receiver.url}/found` }),
        ),
      )
      const runId = await finishedChat(workflowId)
      expect(await createWebhookDispatcher(t.ctx).tick()).toBe(3)
      expect(deliveries(t, runId)).toEqual({
        moved: 'delivered/1: null',
        away: `dead/1: Not sent: The service redirected to another host (${new URL(elsewhere.url).host}); only redirects within ${new URL(receiver.url).host} are followed`,
        found: 'dead/1: HTTP 302',
      })
      const followed = receiver.received.filter(({ path }) => path === '/calls')
      expect(followed).toHaveLength(1)
      expect(followed[0].method).toBe('POST')
      expect(JSON.parse(followed[0].body)).toMatchObject({ hello: 'world' })
      expect(elsewhere.received).toEqual([])
    } finally {
      elsewhere.stop()
    }
  })

  const fetchingAgent = (url: string) => ({
    nodes: [
      node('start', 'startCall', {
        name: 'Start',
        greeting: 'Hi {{first_name | there}}.',
        prompt: 'Help.',
        pre_call_fetch_enabled: true,
        pre_call_fetch_url: url,
      }),
    ],
    edges: [],
  })

  test('pre-call fetch: naming this server is refused on save; a name resolving to it is not sent, and the call goes on without it', async () => {
    const self = await appAtReceiver()
    try {
      const saved = await self.request('POST', '/api/v1/workflow/create/definition', {
        body: { name: 'Self', workflow_definition: fetchingAgent(`${receiver.url}/lookup`) },
      })
      expect(saved.status).toBe(422)
      expect(saved.body.detail.errors).toEqual([
        {
          kind: 'node',
          id: 'start',
          field: 'data.pre_call_fetch_url',
          message: expect.stringContaining('this Ringbase server itself'),
        },
      ])

      self.ctx.resolveHost = async () => ['127.0.0.1']
      const url = `http://crm.partner.test:${receiverPort()}/lookup`
      const workflowId = await agent(fetchingAgent(url), self)
      const chat = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {}, self)
      expect(chat.session_data.turns[0].assistant_message.text).toBe('Hi there.')
      expect(receiver.received).toEqual([])
      const detail = await run(workflowId, chat.workflow_run_id, self)
      expect(detail.logs.pre_call_fetch).toEqual({
        url,
        ok: false,
        error: 'not sent: This server itself is never called',
      })
      expect(detail.logs.warnings).toContain('Pre-call fetch ignored: not sent: This server itself is never called')
    } finally {
      self.close()
    }
  })

  test('pre-call fetch: a redirect to another host is not followed, and the allow-list applies', async () => {
    const elsewhere = startReceiver()
    try {
      receiver.answerWith((path) => (path === '/lookup' ? Response.redirect(`${elsewhere.url}/lookup`, 307) : null))
      const workflowId = await agent(fetchingAgent(`${receiver.url}/lookup`))
      const redirected = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
      expect(redirected.session_data.turns[0].assistant_message.text).toBe('Hi there.')
      expect(elsewhere.received).toEqual([])
      expect((await run(workflowId, redirected.workflow_run_id)).logs.pre_call_fetch.error).toBe(
        `not sent: The service redirected to another host (${new URL(elsewhere.url).host}); only redirects within ${new URL(receiver.url).host} are followed`,
      )

      await t.request('PUT', '/api/v1/organizations/tool-settings', { body: { allowed_hosts: ['crm.example.com'] } })
      const unlisted = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`)
      expect((await run(workflowId, unlisted.workflow_run_id)).logs.pre_call_fetch.error).toBe(
        `not sent: The host ${new URL(receiver.url).host} is not on this organization's list of allowed hosts`,
      )
      expect(receiver.received).toHaveLength(1)
    } finally {
      elsewhere.stop()
    }
  })
})
