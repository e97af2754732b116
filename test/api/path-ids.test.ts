import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { errorResponse } from '../../src/api/errors'
import { inProcessTest, startHttpTestApp, type HttpTestApp } from '../support/http-app'

// Integer ids in paths are decimal digits, for every operation the OpenAPI document lists (one schema, PathId, in
// src/api/schemas.ts); every 422 names the field it is about. Also run against the compiled binary.

let t: HttpTestApp
let operations: { method: string; path: string; idParameters: string[] }[]
beforeAll(async () => {
  t = await startHttpTestApp()
  const document = (await t.request('GET', '/api/v1/openapi.json')).body
  operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, byMethod]) =>
    Object.entries(byMethod)
      .map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        idParameters: (operation.parameters ?? [])
          .filter((parameter: any) => parameter.in === 'path' && parameter.schema?.type === 'integer')
          .map((parameter: any) => parameter.name as string),
      }))
      .filter((operation) => operation.idParameters.length > 0),
  )
})
afterAll(() => t.close())

const LOOSE_IDS = ['0x1', '1e0', '+1', '1.0', '%201', '1%20', '-1', '1_0', '99999999999999999999', 'Infinity']

describe('integer path ids', () => {
  test('the document lists the operations with integer path ids', async () => {
    expect(operations.length).toBeGreaterThan(20)
    expect(operations.flatMap((operation) => operation.idParameters)).toContain('run_id')
  })

  test('every loose spelling of 1 in every integer path parameter is a 422 naming that parameter', async () => {
    const answers: string[] = []
    for (const { method, path, idParameters } of operations) {
      for (const name of idParameters) {
        for (const id of LOOSE_IDS) {
          const url = idParameters
            .reduce((built, other) => built.replace(`{${other}}`, other === name ? id : '1'), path)
            .replace(/\{[^}]+\}/g, 'x')
          const response = await t.request(method, url, {
            body: ['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined,
          })
          const named =
            response.status === 422 &&
            response.body.detail.some((item: { loc: unknown[] }) => item.loc[0] === 'path' && item.loc[1] === name)
          if (!named) answers.push(`${method} ${url}: ${response.status} ${response.text.slice(0, 200)}`)
        }
      }
    }
    expect(answers).toEqual([])
  })

  test('digits still work', async () => {
    const created = (await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'Digits' } })).body
    const archived = await t.request('DELETE', `/api/v1/user/api-keys/${created.id}`)
    expect(archived.status).toBe(200)
    expect((await t.request('GET', '/api/v1/workflow/fetch/000123')).status).toBe(404)
  })
})

describe('every 422 names its loc', () => {
  test.each([
    ['/api/v1/user/api-keys?include_archived=1', ['query', 'include_archived']],
    ['/api/v1/user/api-keys?include_archived=yes', ['query', 'include_archived']],
    ['/api/v1/organizations/usage/runs?page=%2B1', ['query', 'page']],
    ['/api/v1/organizations/usage/runs?limit=1e1', ['query', 'limit']],
  ])('%s → 422 at %j', async (url, loc) => {
    const response = await t.request('GET', url)
    expect(response.status).toBe(422)
    expect(response.body.detail.map((item: { loc: unknown[] }) => item.loc)).toEqual([loc])
  })

  test('true and false are the booleans of a query', async () => {
    for (const value of ['true', 'false']) {
      expect((await t.request('GET', `/api/v1/user/api-keys?include_archived=${value}`)).status).toBe(200)
    }
  })
})

inProcessTest("a value only Elysia refuses still gets a 422 naming the field, from Elysia's own error", async () => {
  const response = errorResponse(new Elysia(), { error: () => undefined } as any, {
    code: 'VALIDATION',
    error: { type: 'query', valueError: { path: '/include_archived' } },
    request: new Request('http://localhost/x?include_archived=1'),
    route: '/x',
    params: {},
    set: { headers: {} },
  })
  expect(response.status).toBe(422)
  expect(((await response.json()) as { detail: unknown }).detail).toEqual([
    expect.objectContaining({ loc: ['query', 'include_archived'] }),
  ])
})
