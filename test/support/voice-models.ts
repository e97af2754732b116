import { expect } from 'bun:test'
import type { FakeModels } from './fake-models'
import type { HttpClient } from './http-app'

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
