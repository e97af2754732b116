import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openRunSession, RunSessionError } from '../../src/runs/run-session'
import { closeSessionsInterruptedByRestart } from '../../src/runs/session-recovery'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, seedRun } from '../support/agents'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'

/**
 * The run session on its own (text chat and voice drive it the same way): it resolves the run's models, writes the
 * run as the conversation goes, and completes it once with usage, cost and the transcript file.
 */

let t: TestApp
let models: FakeModels
let agent: { id: number; current_definition_id: number }

const definition = {
  nodes: [
    {
      id: 's',
      type: 'startCall',
      position: { x: 0, y: 0 },
      data: { name: 'Start', greeting: 'Hello {{first_name}}!', prompt: 'Help {{first_name}}.' },
    },
    { id: 'e', type: 'endCall', position: { x: 0, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
  ],
  edges: [{ id: 's-e', source: 's', target: 'e', data: { label: 'Done', condition: 'The caller is done' } }],
}

beforeAll(async () => {
  t = createTestApp()
  models = startFakeModels()
  const connection = (
    await t.request('POST', '/api/v1/organizations/provider-connections', {
      body: { name: 'Fake', provider: 'openai', base_url: models.baseUrl, api_key: 'sk-session-secret' },
    })
  ).body
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: 'Fake',
      llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      stt: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-stt' } },
      tts: { builtin: true },
    },
  })
  expect(configuration.status).toBe(200)
  await t.request('PUT', '/api/v1/organizations/price-card', {
    body: { llm_input_per_1k_tokens: 1, llm_output_per_1k_tokens: 2, stt_per_minute: 0.6, tts_per_1k_characters: 10 },
  })
  agent = await createAgent(t, 'Session agent', undefined, definition)
})
afterAll(() => {
  models.stop()
  t.close()
})

const run = (mode: string) =>
  seedRun(t, { organizationId: 1, agent, mode, callType: 'inbound', initialContext: { first_name: 'Ada' } })
const stored = (id: number) =>
  t.ctx.db.query.workflowRuns.findFirst({ where: (runs, { eq }) => eq(runs.id, id) }).sync()!

describe('a run session', () => {
  test('chat: persists as it goes, completes once with usage, cost, warnings and the transcript file', async () => {
    const { id } = run('textchat')
    const session = await openRunSession(t.ctx, id, { channel: 'chat' })
    expect(session.clients.stt).toBeNull()
    expect(stored(id).initialContext.runtime_configuration).toMatchObject({
      llm_provider: 'openai',
      llm_model: 'fake-llm',
    })

    expect((await session.conversation.start()).map((turn) => turn.text)).toEqual(['Hello Ada!'])
    expect(stored(id).state).toBe('running')
    models.chat.queue(say('Happy to help.', { usage: { prompt_tokens: 1000, completion_tokens: 500 } }))
    await session.conversation.userMessage('I need help')
    const midway = stored(id)
    expect(midway.logs.transcript).toMatchObject([
      { role: 'agent', text: 'Hello Ada!' },
      { role: 'user', text: 'I need help' },
      { role: 'agent', text: 'Happy to help.' },
    ])
    expect(midway.gatheredContext.nodes_visited).toEqual(['Start'])
    expect(midway.usageInfo).toBeNull()

    await session.finish('user_hangup')
    await session.finish('user_hangup')
    const done = stored(id)
    expect(done.state).toBe('completed')
    expect(done.gatheredContext).toMatchObject({
      call_disposition: 'user_hangup',
      mapped_call_disposition: 'user_hangup',
    })
    expect(done.usageInfo).toMatchObject({
      llm: { 'openai|||fake-llm': { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } },
      stt: {},
      tts: {},
    })
    expect(done.costInfo).toMatchObject({ currency: 'USD', llm: 2, total: 2, telephony: 0 })
    expect(done.logs.session).toMatchObject({ channel: 'chat', end_reason: 'user_hangup' })
    expect(done.transcriptKey).toBe(`transcripts/1/${id}.txt`)
    const file = await (await t.ctx.objects.get(done.transcriptKey!))!.text()
    expect(file).toMatch(
      /^\[2026-01-05T10:00:00\.000Z\] assistant: Hello Ada!\n\[.*\] user: I need help\n\[.*\] assistant: Happy to help\.\n$/,
    )
    expect(JSON.stringify(done)).not.toContain('sk-session-secret')
  })

  test('voice: speech clients (the built-in voice when no TTS server), usage reported by the channel', async () => {
    const { id } = run('ari')
    const session = await openRunSession(t.ctx, id, { channel: 'voice' })
    expect(session.clients.stt!.ref).toEqual({ service: 'openai', model: 'fake-stt' })
    expect(session.clients.tts!.ref).toEqual({ service: 'builtin', model: 'flite' })
    await session.conversation.start()
    session.reportSttSeconds(session.clients.stt!.ref, 30)
    session.reportTtsCharacters(session.clients.tts!.ref, 100)
    session.reportTtsCharacters(session.clients.tts!.ref, 50)
    await session.finish('user_hangup')
    const done = stored(id)
    expect(done.usageInfo).toMatchObject({ stt: { 'openai|||fake-stt': 30 }, tts: { 'builtin|||flite': 150 } })
    expect(done.costInfo).toMatchObject({ stt: 0.3, tts: 1.5 })
  })

  test('a run whose models cannot be resolved is completed with pipeline_error and refused', async () => {
    const org = t.newOrg('no-models')
    const bare = await createAgent(t, 'No models', org.key, definition)
    const { id } = seedRun(t, {
      organizationId: org.organizationId,
      agent: bare,
      mode: 'textchat',
      callType: 'inbound',
    })
    await expect(openRunSession(t.ctx, id, { channel: 'chat' })).rejects.toBeInstanceOf(RunSessionError)
    expect(stored(id)).toMatchObject({ state: 'completed', gatheredContext: { call_disposition: 'pipeline_error' } })
    await expect(openRunSession(t.ctx, id, { channel: 'chat' })).rejects.toThrow('already completed')
  })

  test('a session the process died in is closed at boot, transcript kept', async () => {
    const { id } = run('textchat')
    const session = await openRunSession(t.ctx, id, { channel: 'chat' })
    await session.conversation.start()
    expect(await closeSessionsInterruptedByRestart(t.ctx)).toBe(1)
    const closed = stored(id)
    expect(closed.state).toBe('completed')
    expect(closed.gatheredContext.mapped_call_disposition).toBe('interrupted')
    expect(closed.logs.session).toMatchObject({ channel: 'chat', end_reason: 'system_cancelled' })
    expect(await (await t.ctx.objects.get(closed.transcriptKey!))!.text()).toContain('assistant: Hello Ada!')
    expect(await closeSessionsInterruptedByRestart(t.ctx)).toBe(0)
  })
})
