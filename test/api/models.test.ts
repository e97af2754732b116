import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, sampleDefinition } from '../support/agents'
import { deadBaseUrl, failWith, startFakeModels, type FakeModels } from '../support/fake-models'

const KEY = 'sk-live-0123456789abcdef'
const CONNECTIONS = '/api/v1/organizations/provider-connections'
const CONFIGURATIONS = '/api/v1/organizations/model-configurations'

let t: TestApp
let models: FakeModels

beforeAll(() => {
  t = createTestApp()
  models = startFakeModels()
})
afterAll(() => {
  models.stop()
  t.close()
})

async function connection(body: Record<string, unknown>, key?: string) {
  const response = await t.request('POST', CONNECTIONS, { body, key })
  expect(response.status).toBe(200)
  return response.body
}

describe('provider connections', () => {
  test('the key is encrypted at rest, masked in every response, and a masked key sent back keeps it', async () => {
    const created = await connection({
      name: 'Local vLLM',
      provider: 'openai',
      base_url: `${models.baseUrl}/`,
      api_key: KEY,
    })
    expect(created).toMatchObject({
      name: 'Local vLLM',
      provider: 'openai',
      base_url: models.baseUrl,
      api_key: `${'*'.repeat(KEY.length - 4)}cdef`,
    })
    expect(created.uuid).toMatch(/^[0-9a-f-]{36}$/)
    const stored = t.ctx.sqlite
      .query<{ api_key: string }, [string]>('SELECT api_key FROM provider_connections WHERE uuid = ?')
      .get(created.uuid)!
    expect(stored.api_key).toStartWith('v1:')
    expect(stored.api_key).not.toContain(KEY)

    const renamed = await t.request('PUT', `${CONNECTIONS}/${created.uuid}`, { body: { ...created, name: 'vLLM' } })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ name: 'vLLM', api_key: created.api_key })
    // The stored key is still the real one: the server receives it.
    expect((await t.request('POST', `${CONNECTIONS}/${created.uuid}/check`)).body).toEqual({
      ok: true,
      models: ['fake-llm', 'fake-stt', 'fake-tts'],
      error: null,
    })
    expect(models.requestsTo('/models').at(-1)!.headers.get('authorization')).toBe(`Bearer ${KEY}`)

    const listed = await t.request('GET', CONNECTIONS)
    expect(listed.body.connections.map((item: { uuid: string }) => item.uuid)).toContain(created.uuid)
    for (const text of [
      listed.text,
      renamed.text,
      (await t.request('GET', `${CONNECTIONS}/${created.uuid}`)).text,
      t.logText(),
    ]) {
      expect(text).not.toContain(KEY)
    }
  })

  test('defaults, required keys, URL rules and an immutable provider', async () => {
    expect(await connection({ name: 'Groq', provider: 'groq', api_key: 'gsk_abcdefgh' })).toMatchObject({
      base_url: 'https://api.groq.com/openai/v1',
    })
    const noKey = await t.request('POST', CONNECTIONS, { body: { name: 'Router', provider: 'openrouter' } })
    expect(noKey.status).toBe(422)
    expect(noKey.body.detail.map((item: { loc: string[] }) => item.loc)).toEqual([['body', 'api_key']])
    const badUrl = await t.request('POST', CONNECTIONS, {
      body: { name: 'Bad', provider: 'openai', base_url: 'ftp://models.local/v1' },
    })
    expect(badUrl.status).toBe(422)
    expect(badUrl.body.detail[0].loc).toEqual(['body', 'base_url'])
    const unknown = await t.request('POST', CONNECTIONS, { body: { name: 'X', provider: 'anthropic' } })
    expect(unknown.status).toBe(422)
    const speaches = await connection({ name: 'Speech', provider: 'speaches', base_url: models.baseUrl })
    expect(speaches.api_key).toBeNull()
    const changed = await t.request('PUT', `${CONNECTIONS}/${speaches.uuid}`, { body: { provider: 'openai' } })
    expect(changed.status).toBe(400)
    const duplicate = await t.request('POST', CONNECTIONS, {
      body: { name: 'Speech', provider: 'speaches', base_url: models.baseUrl },
    })
    expect(duplicate.status).toBe(409)
  })

  test("speaches has no default address (its default port, 8000, is Ringbase's): a connection names its own, never this server", async () => {
    // The app under test listens on 127.0.0.1:8000, as Ringbase does by default.
    const noAddress = await t.request('POST', CONNECTIONS, { body: { name: 'Speaches', provider: 'speaches' } })
    expect(noAddress.status).toBe(422)
    expect(noAddress.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'base_url'], msg: expect.stringContaining('give the base_url') }),
    ])
    const nextDoor = await connection({ name: 'Next door', provider: 'speaches', base_url: 'http://127.0.0.1:8001/v1' })
    const moved = await t.request('PUT', `${CONNECTIONS}/${nextDoor.uuid}`, {
      body: { base_url: 'http://localhost:8000/v1' },
    })
    expect(moved.status).toBe(422)
    expect(moved.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'base_url'],
        msg: expect.stringContaining('this Ringbase server itself'),
      }),
    ])
  })

  test('a connection saved before the server moved to its address is refused when used: check, chat', async () => {
    const app = createTestApp()
    let restarted: TestApp | undefined
    try {
      const saved = (
        await app.request('POST', CONNECTIONS, {
          body: { name: 'Later self', provider: 'openai', base_url: 'http://127.0.0.1:8077/v1' },
        })
      ).body
      const configured = await app.request('POST', CONFIGURATIONS, {
        body: { name: 'Default', llm: { provider_connection_uuid: saved.uuid, settings: { model: 'm' } } },
      })
      expect(configured.status).toBe(200)
      const workflowId = (await createAgent(app, 'Receptionist')).id
      app.close({ keepData: true })
      restarted = createTestApp({ restartOf: app, flags: { http: '127.0.0.1:8077' } })
      const check = await restarted.request('POST', `${CONNECTIONS}/${saved.uuid}/check`)
      expect(check.body).toEqual({
        ok: false,
        models: [],
        error: expect.stringContaining('this Ringbase server itself'),
      })
      const chat = await restarted.request('POST', `/api/v1/workflow/${workflowId}/text-chat/sessions`, { body: {} })
      expect(chat.status).toBe(400)
      expect(chat.body.detail).toContain("provider connection 'Later self': This URL is this Ringbase server itself")
    } finally {
      ;(restarted ?? app).close()
    }
  })

  test('check fails without the key; on this machine the answer is the same whether nothing listens or the server refused (the log tells which)', async () => {
    const down = await connection({ name: 'Down', provider: 'openai', base_url: deadBaseUrl(), api_key: KEY })
    const check = await t.request('POST', `${CONNECTIONS}/${down.uuid}/check`)
    expect(check.status).toBe(200)
    expect(check.body.ok).toBe(false)
    const refusing = await connection({ name: 'Refusing', provider: 'openai', base_url: models.baseUrl, api_key: KEY })
    models.models.queue(failWith(401, { error: { message: `Incorrect API key provided: ${KEY}` } }))
    const answer = await t.request('POST', `${CONNECTIONS}/${refusing.uuid}/check`)
    expect(answer.body).toEqual({ ok: false, models: [], error: check.body.error })
    expect(t.logText()).toContain('model list failed')
    expect(answer.text).not.toContain(KEY)
    expect(t.logText()).not.toContain(KEY)
  })

  test("a stored key never follows a new base_url, and a mask that is not the stored key's is never stored", async () => {
    const kept = await connection({ name: 'Kept', provider: 'openai', base_url: models.baseUrl, api_key: KEY })
    const path = `${CONNECTIONS}/${kept.uuid}`
    const elsewhere = 'http://127.0.0.1:9/v1'
    for (const body of [{ base_url: elsewhere }, { base_url: elsewhere, api_key: kept.api_key }]) {
      const moved = await t.request('PUT', path, { body })
      expect(moved.status).toBe(422)
      expect(moved.body.detail.map((item: { loc: string[] }) => item.loc)).toEqual([['body', 'api_key']])
    }
    expect((await t.request('GET', path)).body.base_url).toBe(models.baseUrl)
    const edited = await t.request('PUT', path, { body: { api_key: `*${kept.api_key}` } })
    expect(edited.status).toBe(422)
    expect(
      (await t.request('POST', CONNECTIONS, { body: { name: 'Masked', provider: 'openai', api_key: '****cdef' } }))
        .status,
    ).toBe(422)
    // Sent again in clear with the new address, it moves.
    expect((await t.request('PUT', path, { body: { base_url: elsewhere, api_key: KEY } })).body).toMatchObject({
      base_url: elsewhere,
      api_key: kept.api_key,
    })
  })

  test("another organization's connection does not exist for you", async () => {
    const mine = await connection({ name: 'Mine', provider: 'openai', base_url: models.baseUrl })
    const other = t.newOrg('other-connections')
    for (const [method, path] of [
      ['GET', ''],
      ['PUT', ''],
      ['DELETE', ''],
      ['POST', '/check'],
    ] as const) {
      const response = await t.request(method, `${CONNECTIONS}/${mine.uuid}${path}`, {
        key: other.key,
        body: method === 'PUT' ? { name: 'x' } : undefined,
      })
      expect({ method, status: response.status }).toEqual({ method, status: 404 })
    }
    expect((await t.request('GET', CONNECTIONS, { key: other.key })).body.connections).toEqual([])
    const borrowing = await t.request('POST', CONFIGURATIONS, {
      key: other.key,
      body: { name: 'Borrow', llm: { provider_connection_uuid: mine.uuid } },
    })
    expect(borrowing.status).toBe(422)
    expect(borrowing.body.detail[0].loc).toEqual(['body', 'llm', 'provider_connection_uuid'])
  })
})

describe('model configurations', () => {
  test('sections get the preset defaults; tts may be the built-in voice; one default per organization', async () => {
    const org = t.newOrg('configurations')
    const llm = await connection({ name: 'LLM', provider: 'openai', base_url: models.baseUrl }, org.key)
    const speech = await connection({ name: 'Speech', provider: 'speaches', base_url: models.baseUrl }, org.key)
    const first = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: {
        name: 'Main',
        llm: { provider_connection_uuid: llm.uuid, settings: { model: 'qwen3', temperature: 0.3 } },
        stt: { provider_connection_uuid: speech.uuid },
        tts: { builtin: true },
      },
    })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({
      name: 'Main',
      is_default: true,
      llm: { provider_connection_uuid: llm.uuid, settings: { model: 'qwen3', temperature: 0.3 } },
      stt: { provider_connection_uuid: speech.uuid, settings: { model: 'Systran/faster-distil-whisper-small.en' } },
      tts: { builtin: true, settings: { voice: 'slt' } },
    })
    const second = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: { name: 'Second', llm: { provider_connection_uuid: llm.uuid } },
    })
    expect(second.body).toMatchObject({
      is_default: false,
      stt: null,
      tts: null,
      llm: { settings: { model: 'gpt-4.1' } },
    })
    const promoted = await t.request('PUT', `${CONFIGURATIONS}/${second.body.uuid}`, {
      key: org.key,
      body: { is_default: true },
    })
    expect(promoted.body.is_default).toBe(true)
    expect((await t.request('GET', `${CONFIGURATIONS}/${first.body.uuid}`, { key: org.key })).body.is_default).toBe(
      false,
    )

    const noModel = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: { name: 'NoModel', llm: { provider_connection_uuid: speech.uuid } },
    })
    expect(noModel.status).toBe(422)
    expect(noModel.body.detail[0].loc).toEqual(['body', 'llm', 'settings', 'model'])
    // streaming speech to text is a yes/no switch
    const streamingWord = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: {
        name: 'Streaming',
        llm: { provider_connection_uuid: llm.uuid },
        stt: { provider_connection_uuid: speech.uuid, settings: { model: 'whisper-1', streaming: 'yes' } },
      },
    })
    expect(streamingWord.status).toBe(422)
    expect(streamingWord.body.detail[0].loc).toEqual(['body', 'stt', 'settings', 'streaming'])
    const badVoice = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: {
        name: 'Voice',
        llm: { provider_connection_uuid: llm.uuid },
        tts: { builtin: true, settings: { voice: 'kevin' } },
      },
    })
    expect(badVoice.status).toBe(422)

    // The connection is in use: 409 until no configuration uses it.
    const inUse = await t.request('DELETE', `${CONNECTIONS}/${speech.uuid}`, { key: org.key })
    expect(inUse.status).toBe(409)
    expect(inUse.body.detail).toContain("'Main'")
    expect(
      (await t.request('PUT', `${CONFIGURATIONS}/${first.body.uuid}`, { key: org.key, body: { stt: null } })).body.stt,
    ).toBeNull()
    expect((await t.request('DELETE', `${CONNECTIONS}/${speech.uuid}`, { key: org.key })).status).toBe(200)
    expect((await t.request('GET', `${CONNECTIONS}/${speech.uuid}`, { key: org.key })).status).toBe(404)
  })

  test("an agent may pin one of its organization's configurations, checked on save and publish", async () => {
    const org = t.newOrg('pins')
    const llm = await connection({ name: 'LLM', provider: 'openai', base_url: models.baseUrl }, org.key)
    const configuration = (
      await t.request('POST', CONFIGURATIONS, {
        key: org.key,
        body: { name: 'Pinned', llm: { provider_connection_uuid: llm.uuid } },
      })
    ).body
    const foreign = t.newOrg('pins-other')
    const stranger = crypto.randomUUID()

    const refused = await t.request('POST', '/api/v1/workflow/create/definition', {
      key: foreign.key,
      body: {
        name: 'Agent',
        workflow_definition: sampleDefinition(),
        workflow_configurations: { model_configuration_uuid: configuration.uuid },
      },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0].loc).toEqual(['body', 'workflow_configurations', 'model_configuration_uuid'])

    const agent = await createAgent(t, 'Pinned agent', org.key)
    const unknown = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      key: org.key,
      body: { workflow_configurations: { model_configuration_uuid: stranger } },
    })
    expect(unknown.status).toBe(422)
    const pinned = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      key: org.key,
      body: { workflow_configurations: { model_configuration_uuid: configuration.uuid } },
    })
    expect(pinned.status).toBe(200)
    expect(pinned.body.workflow_configurations.model_configuration_uuid).toBe(configuration.uuid)
    expect((await t.request('POST', `/api/v1/workflow/${agent.id}/publish`, { key: org.key })).status).toBe(200)

    const deleting = await t.request('DELETE', `${CONFIGURATIONS}/${configuration.uuid}`, { key: org.key })
    expect(deleting.status).toBe(409)
    expect(deleting.body.detail).toContain("'Pinned agent'")
    expect((await t.request('GET', `${CONFIGURATIONS}/${configuration.uuid}`, { key: foreign.key })).status).toBe(404)
  })
})

describe('realtime sections and the kinds of model server', () => {
  test('a realtime section gets the preset model and voice, is checked like the others, and can be removed', async () => {
    const org = t.newOrg('realtime-sections')
    const openai = await connection({ name: 'OpenAI', provider: 'openai', base_url: models.baseUrl }, org.key)
    const groq = await connection({ name: 'Groq', provider: 'groq', api_key: 'gsk-1234567890' }, org.key)
    const created = await t.request('POST', CONFIGURATIONS, {
      key: org.key,
      body: {
        name: 'Speech to speech',
        llm: { provider_connection_uuid: openai.uuid },
        realtime: {
          provider_connection_uuid: openai.uuid,
          settings: { instructions: 'Be brief.', turn_detection: { type: 'semantic_vad' } },
        },
      },
    })
    expect(created.status, created.text).toBe(200)
    expect(created.body.realtime).toEqual({
      provider_connection_uuid: openai.uuid,
      settings: {
        model: 'gpt-realtime',
        voice: 'alloy',
        instructions: 'Be brief.',
        turn_detection: { type: 'semantic_vad' },
      },
    })
    // Groq offers no realtime model: the model and voice must then be named.
    const noDefault = await t.request('PUT', `${CONFIGURATIONS}/${created.body.uuid}`, {
      key: org.key,
      body: { realtime: { provider_connection_uuid: groq.uuid } },
    })
    expect(noDefault.status).toBe(422)
    expect(noDefault.body.detail.map((item: { loc: unknown[] }) => item.loc)).toEqual([
      ['body', 'realtime', 'settings', 'model'],
      ['body', 'realtime', 'settings', 'voice'],
    ])
    const badTurns = await t.request('PUT', `${CONFIGURATIONS}/${created.body.uuid}`, {
      key: org.key,
      body: { realtime: { provider_connection_uuid: openai.uuid, settings: { turn_detection: { type: 'psychic' } } } },
    })
    expect(badTurns.status).toBe(422)
    const removed = await t.request('PUT', `${CONFIGURATIONS}/${created.body.uuid}`, {
      key: org.key,
      body: { realtime: null },
    })
    expect(removed.body.realtime).toBeNull()
  })

  test('the metadata of every kind of model server lists the services it offers and their defaults', async () => {
    const response = await t.request('GET', '/api/v1/organizations/model-providers/metadata')
    expect(response.status, response.text).toBe(200)
    const byProvider = Object.fromEntries(
      response.body.providers.map((entry: Record<string, unknown>) => [entry.provider, entry]),
    )
    expect(Object.keys(byProvider)).toEqual(['openai', 'speaches', 'groq', 'openrouter'])
    expect(byProvider.openai.services).toEqual(['llm', 'stt', 'tts', 'embeddings', 'realtime'])
    expect(byProvider.openai.defaults.realtime).toEqual({ model: 'gpt-realtime', voice: 'alloy' })
    expect(byProvider.speaches).toMatchObject({ services: ['stt', 'tts'], default_base_url: null, api_key: 'optional' })
    expect(byProvider.groq.services).toEqual(['llm', 'stt'])
    expect(byProvider.openrouter.services).toEqual(['llm', 'embeddings'])
    expect((await t.request('GET', '/api/v1/organizations/model-providers/metadata', { key: null })).status).toBe(401)
  })
})
