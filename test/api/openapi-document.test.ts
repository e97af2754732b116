import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { validate } from '@readme/openapi-parser'
import { t as types } from 'elysia'
import { nameSchemas, operationId } from '../../src/api/openapi-document'
import { OPERATION_NAMES } from '../../src/api/openapi-names'
import { createTestApp, type TestApp } from '../support/app'

let t: TestApp
let doc: any
beforeAll(async () => {
  t = createTestApp()
  // A route the naming table has never heard of: the scheme must still give it an id and named schemas.
  t.app.post('/api/v1/widgets/:widget_id/re-tune', () => ({ tuned: true }), {
    params: types.Object({ widget_id: types.Integer() }),
    body: types.Object({ pitch: types.Number(), labels: types.Array(types.String()) }),
    response: {
      200: types.Object({ tuned: types.Boolean() }),
      404: types.Object({ detail: types.String() }, { description: 'Error with a human-readable message' }),
    },
    detail: { tags: ['Widgets'], summary: 'Re-tune a widget' },
  })
  doc = (await t.request('GET', '/api/v1/openapi.json', { key: null })).body
})
afterAll(() => t.close())

const operations = () =>
  Object.entries<Record<string, any>>(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({
      method,
      path,
      operation,
      key: `${method.toUpperCase()} ${path}`,
    })),
  )

const refName = (schema: any) => (schema?.$ref ?? schema?.items?.$ref)?.replace('#/components/schemas/', '')

/** Every `$ref` anywhere in a value. */
const refsIn = (value: unknown): string[] =>
  JSON.stringify(value)
    .match(/"\$ref":"[^"]+"/g)
    ?.map((match) => match.slice(8, -1)) ?? []

const successSchemas = (operation: any) =>
  Object.entries<any>(operation.responses)
    .filter(([status]) => status.startsWith('2'))
    .flatMap(([, response]) => Object.values<any>(response.content ?? {}).map((media) => media.schema))

describe('OpenAPI document', () => {
  test('a standard OpenAPI 3.1 validator accepts it, and rejects it with a dangling $ref', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./)
    expect(await validate(structuredClone(doc))).toMatchObject({ valid: true })
    const broken = structuredClone(doc)
    broken.paths['/api/v1/health'].get.responses['200'].content['application/json'].schema = {
      $ref: '#/components/schemas/NoSuchSchema',
    }
    expect(await validate(broken)).toMatchObject({ valid: false })
  })

  test("every operation has a unique, identifier-safe id, the reference platform's where it has the operation", () => {
    const ids = operations().map(({ operation }) => operation.operationId)
    for (const id of ids) expect(id).toMatch(/^[a-z][a-z0-9_]*$/)
    expect(new Set(ids).size).toBe(ids.length)
    const byKey = Object.fromEntries(operations().map(({ key, operation }) => [key, operation.operationId]))
    expect(byKey['POST /api/v1/workflow/create/definition']).toBe(
      'create_workflow_api_v1_workflow_create_definition_post',
    )
    expect(byKey['GET /api/v1/campaign/']).toBe('get_campaigns_api_v1_campaign__get')
    expect(byKey['GET /api/v1/workflow/fetch/{workflow_id}']).toBe(
      'get_workflow_api_v1_workflow_fetch__workflow_id__get',
    )
    expect(
      byKey[
        'POST /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}/set-default-caller'
      ],
    ).toBe(
      'set_default_caller_id_api_v1_organizations_telephony_configs__config_id__phone_numbers__phone_number_id__set_default_caller_post',
    )
    for (const { key, method, path, operation } of operations()) {
      if (OPERATION_NAMES[key])
        expect({ key, id: operation.operationId }).toEqual({
          key,
          id: operationId(OPERATION_NAMES[key].name, method, path),
        })
    }
  })

  test('every request body and response is a named component, under the name the table gives it', () => {
    const schemas = doc.components.schemas
    for (const { key, operation } of operations()) {
      const bodies = Object.values<any>(operation.requestBody?.content ?? {}).map((media) => media.schema)
      const responses = Object.values<any>(operation.responses).flatMap((response) =>
        response.$ref ? [] : Object.values<any>(response.content ?? {}).map((media) => media.schema),
      )
      for (const schema of [...bodies, ...responses]) {
        expect({ key, named: refName(schema) !== undefined }).toEqual({ key, named: true })
        expect(schemas[refName(schema)]).toBeDefined()
      }
      const names = OPERATION_NAMES[key]
      if (names?.request)
        for (const body of bodies) expect({ key, name: refName(body) }).toEqual({ key, name: names.request })
      if (names?.response)
        for (const schema of successSchemas(operation))
          expect({ key, name: refName(schema) }).toEqual({ key, name: names.response })
    }
    for (const target of refsIn(doc)) {
      const [, section, name] = target.match(/^#\/components\/(schemas|responses)\/(.+)$/) ?? []
      expect({ target, defined: Boolean(section && doc.components[section][name]) }).toEqual({ target, defined: true })
    }
  })

  test('a route missing from the naming table gets names by the same scheme', () => {
    const operation = doc.paths['/api/v1/widgets/{widget_id}/re-tune'].post
    expect(operation.operationId).toBe('create_widgets_re_tune_api_v1_widgets__widget_id__re_tune_post')
    expect(refName(operation.requestBody.content['application/json'].schema)).toBe('CreateWidgetsReTuneRequest')
    expect(refName(operation.responses['200'].content['application/json'].schema)).toBe('CreateWidgetsReTuneResponse')
    expect(operation.responses['404']).toEqual({ $ref: '#/components/responses/HTTPError' })
    expect(doc.components.schemas.CreateWidgetsReTuneRequest.properties.labels).toEqual({
      type: 'array',
      items: { type: 'string' },
    })
  })

  test('shared shapes are defined once: the error bodies, the 422 body and its items, a run', () => {
    const schemas = doc.components.schemas
    const definitions = Object.values<any>(schemas).filter(
      (schema) => !(Object.keys(schema).length === 1 && schema.$ref),
    )
    const shapes = definitions.map((schema) => JSON.stringify(schema))
    expect(shapes.length - new Set(shapes).size).toBe(0)
    expect(schemas.HTTPError).toMatchObject({ type: 'object', properties: { detail: { type: 'string' } } })
    expect(schemas.HTTPValidationError.properties.detail.items).toEqual({
      $ref: '#/components/schemas/ValidationError',
    })
    expect(schemas.ValidationError.properties.loc.items).toEqual({ anyOf: [{ type: 'string' }, { type: 'integer' }] })
    expect(schemas.WorkflowRunsResponse.properties.runs.items).toEqual({
      $ref: '#/components/schemas/WorkflowRunResponseSchema',
    })
    expect(schemas.CampaignsResponse.properties.campaigns.items).toEqual({
      $ref: '#/components/schemas/CampaignResponse',
    })
    expect(doc.components.responses.HTTPValidationError.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/HTTPValidationError',
    })
    // No shape is left inline in the operations, and the integers Elysia widens for coercion are plain integers again.
    expect(JSON.stringify(doc.paths)).not.toContain('"properties"')
    expect(JSON.stringify(doc)).not.toContain('"format":"integer"')
  })

  test('the document does not depend on what the process served before (Elysia marks response schemas as it compiles them)', () => {
    const documentFor = (marked: boolean) =>
      nameSchemas({
        openapi: '3.1.2',
        info: { title: 'x', version: '1' },
        paths: {
          '/api/v1/health': {
            get: {
              responses: {
                200: {
                  description: 'ok',
                  content: {
                    'application/json': {
                      schema: {
                        type: 'object',
                        properties: { status: { type: 'string' } },
                        required: ['status'],
                        ...(marked ? { additionalProperties: false } : {}),
                      },
                    },
                  },
                },
              },
            },
          },
        },
      })
    expect(documentFor(true)).toEqual(documentFor(false))
    expect(documentFor(true).components!.schemas!.HealthResponse).toEqual({
      type: 'object',
      properties: { status: { type: 'string' } },
      required: ['status'],
    })
  })
})
