import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { missingModels, resolveRunModels, runtimeConfiguration } from '../../src/models/resolve'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent as createAgentBody, sampleDefinition } from '../support/agents'
import { createAriConfiguration, csvOf, manualScheduler, scriptedTelephony, uploadCsv } from '../support/campaigns'

/**
 * Run model_overrides: every uuid they name must be the organization's (422 naming the field, at trigger time and at
 * campaign creation), a campaign's overrides go with each call it places, and resolution layers them over the agent's
 * configuration over the organization default.
 */

const CONNECTIONS = '/api/v1/organizations/provider-connections'
const CONFIGURATIONS = '/api/v1/organizations/model-configurations'

let t: TestApp
let other: { organizationId: number; key: string }
let mine: { llm: string; backup: string; config: string; second: string }
let foreign: { connection: string; config: string }

async function post(path: string, body: unknown, key = t.adminKey) {
  const response = await t.request('POST', path, { key, body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

beforeAll(async () => {
  t = createTestApp()
  other = t.newOrg('overrides-other')
  const llm = (
    await post(CONNECTIONS, {
      name: 'vLLM',
      provider: 'openai',
      base_url: 'http://127.0.0.1:9/v1',
      api_key: 'sk-main-key-1234',
    })
  ).uuid
  const backup = (
    await post(CONNECTIONS, { name: 'Ollama', provider: 'openai', base_url: 'http://127.0.0.1:9/ollama/v1' })
  ).uuid
  const speech = (
    await post(CONNECTIONS, { name: 'speaches', provider: 'speaches', base_url: 'http://127.0.0.1:9/speech/v1' })
  ).uuid
  const config = (
    await post(CONFIGURATIONS, {
      name: 'Default',
      llm: { provider_connection_uuid: llm, settings: { model: 'qwen3', temperature: 0.2 } },
      stt: { provider_connection_uuid: speech },
      tts: { provider_connection_uuid: speech, settings: { voice: 'af_sky' } },
    })
  ).uuid
  const second = (
    await post(CONFIGURATIONS, {
      name: 'Small',
      llm: { provider_connection_uuid: backup, settings: { model: 'llama3.2:3b' } },
    })
  ).uuid
  mine = { llm, backup, config, second }
  const foreignConnection = (
    await post(CONNECTIONS, { name: 'Theirs', provider: 'openai', base_url: 'http://127.0.0.1:9/v1' }, other.key)
  ).uuid
  foreign = {
    connection: foreignConnection,
    config: (
      await post(CONFIGURATIONS, { name: 'Theirs', llm: { provider_connection_uuid: foreignConnection } }, other.key)
    ).uuid,
  }
})
afterAll(() => t.close())

const badOverrides = () => ({
  model_configuration_uuid: foreign.config,
  llm: { provider_connection_uuid: foreign.connection },
  tts: { provider_connection_uuid: crypto.randomUUID() },
  llm_fallback: {
    rules: [
      { condition: { type: 'no_output', after_ms: 800 }, target: { provider_connection_uuid: foreign.connection } },
      { condition: { type: 'error' }, target: { provider_connection_uuid: mine.backup } },
    ],
  },
})

const EXPECTED_LOCS = (root: string[]) => [
  [...root, 'model_configuration_uuid'],
  [...root, 'llm', 'provider_connection_uuid'],
  [...root, 'tts', 'provider_connection_uuid'],
  [...root, 'llm_fallback', 'rules', 0, 'target', 'provider_connection_uuid'],
  [...root, 'llm_fallback', 'rules', 1, 'condition', 'type'],
]

describe('unknown or foreign uuids are a 422 naming each field', () => {
  test('at trigger time, before anything is dialled or written', async () => {
    const agent = await createAgentBody(t, 'Caller')
    const response = await t.request('POST', `/api/v1/public/agent/workflow/${agent.workflow_uuid}`, {
      body: { phone_number: '+14155550100', model_overrides: badOverrides() },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail.map((item: { loc: unknown[] }) => item.loc)).toEqual(
      EXPECTED_LOCS(['body', 'model_overrides']),
    )
    expect(response.body.detail[0].msg).toContain('does not exist in this organization')
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual({ n: 0 })
  })

  test('at campaign creation, before the contacts are read', async () => {
    const workflowId = (await createAgentBody(t, 'Campaigner', undefined, sampleDefinition({ triggerPath: null }))).id
    const response = await t.request('POST', '/api/v1/campaign/create', {
      body: {
        name: 'Spring',
        source_type: 'csv',
        source_id: 'missing.csv',
        workflow_id: workflowId,
        model_overrides: badOverrides(),
      },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail.map((item: { loc: unknown[] }) => item.loc)).toEqual(
      EXPECTED_LOCS(['body', 'model_overrides']),
    )
  })
})

test("a campaign's overrides are shown and go with every call it places", async () => {
  const org = t.newOrg('overrides-campaign')
  const connection = (
    await post(CONNECTIONS, { name: 'LLM', provider: 'openai', base_url: 'http://127.0.0.1:9/v1' }, org.key)
  ).uuid
  const overrides = {
    llm: { provider_connection_uuid: connection, settings: { model: 'qwen3:8b' } },
    stt: { provider_connection_uuid: connection, settings: { model: 'whisper-1' } },
  }
  await createAriConfiguration(t, { key: org.key })
  const telephony = scriptedTelephony(t, () => 'completed')
  const workflowId = (
    await createAgentBody(t, 'Dialer', org.key, sampleDefinition({ triggerPath: null, prompt: 'Greet the caller.' }))
  ).id
  const sourceId = await uploadCsv(t, csvOf(['phone_number'], [['+14155550101'], ['+14155550102']]), { key: org.key })
  const campaign = await post(
    '/api/v1/campaign/create',
    { name: 'Overrides', source_type: 'csv', source_id: sourceId, workflow_id: workflowId, model_overrides: overrides },
    org.key,
  )
  expect(campaign.model_overrides).toEqual(overrides)
  await post(`/api/v1/campaign/${campaign.id}/start`, {}, org.key)
  await manualScheduler(t).tickEvery(1000, 3)
  expect(telephony.dials.length).toBe(2)
  const stored = t.ctx.sqlite
    .query<{ model_overrides: string }, [number]>('SELECT model_overrides FROM workflow_runs WHERE campaign_id = ?')
    .all(campaign.id)
  expect(stored.map((row) => JSON.parse(row.model_overrides))).toEqual([overrides, overrides])
})

describe('resolution: run overrides over the agent configuration over the organization default', () => {
  const organizationId = 1

  test('the organization default, with provider and model per service recorded (never a key)', () => {
    const resolved = resolveRunModels(t.ctx, organizationId, { overrides: null, agentConfigurationUuid: null })
    expect(resolved.configurationSource).toBe('organization')
    expect(resolved.llm!.settings).toEqual({ model: 'qwen3', temperature: 0.2 })
    expect(resolved.llm!.connection!.apiKey).toBe('sk-main-key-1234')
    const recorded = runtimeConfiguration(resolved)
    expect(recorded).toEqual({
      model_configuration_uuid: mine.config,
      model_configuration_source: 'organization',
      llm_provider: 'openai',
      llm_model: 'qwen3',
      stt_provider: 'speaches',
      stt_model: 'Systran/faster-distil-whisper-small.en',
      tts_provider: 'speaches',
      tts_model: 'kokoro',
      tts_voice: 'af_sky',
    })
    expect(JSON.stringify(recorded)).not.toContain('sk-main')
  })

  test("the agent's pin beats the default; the run's configuration beats the pin", () => {
    expect(
      resolveRunModels(t.ctx, organizationId, { overrides: null, agentConfigurationUuid: mine.second }).llm!.settings
        .model,
    ).toBe('llama3.2:3b')
    const byRun = resolveRunModels(t.ctx, organizationId, {
      overrides: { model_configuration_uuid: mine.config },
      agentConfigurationUuid: mine.second,
    })
    expect([byRun.configurationSource, byRun.llm!.settings.model]).toEqual(['run', 'qwen3'])
  })

  test('a section overlays settings on the same connection and starts from the preset on another; fallback rules follow', () => {
    const overlay = resolveRunModels(t.ctx, organizationId, {
      overrides: { llm: { settings: { temperature: 0.9 } } },
      agentConfigurationUuid: null,
    })
    expect(overlay.llm!.settings).toEqual({ model: 'qwen3', temperature: 0.9 })
    const moved = resolveRunModels(t.ctx, organizationId, {
      overrides: {
        llm: { provider_connection_uuid: mine.backup, settings: { max_tokens: 200 } },
        llm_fallback: {
          rules: [
            {
              condition: { type: 'no_output', after_ms: 1500 },
              target: { provider_connection_uuid: mine.llm, settings: { model: 'qwen3:32b' } },
            },
          ],
        },
      },
      agentConfigurationUuid: null,
    })
    expect(moved.llm).toMatchObject({ connectionUuid: mine.backup, settings: { model: 'gpt-4.1', max_tokens: 200 } })
    expect(moved.stt!.connectionUuid).not.toBeNull()
    expect(runtimeConfiguration(moved).llm_fallback).toEqual([
      { provider: 'openai', model: 'qwen3:32b', after_ms: 1500 },
    ])
  })

  test('realtime and embeddings are overridden like the other services; a realtime model stands in for speech to text', () => {
    const overrides = {
      realtime: { provider_connection_uuid: mine.llm, settings: { voice: 'verse' } },
      embeddings: { provider_connection_uuid: mine.backup, settings: { model: 'nomic-embed-text' } },
    }
    const resolved = resolveRunModels(t.ctx, organizationId, { overrides, agentConfigurationUuid: mine.second })
    expect(resolved.realtime).toMatchObject({
      connectionUuid: mine.llm,
      settings: { model: 'gpt-realtime', voice: 'verse' },
    })
    expect(resolved.embeddings).toMatchObject({ connectionUuid: mine.backup, settings: { model: 'nomic-embed-text' } })
    expect(runtimeConfiguration(resolved)).toMatchObject({
      realtime_provider: 'openai',
      realtime_model: 'gpt-realtime',
      realtime_voice: 'verse',
      embeddings_provider: 'openai',
      embeddings_model: 'nomic-embed-text',
    })
    // "Small" has no stt: a voice run needs one, unless it runs on a realtime model.
    expect(missingModels(resolved, true)).toBeNull()
    const speechOnly = resolveRunModels(t.ctx, organizationId, { overrides: null, agentConfigurationUuid: mine.second })
    expect(missingModels(speechOnly, true)).toContain('no speech to text')
  })
})
