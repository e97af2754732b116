import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { httpTestAppPerTest, type HttpTestApp } from '../support/http-app'
import { createAgent, sampleDefinition } from '../support/agents'
import { CONFIGS_PATH, VALID_CONFIGS } from '../support/telephony'

const apps = httpTestAppPerTest()
let t: HttpTestApp
beforeEach(async () => {
  t = await apps.start()
})
afterEach(() => t.close())

const CREATE_AGENT = '/api/v1/workflow/create/definition'
const API_KEYS = '/api/v1/user/api-keys'

const dictType = (field: string, input: unknown) => ({
  type: 'dict_type',
  loc: ['body', field],
  msg: 'Input should be a valid dictionary',
  input,
})
const modelType = (loc: (string | number)[], input: unknown) => ({
  type: 'model_attributes_type',
  loc,
  msg: 'Input should be a valid dictionary or object to extract fields from',
  input,
})

describe('a non-object where the schema wants an object is a 422, never coerced', () => {
  const agentDefinitions: [string, unknown][] = [
    ['a string', 'graph'],
    ['a number', 5],
    ['an array', [1, 2]],
    ['null', null],
    ['a boolean', true],
  ]
  test.each(agentDefinitions)(
    'create agent: workflow_definition as %s (t.Record) is dict_type',
    async (_label, value) => {
      const response = await t.request('POST', CREATE_AGENT, { body: { name: 'A', workflow_definition: value } })
      expect(response.status).toBe(422)
      expect(response.body).toEqual({ detail: [dictType('workflow_definition', value)] })
      expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(0)
    },
  )

  test.each([
    ['a string', 'fast'],
    ['a number', 5],
    ['an array', [600]],
  ])('create agent: workflow_configurations as %s (t.Object) is model_attributes_type', async (_label, value) => {
    const response = await t.request('POST', CREATE_AGENT, {
      body: { name: 'A', workflow_definition: sampleDefinition(), workflow_configurations: value },
    })
    expect(response.status).toBe(422)
    expect(response.body).toEqual({ detail: [modelType(['body', 'workflow_configurations'], value)] })
  })

  test('update agent: workflow_definition as a string (t.Record or null) is dict_type and saves nothing', async () => {
    const agent = await createAgent(t, 'Kept')
    const response = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { name: 'Changed', workflow_definition: 'graph' },
    })
    expect(response.status).toBe(422)
    expect(response.body).toEqual({ detail: [dictType('workflow_definition', 'graph')] })
    expect((await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body).toMatchObject({
      name: 'Kept',
      version_number: 1,
    })
  })

  test('telephony configuration: config as a string or a number is model_attributes_type', async () => {
    for (const value of ['twilio', 5]) {
      const response = await t.request('POST', CONFIGS_PATH, { body: { name: 'Main', config: value } })
      expect({ value, status: response.status, body: response.body }).toEqual({
        value,
        status: 422,
        body: { detail: [modelType(['body', 'config'], value)] },
      })
    }
    expect((await t.request('GET', CONFIGS_PATH)).text).not.toContain('Main')
  })

  test('api key: name as a number is string_type', async () => {
    const response = await t.request('POST', API_KEYS, { body: { name: 5 } })
    expect(response.status).toBe(422)
    expect(response.body).toEqual({
      detail: [{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 5 }],
    })
  })

  test('every problem is reported at once, with the body as sent', async () => {
    const sent = { workflow_definition: 'graph', note: 'extra' }
    const response = await t.request('POST', CREATE_AGENT, { body: sent })
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: sent },
      dictType('workflow_definition', 'graph'),
    ])
  })

  test('a string at the body limit where an object is expected: the 422 names it, with or without a key', async () => {
    // The normalizer would rebuild it a character at a time (scripts/bench/hostile-bodies.ts measures what it cost).
    const long = 'é'.repeat(500_000 - 100)
    const trigger = '/api/v1/public/agent/workflow/99999999999999999999'
    for (const key of [undefined, null]) {
      const response = await t.request('POST', trigger, {
        key,
        body: { phone_number: '+14155550100', initial_context: long },
      })
      expect(response.status).toBe(422)
      expect(response.body.detail).toContainEqual(dictType('initial_context', long))
    }
    const configurations = await t.request('POST', CREATE_AGENT, {
      body: { name: 'A', workflow_definition: sampleDefinition(), workflow_configurations: long },
    })
    expect(configurations.body).toEqual({ detail: [modelType(['body', 'workflow_configurations'], long)] })
    expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(0)
  })

  test('authentication still answers first: a bad key with a mistyped body is a 401', async () => {
    const response = await t.request('POST', CREATE_AGENT, {
      key: 'rb_wrong',
      body: { name: 'A', workflow_definition: 'graph' },
    })
    expect(response.status).toBe(401)
  })
})

describe('valid bodies still pass; unknown properties are ignored, responses unchanged', () => {
  test('create agent with unknown properties at the root and in nested objects', async () => {
    const response = await t.request('POST', CREATE_AGENT, {
      body: {
        name: 'A',
        workflow_definition: sampleDefinition(),
        workflow_configurations: { max_call_duration_seconds: 90, ambient_noise: true },
        folder: 'x',
      },
    })
    expect(response.status).toBe(200)
    expect(response.body).not.toHaveProperty('folder')
    expect(response.body.workflow_configurations).toEqual({ max_call_duration_seconds: 90, ambient_noise: true })
    expect(response.body.workflow_definition.nodes).toHaveLength(3)
  })

  test('update agent: a null workflow_definition means "unchanged"', async () => {
    const agent = await createAgent(t, 'A')
    const response = await t.request('PUT', `/api/v1/workflow/${agent.id}`, {
      body: { name: 'B', workflow_definition: null, unknown: [1] },
    })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({
      name: 'B',
      version_number: 1,
      workflow_definition: agent.workflow_definition,
    })
    expect(response.body).not.toHaveProperty('unknown')
  })

  test('telephony configuration and api key with an unknown property', async () => {
    const config = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'Main', config: VALID_CONFIGS.twilio.config, color: 'blue' },
    })
    expect(config.status).toBe(200)
    expect(config.body).not.toHaveProperty('color')
    const key = await t.request('POST', API_KEYS, { body: { name: 'CI', color: 'blue' } })
    expect(key.status).toBe(200)
    expect(Object.keys(key.body).sort()).toEqual(['api_key', 'created_at', 'id', 'key_prefix', 'name', 'scope'])
  })
})
