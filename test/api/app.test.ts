import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { errorResponse } from '../../src/api/errors'
import type { TestApp } from '../support/app'
import { inProcessTest, startHttpTestApp, type HttpTestApp } from '../support/http-app'

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp({ flags: { 'public-url': 'https://pbx.example.test/' } })
})
afterAll(() => t.close())

describe('health', () => {
  test('answers without a key with every contract field', async () => {
    const response = await t.request('GET', '/api/v1/health', { key: null })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({
      status: 'ok',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      backend_api_endpoint: 'https://pbx.example.test',
      deployment_mode: 'oss',
      auth_provider: expect.any(String),
      object_store: { kind: 'local', reachable: true },
    })
  })
})

describe('error envelope', () => {
  test('unknown route is 404 {detail:"Not Found"}', async () => {
    const response = await t.request('GET', '/api/v1/does-not-exist')
    expect(response.status).toBe(404)
    expect(response.body).toEqual({ detail: 'Not Found' })
  })

  test('malformed JSON is 422 json_invalid', async () => {
    const response = await t.request('POST', '/api/v1/user/api-keys', { rawBody: '{"name": ' })
    expect(response.status).toBe(422)
    expect(response.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error' })
  })

  test('every response carries a request id', async () => {
    const response = await t.request('GET', '/api/v1/health', { key: null, headers: { 'x-request-id': 'abc-123' } })
    expect(response.headers.get('x-request-id')).toBe('abc-123')
  })

  test('an unexpected error is a JSON 500 without the cause; the cause is logged with the request id', async () => {
    const logged: unknown[] = []
    const log = { error: (obj: unknown) => logged.push(obj) } as any
    const app = new Elysia()
    const response = errorResponse(app, log, {
      code: 'UNKNOWN',
      error: new Error('database exploded at /secret/path'),
      request: new Request('http://localhost/api/v1/x'),
      route: '/api/v1/x',
      params: {},
      set: { headers: {} },
      requestId: 'req-1',
    })
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({ detail: 'Internal Server Error' })
    expect(JSON.stringify(logged)).toContain('req-1')
  })

  test('request log lines carry method, path, status, duration, request id and org, never the key', async () => {
    await t.request('GET', '/api/v1/user/api-keys')
    await new Promise((resolve) => setImmediate(resolve)) // the request line is written after the response is handed back
    const lines = t
      .logText()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const line = lines.findLast((entry) => entry.msg === 'request' && entry.path === '/api/v1/user/api-keys')
    expect(line).toMatchObject({ method: 'GET', status: 200, orgId: 1 })
    expect(typeof line.durationMs).toBe('number')
    expect(typeof line.requestId).toBe('string')
    expect(t.logText()).not.toContain(t.adminKey)
  })
})

describe('the request log', () => {
  test('writes a public download path with its token redacted (the token is a 7-day credential)', async () => {
    const token = crypto.randomUUID()
    const response = await t.request('GET', `/api/v1/public/download/workflow/${token}/recording`, { key: null })
    expect(response.status).toBe(404)
    await new Promise((resolve) => setImmediate(resolve))
    expect(t.logText()).not.toContain(token)
    const lines = t
      .logText()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.findLast((entry) => entry.msg === 'request')).toMatchObject({
      path: '/api/v1/public/download/workflow/<redacted>/recording',
      status: 404,
    })
  })
})

describe('OpenAPI', () => {
  inProcessTest('the document is OpenAPI 3 and lists every implemented route with tags and a summary', async () => {
    const response = await t.request('GET', '/api/v1/openapi.json', { key: null })
    expect(response.status).toBe(200)
    const doc = response.body
    expect(doc.openapi).toMatch(/^3\./)
    expect(doc.info.title).toBe('Ringbase API')
    const documented = new Set<string>()
    for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        documented.add(`${method.toUpperCase()} ${path}`)
        expect(operation.tags?.length).toBeGreaterThan(0)
        expect(typeof operation.summary).toBe('string')
        expect(Object.keys(operation.responses ?? {})).toContain('200')
      }
    }
    const implemented = (t as TestApp).app.routes
      .filter(
        (route) =>
          route.path.startsWith('/api/v1/') &&
          !['/api/v1/docs', '/api/v1/openapi', '/api/v1/openapi.json'].includes(route.path),
      )
      .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`)
    expect(implemented.length).toBeGreaterThan(3)
    for (const route of implemented) expect(documented).toContain(route)
  })

  test('the docs page is self-contained (no external scripts or styles)', async () => {
    const response = await t.request('GET', '/api/v1/docs', { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/html')
    expect(response.text).toContain('openapi.json')
    expect(response.text).not.toMatch(/<script[^>]+src=|<link[^>]+href="https?:/)
  })
})
