import { expect } from 'bun:test'
import type { TestApp } from './app'
import type { FakeModels } from './fake-models'

/** The organization's default model configuration, every service on the fake model server, made through the API. */
export async function configureFakeVoiceModels(t: TestApp, models: FakeModels): Promise<void> {
  const connection = (await t.request('POST', '/api/v1/organizations/provider-connections', { body: { name: 'Fake', provider: 'openai', base_url: models.baseUrl } })).body
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: 'Fake voice',
      llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      stt: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-stt' } },
      tts: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
}
