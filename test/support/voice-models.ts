import { expect } from 'bun:test'
import type { FakeModels } from './fake-models'
import type { HttpClient } from './http-app'
import { UNREACHABLE_URL } from './app'

/**
 * The organization's default model configuration (whatever was the default before), every service on the fake model
 * server, made through the API;
 * `tts: 'builtin'` speaks with the voice built into the binary instead.
 */
export async function configureFakeVoiceModels(
  t: HttpClient,
  models: FakeModels,
  options: { tts?: 'fake' | 'builtin' } = {},
): Promise<void> {
  const connection = (
    await t.request('POST', '/api/v1/organizations/provider-connections', {
      body: { name: 'Fake', provider: 'openai', base_url: models.baseUrl },
    })
  ).body
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: {
      name: 'Fake voice',
      is_default: true,
      llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      stt: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-stt' } },
      tts:
        options.tts === 'builtin'
          ? { builtin: true }
          : { provider_connection_uuid: connection.uuid, settings: { model: 'fake-tts', voice: 'alloy' } },
    },
  })
  expect(configuration.status, configuration.text).toBe(200)
}

/** POSTs a JSON body and resolves to the answer's body; throws on anything but 200 (callApi of serve-process.ts). */
export type ApiPost = (path: string, body: unknown) => Promise<any>

/**
 * A model configuration whose servers are never asked (nothing listens there), the organization default when it has
 * none: enough for run starts to dial (they refuse an agent without models, models/readiness.ts), for tests about
 * dialling rather than conversations. `key`: another organization's. `baseUrl`: a server that answers, for tests whose
 * answered calls would otherwise find it unreachable (which stops further dials for a minute, models/health.ts).
 */
export async function configureModelsNeverAsked(
  client: HttpClient | ApiPost,
  key?: string,
  baseUrl = UNREACHABLE_URL,
): Promise<void> {
  const post: ApiPost =
    typeof client === 'function'
      ? client
      : async (path, body) => {
          const response = await client.request('POST', path, { key, body })
          expect(response.status, response.text).toBe(200)
          return response.body
        }
  const name = `Never asked ${crypto.randomUUID().slice(0, 8)}`
  const connection = await post('/api/v1/organizations/provider-connections', {
    name,
    provider: 'openai',
    base_url: baseUrl,
  })
  await post('/api/v1/organizations/model-configurations', {
    name,
    llm: { provider_connection_uuid: connection.uuid, settings: { model: 'm' } },
    stt: { provider_connection_uuid: connection.uuid, settings: { model: 'm' } },
    tts: { builtin: true },
  })
}
