import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition } from '../support/agents'
import { createRun, finishRun, markRunRunning, updateRun } from '../../src/runs/service'
import { applyTransition } from '../../src/campaigns/state-machine'
import type { AgentDefinition } from '../../src/definition/definition'
import { createWebhookDispatcher, enqueueWebhookDeliveries } from '../../src/runs/webhook-outbox'
import { createAgent as createCampaignAgent, createAriConfiguration, csvOf, uploadCsv } from '../support/campaigns'

// GET /api/v1/events: the organization's calls in progress, then run and campaign changes, as server-sent events.

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

type Received = { event: string; data: any }

/** Opens the stream and reads its messages as they come; `next` waits for the next one matching. */
async function openStream(key: string) {
  const response = await t.app.handle(
    new Request('http://localhost/api/v1/events', { headers: { 'x-api-key': key, accept: 'text/event-stream' } }),
  )
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toStartWith('text/event-stream')
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const received: Received[] = []
  const readOne = async (): Promise<Received> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const event = block.match(/^event: (.*)$/m)?.[1]
        const data = block.match(/^data: (.*)$/m)?.[1]
        if (event && data) return { event, data: JSON.parse(data) }
        continue
      }
      const { value, done } = await reader.read()
      if (done) throw new Error('stream ended')
      buffer += decoder.decode(value, { stream: true })
    }
  }
  return {
    received,
    next: async (matching: (message: Received) => boolean = () => true) => {
      for (;;) {
        const message = await readOne()
        received.push(message)
        if (matching(message)) return message
      }
    },
    close: () => reader.cancel(),
  }
}

async function agentAndRun(key?: string) {
  const agent = await createAgent(t, 'Hostile <b>name</b>', key)
  return agent as { id: number; current_definition_id: number }
}

const newCall = (organizationId: number, agent: { id: number; current_definition_id: number }, callId: string) =>
  createRun(t.ctx, {
    organizationId,
    agentId: agent.id,
    definitionId: agent.current_definition_id,
    name: `WR-${callId}`,
    mode: 'ari',
    callType: 'outbound',
    callId,
    initialContext: { called_number: '+14155550100' },
  })

describe('the events stream', () => {
  test('without Accept: text/event-stream it answers 406 {detail} at once; without a key 401', async () => {
    const plain = await t.request('GET', '/api/v1/events')
    expect(plain.status).toBe(406)
    expect(plain.body).toEqual({ detail: expect.stringContaining('text/event-stream') })
    expect(
      (await t.request('GET', '/api/v1/events', { key: null, headers: { accept: 'text/event-stream' } })).status,
    ).toBe(401)
  })

  test('starts with the calls in progress, then follows a call from dialling to its end, with its current node', async () => {
    const agent = await agentAndRun()
    const earlier = newCall(1, agent, 'call-earlier')
    const stream = await openStream(t.adminKey)
    const snapshot = await stream.next()
    expect(snapshot.event).toBe('snapshot')
    expect(snapshot.data.calls.map((run: { id: number }) => run.id)).toEqual([earlier.id])
    expect(snapshot.data.calls[0]).toMatchObject({
      workflow_name: 'Hostile <b>name</b>',
      state: 'initialized',
      call_type: 'outbound',
      called_number: '+14155550100',
    })

    const run = newCall(1, agent, 'call-live')
    expect((await stream.next()).data).toMatchObject({ id: run.id, state: 'initialized' })
    markRunRunning(t.ctx, run.id)
    expect((await stream.next()).data).toMatchObject({ id: run.id, state: 'running' })
    updateRun(t.ctx, run.id, { logs: { session: { current_node_id: 'collect-details' } } })
    expect((await stream.next()).data).toMatchObject({ id: run.id, current_node_id: 'collect-details' })
    finishRun(t.ctx, run.id, { durationSeconds: 12, disposition: 'completed' })
    expect((await stream.next()).data).toMatchObject({
      id: run.id,
      state: 'completed',
      disposition: 'completed',
      call_duration_seconds: 12,
    })
    await stream.close()
  })

  test("another organization's changes never reach the stream", async () => {
    const other = t.newOrg('other')
    const otherAgent = await agentAndRun(other.key)
    const agent = await agentAndRun()
    const stream = await openStream(t.adminKey)
    await stream.next()
    newCall(other.organizationId, otherAgent, 'call-other')
    const mine = newCall(1, agent, 'call-mine')
    const message = await stream.next()
    expect(message.data.id).toBe(mine.id)
    expect(stream.received.filter((item) => item.event === 'run').map((item) => item.data.id)).toEqual([mine.id])
    await stream.close()
  })

  test("a webhook delivery's attempt is a change of its run: told to the run's organization, never another's", async () => {
    const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
    try {
      const start = sampleDefinition({ triggerPath: null })
      const webhook = { name: 'CRM', endpoint_url: `http://127.0.0.1:${receiver.port}/calls` }
      const definition = {
        ...start,
        nodes: [...start.nodes, { id: 'crm', type: 'webhook', position: { x: 0, y: 0 }, data: webhook }],
      }
      const agent = await createAgent(t, 'Hooked', undefined, definition)
      const run = newCall(1, agent, 'call-hooked')
      finishRun(t.ctx, run.id, { durationSeconds: 5, disposition: 'completed' })
      enqueueWebhookDeliveries(t.ctx, { id: run.id, organizationId: 1 }, definition as AgentDefinition, false)
      const other = t.newOrg('other')
      const otherAgent = await agentAndRun(other.key)
      const stream = await openStream(t.adminKey)
      const otherStream = await openStream(other.key)
      await stream.next()
      await otherStream.next()
      expect(await createWebhookDispatcher(t.ctx).tick()).toBe(1)
      expect(await stream.next()).toMatchObject({ event: 'run', data: { id: run.id, state: 'completed' } })
      // the other organization's next message is its own run's: the attempt's came before it, or never
      const otherRun = newCall(other.organizationId, otherAgent, 'call-other')
      expect(await otherStream.next()).toMatchObject({ event: 'run', data: { id: otherRun.id } })
      await stream.close()
      await otherStream.close()
    } finally {
      receiver.stop(true)
    }
  })

  test('campaign changes reach admin keys; a trigger key follows runs only', async () => {
    await createAriConfiguration(t)
    const agent = await agentAndRun()
    const campaignAgent = await createCampaignAgent(t)
    const fileKey = await uploadCsv(t, csvOf(['phone_number'], [['+14155550100']]))
    const campaign = await t.request('POST', '/api/v1/campaign/create', {
      body: { name: 'C', source_type: 'csv', source_id: fileKey, workflow_id: campaignAgent },
    })
    expect(campaign.text).toContain('"state":"draft"')
    const admin = await openStream(t.adminKey)
    const trigger = await openStream(t.newOrg('default', 'trigger').key)
    await admin.next()
    await trigger.next()
    expect(applyTransition(t.ctx, campaign.body.id, 'start')).toBe('draft')
    expect(await admin.next()).toMatchObject({ event: 'campaign', data: { id: campaign.body.id, state: 'running' } })
    const run = newCall(1, agent, 'call-after-campaign')
    expect(await trigger.next()).toMatchObject({ event: 'run', data: { id: run.id } })
    expect(trigger.received.map((item) => item.event)).toEqual(['snapshot', 'run'])
    await admin.close()
    await trigger.close()
  })

  test('a closed stream stops listening', async () => {
    const stream = await openStream(t.adminKey)
    await stream.next()
    expect(t.ctx.events.hasListeners()).toBe(true)
    await stream.close()
    expect(t.ctx.events.hasListeners()).toBe(false)
  })
})
