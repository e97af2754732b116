import { expect } from 'bun:test'
import type { FakeModels } from './fake-models'
import type { HttpClient } from './http-app'
import { UNREACHABLE_URL } from './app'

/**
 * The organization's default model configuration, every service on the fake model server, made through the API;
 * `tts: 'builtin'` speaks with the voice built into the binary instead.
 */
export async function configureFakeVoiceModels(t: HttpClient, models: FakeModels, options: { tts?: 'fake' | 'builtin' } = {}): Promise<void> {
  const connection = (await t.request('POST', '/api/v1/organizations/provider-connections', { body: { name: 'Fake', provider: 'openai', base_url: models.baseUrl } })).body
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: 'Fake voice',
      llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      stt: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-stt' } },
      tts: options.tts === 'builtin'
        ? { builtin: true }
        : { provider_connection_uuid: connection.uuid, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
}

/**
 * A default model configuration whose servers are never asked (nothing listens there): enough for run starts to dial
 * (they refuse an agent without models, calls/trigger.ts), for tests about dialling rather than conversations. `key`:
 * another organization's.
 */
export async function configureModelsNeverAsked(t: HttpClient, key?: string): Promise<void> {
  const connection = await t.request('POST', '/api/v1/organizations/provider-connections', {
    key, body: { name: `Never asked ${crypto.randomUUID().slice(0, 8)}`, provider: 'openai', base_url: UNREACHABLE_URL },
  })
  expect(connection.status, connection.text).toBe(200)
  const uuid = connection.body.uuid
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    key,
    body: {
      name: `Never asked ${crypto.randomUUID().slice(0, 8)}`,
      llm: { provider_connection_uuid: uuid, settings: { model: 'm' } },
      stt: { provider_connection_uuid: uuid, settings: { model: 'm' } },
      tts: { builtin: true },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
}
