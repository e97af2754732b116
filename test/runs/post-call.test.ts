import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import type { AgentDefinition, AgentNode } from '../../src/definition/definition'
import { readPreCallFetchAnswer, preCallFetchBody, preCallFetchUrl } from '../../src/runs/pre-call-fetch'
import { qaMetrics, qaSkipReason, reviewCall } from '../../src/runs/qa'
import type { TranscriptTurn } from '../../src/conversation/record'
import {
  buildWebhookRequest,
  classifyDelivery,
  retryDelaySeconds,
  signWebhook,
  webhookTemplateContext,
} from '../../src/runs/webhook'
import { ScriptedLlm } from '../support/scripted-llm'
import { verifyWebhookSignature } from '../support/webhook-signature'

const node = (id: string, type: string, data: Record<string, unknown>): AgentNode => ({ id, type, data })

describe('webhook deliveries', () => {
  const context = webhookTemplateContext({
    runId: 42,
    runName: 'WR-42',
    agentId: 7,
    agentName: 'Sales',
    campaignId: null,
    callTime: '2026-03-02T09:30:00.000Z',
    initialContext: { first_name: 'Dana' },
    gatheredContext: { call_disposition: 'demo_booked', budget: 1500 },
    annotations: {},
    usageInfo: { call_duration_seconds: 61 },
    costInfo: {},
    recordingUrl: null,
    transcriptUrl: 'http://localhost/t/42.txt',
  })
  const webhook = (data: Record<string, unknown>) =>
    node('8', 'webhook', { endpoint_url: 'https://hooks.example/calls', ...data })
  const delivery = (data: Record<string, unknown>) =>
    buildWebhookRequest({
      node: webhook(data),
      context,
      deliveryId: 'd-1',
      runId: 42,
      attempt: 2,
      signingSecret: 'whsec_test',
      credential: { uuid: 'c-1', name: 'CRM', credential_type: 'bearer_token', credential_data: { token: 'abc' } },
      now: new Date('2026-03-02T10:00:00.000Z'),
    })

  test('the payload is rendered, gets the disposition, is signed verifiably and carries the delivery headers', () => {
    const request = delivery({
      payload_template: {
        run: '{{workflow_run_id}}',
        who: 'Hi {{initial_context.first_name}}',
        nested: ['{{gathered_context.budget}}', 3],
      },
      custom_headers: [
        { key: 'X-Team', value: 'sales' },
        { key: 'X-Api-Key', value: 'leak' },
        { key: 'Authorization', value: 'leak' },
      ],
    })
    expect(request.method).toBe('POST')
    expect(JSON.parse(request.body!)).toEqual({
      run: '42',
      who: 'Hi Dana',
      nested: ['1500', 3],
      call_disposition: 'demo_booked',
    })
    expect(request.headers).toMatchObject({
      'Content-Type': 'application/json',
      'X-Team': 'sales',
      Authorization: 'Bearer abc',
      'X-Ringbase-Delivery-Id': 'd-1',
      'X-Ringbase-Run-Id': '42',
      'X-Ringbase-Delivery-Attempt': '2',
    })
    expect(request.headers['X-Api-Key']).toBeUndefined()

    const unix = Date.parse('2026-03-02T10:00:00.000Z') / 1000
    const signature = request.headers['X-Ringbase-Signature']
    const expected = createHmac('sha256', 'whsec_test').update(`${unix}.${request.body}`).digest('hex')
    expect(signature).toBe(`t=${unix},v1=${expected}`)
    expect(verifyWebhookSignature('whsec_test', signature, request.body!, unix + 10)).toBe(true)
    expect(verifyWebhookSignature('whsec_test', signature, `${request.body} `, unix)).toBe(false)
    expect(verifyWebhookSignature('other', signature, request.body!, unix)).toBe(false)
    expect(verifyWebhookSignature('whsec_test', signature, request.body!, unix + 3600)).toBe(false)
    expect(verifyWebhookSignature('whsec_test', 'garbage', request.body!, unix)).toBe(false)
  })

  test('GET sends no body; the signature covers the empty body', () => {
    const request = delivery({ http_method: 'GET', payload_template: { a: 1 } })
    expect(request.body).toBeNull()
    expect(request.headers['Content-Type']).toBeUndefined()
    expect(signWebhook('whsec_test', '', 1772445600)).toBe(request.headers['X-Ringbase-Signature'])
  })

  test('retry classes and backoff', () => {
    expect(classifyDelivery({ status: 204 }, 1)).toEqual({ kind: 'delivered' })
    for (const status of [408, 425, 429, 500, 502, 503, 504]) expect(classifyDelivery({ status }, 1).kind).toBe('retry')
    for (const status of [400, 401, 404, 410, 501]) expect(classifyDelivery({ status }, 1).kind).toBe('dead')
    expect(classifyDelivery({ networkError: 'ECONNREFUSED' }, 3)).toEqual({
      kind: 'retry',
      delayMs: 120_000,
      reason: 'Network error: ECONNREFUSED',
    })
    expect(classifyDelivery({ status: 503 }, 5)).toEqual({ kind: 'dead', reason: 'HTTP 503 after 5 attempts' })
    expect([1, 2, 3, 4, 5, 6].map(retryDelaySeconds)).toEqual([30, 60, 120, 240, 480, 600])
  })
})

describe('QA', () => {
  const qa = (data: Record<string, unknown> = {}) => node('7', 'qa', { qa_enabled: true, ...data })
  const long = { durationSeconds: 60, endReason: 'user_hangup' }

  test('skip rules: disabled, too short, voicemail unless opted in, sampling', () => {
    expect(qaSkipReason(qa(), long, () => 0.5)).toBeNull()
    expect(qaSkipReason(qa({ qa_enabled: false }), long, () => 0)).toBe('disabled')
    expect(qaSkipReason(qa(), { ...long, durationSeconds: 14 }, () => 0)).toBe('call_too_short')
    expect(qaSkipReason(qa({ qa_min_call_duration: 5 }), { ...long, durationSeconds: 14 }, () => 0)).toBeNull()
    expect(qaSkipReason(qa(), { ...long, endReason: 'voicemail_detected' }, () => 0)).toBe('voicemail')
    expect(
      qaSkipReason(qa({ qa_voicemail_calls: true }), { ...long, endReason: 'voicemail_detected' }, () => 0),
    ).toBeNull()
    expect(qaSkipReason(qa({ qa_sample_rate: 30 }), long, () => 0.3)).toBe('not_sampled')
    expect(qaSkipReason(qa({ qa_sample_rate: 30 }), long, () => 0.29)).toBeNull()
  })

  const turn = (role: 'user' | 'agent', text: string, start: number, end: number, nodeId: string): TranscriptTurn => ({
    role,
    text,
    start_ms: start,
    end_ms: end,
    node_id: nodeId,
    interrupted: false,
  })
  const transcript = [
    turn('agent', 'Hello!', 0, 1000, '1'),
    turn('user', 'Hi, I want a demo', 2000, 3000, '1'),
    turn('agent', 'Your name?', 4500, 5000, '2'),
    turn('user', 'Dana', 6000, 6500, '2'),
    turn('agent', 'Thanks Dana', 7000, 8000, '2'),
  ]
  const definition: AgentDefinition = {
    nodes: [
      node('1', 'startCall', { name: 'Start', prompt: 'Greet.' }),
      node('2', 'agentNode', { name: 'Qualify', prompt: 'Ask the name.' }),
      qa(),
    ],
    edges: [],
  }

  test('metrics: turns, latency from the caller to the agent, TTFB', () => {
    expect(qaMetrics(transcript.slice(2), [0.4, 0.6])).toEqual({
      num_turns: 3,
      avg_latency_seconds: 0.5,
      max_latency_seconds: 0.5,
      avg_ttfb_seconds: 0.5,
    })
  })

  test('one review per node with its transcript; a bad answer is retried; tags are united', async () => {
    const llm = new ScriptedLlm(
      [],
      [
        JSON.stringify({ tags: ['goal_achieved'], overall_sentiment: 'positive', score: 8, summary: 'Fine start.' }),
        'oops',
        JSON.stringify({
          tags: ['goal_achieved', 'follow_up_needed'],
          overall_sentiment: 'neutral',
          score: 6,
          summary: 'Got the name.',
        }),
      ],
    )
    const usages: string[] = []
    const events = [{ type: 'rtf-ttfb-metric', payload: { ttfb_seconds: 0.5 }, timestamp: '', node_id: '2' }]
    const result = await reviewCall(
      llm,
      qa(),
      definition,
      { logs: { transcript, realtime_feedback_events: events, warnings: [] } },
      (ref) => usages.push(`${ref.service}|||${ref.model}`),
    )
    expect(result.key).toBe('qa_7')
    expect(result.tags).toEqual(['goal_achieved', 'follow_up_needed'])
    expect(result.annotation.model).toBe('scripted-1')
    expect(result.annotation.node_results['1']).toMatchObject({
      node_name: 'Start',
      score: 8,
      overall_sentiment: 'positive',
      summary: 'Fine start.',
    })
    expect(result.annotation.node_results['2']).toMatchObject({
      node_name: 'Qualify',
      score: 6,
      tags: ['goal_achieved', 'follow_up_needed'],
    })
    expect(usages).toEqual(['QAAnalysis|||scripted-1', 'QAAnalysis|||scripted-1', 'QAAnalysis|||scripted-1'])
    const secondPrompt = llm.jsonRequests[1].messages[0].content
    expect(secondPrompt).toContain('Ask the name.')
    expect(secondPrompt).toContain('assistant: Your name?\nuser: Dana\nassistant: Thanks Dana')
    expect(secondPrompt).toContain('user: Hi, I want a demo') // the earlier step, as context
    expect(secondPrompt).toContain('"avg_ttfb_seconds":0.5')
  })

  test('a custom prompt without {{transcript}} still gets the transcript; three failures give an error result', async () => {
    const llm = new ScriptedLlm([], ['x', 'y', 'z'])
    const result = await reviewCall(
      llm,
      qa({ qa_system_prompt: 'Was the agent polite?' }),
      definition,
      { logs: { transcript: transcript.slice(0, 2), realtime_feedback_events: [], warnings: [] } },
      () => {},
    )
    expect(llm.jsonRequests[0].messages[0].content).toBe(
      'Was the agent polite?\n\nTranscript:\nassistant: Hello!\nuser: Hi, I want a demo',
    )
    expect(llm.jsonRequests).toHaveLength(3)
    expect(result.annotation.node_results['1']).toMatchObject({
      raw_response: 'z',
      score: null,
      error: expect.any(String),
    })
  })
})

describe('pre-call fetch', () => {
  test('asked only when enabled with a URL; the body names the call', () => {
    expect(
      preCallFetchUrl(
        node('1', 'startCall', { pre_call_fetch_enabled: true, pre_call_fetch_url: 'https://crm.example/lookup' }),
      ),
    ).toBe('https://crm.example/lookup')
    expect(preCallFetchUrl(node('1', 'startCall', { pre_call_fetch_url: 'https://crm.example/lookup' }))).toBeNull()
    expect(JSON.parse(preCallFetchBody({ agentId: 7, fromNumber: '+15550001', toNumber: '+15550002' }))).toEqual({
      event: 'call_inbound',
      call_inbound: { agent_id: 7, from_number: '+15550001', to_number: '+15550002' },
    })
  })

  const answered = (status: number, text: string, truncated = false) =>
    readPreCallFetchAnswer({ status, text, truncated })

  test('variables from initial_context, dynamic_variables or under call_inbound; reserved keys refused', () => {
    expect(
      answered(
        200,
        JSON.stringify({
          initial_context: { tier: 'gold', provider: 'x', greeting_override: { type: 'text', text: 'Hi VIP' } },
        }),
      ),
    ).toEqual({
      ok: true,
      variables: { tier: 'gold', greeting_override: { type: 'text', text: 'Hi VIP' } },
      refused: ['provider'],
    })
    expect(answered(200, JSON.stringify({ call_inbound: { dynamic_variables: { tier: 'silver' } } }))).toEqual({
      ok: true,
      variables: { tier: 'silver' },
      refused: [],
    })
    expect(answered(200, '{}')).toEqual({ ok: true, variables: {}, refused: [] })
    expect(answered(500, '{}')).toEqual({ ok: false, error: 'Pre-call fetch answered HTTP 500' })
    expect(answered(200, 'nope').ok).toBe(false)
    expect(answered(200, '[1]').ok).toBe(false)
    expect(answered(200, '{"initial_context": {"a": "', true)).toEqual({
      ok: false,
      error: 'Pre-call fetch answer is larger than 64 KB',
    })
  })
})
