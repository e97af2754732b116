import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { rawHttp } from '../support/raw-http'

// The server routes on the request target, whatever the Host header says, short, empty or missing: real HTTP with raw
// Host headers, also against the compiled binary (test/binary-http.test.ts).

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp()
})
afterAll(() => t.close())

/** `host` null: no Host header at all. */
const request = async (method: string, path: string, host: string | null, body?: string, version = 'HTTP/1.1') => {
  const headers = [...(host === null ? [] : [`Host: ${host}`]), `X-API-Key: ${t.adminKey}`, 'Connection: close']
  if (body !== undefined) headers.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`)
  return rawHttp(await t.httpUrl(), `${method} ${path} ${version}\r\n${headers.join('\r\n')}\r\n\r\n`, body)
}

test.each(['api', 'db', 'x', 'api:8000', 'a:1'])('Host: %s routes normally', async (host) => {
  const health = await request('GET', '/api/v1/health', host)
  expect(health.status).toBe(200)
  const keys = await request('GET', '/api/v1/user/api-keys?include_archived=true', host)
  expect(keys.status).toBe(200)
  expect(JSON.parse(keys.body)).toEqual([expect.objectContaining({ scope: 'admin' })])
})

test('a body comes through under a short Host', async () => {
  const created = await request('POST', '/api/v1/user/api-keys', 'api', JSON.stringify({ name: 'Compose' }))
  expect(created.status).toBe(200)
  expect(JSON.parse(created.body)).toMatchObject({ name: 'Compose' })
})

test.each(['', 'x', 'api', 'ringbase.local'])(
  'Host: %s does not serve /zzz/api/v1/user/api-keys as /api/v1/user/api-keys',
  async (host) => {
    const response = await request('GET', '/zzz/api/v1/user/api-keys', host)
    expect(response.status).toBe(404)
    expect(JSON.parse(response.body)).toEqual({ detail: 'Not Found' })
  },
)

describe.each([
  ['an empty Host', '', 'HTTP/1.1'],
  ['no Host over HTTP/1.0', null, 'HTTP/1.0'],
])('with %s', (_, host, version) => {
  test('every route answers on its own path', async () => {
    expect((await request('GET', '/api/v1/health', host, undefined, version)).status).toBe(200)
    const keys = await request('GET', '/api/v1/user/api-keys?include_archived=true', host, undefined, version)
    expect(keys.status).toBe(200)
    expect(JSON.parse(keys.body)).toContainEqual(expect.objectContaining({ name: 'bootstrap admin' }))
    const created = await request('POST', '/api/v1/user/api-keys', host, JSON.stringify({ name: 'No host' }), version)
    expect(created.status).toBe(200)
    expect(JSON.parse(created.body)).toMatchObject({ name: 'No host' })
  })

  test.each(['/zzz/api/v1/user/api-keys', '//zzz/api/v1/user/api-keys', '/zzz/api/v1/health'])(
    '%s is not shifted onto another route',
    async (path) => {
      const response = await request('GET', path, host, undefined, version)
      expect(response.status).toBe(404)
      expect(JSON.parse(response.body)).toEqual({ detail: 'Not Found' })
    },
  )
})

test('a signed upload streams through under a short Host', async () => {
  const csv = 'phone_number\n+14155550100\n'
  const grant = (
    await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      body: { file_name: 'leads.csv', file_size: csv.length },
    })
  ).body
  const { pathname, search } = new URL(grant.upload_url)
  const head = `PUT ${pathname}${search} HTTP/1.1\r\nHost: api\r\nContent-Type: text/csv\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`
  const response = await rawHttp(await t.httpUrl(), head, `${csv.length.toString(16)}\r\n${csv}\r\n0\r\n\r\n`)
  expect(response.status).toBe(200)
  expect(JSON.parse(response.body)).toEqual({ file_key: grant.file_key, size: csv.length })
})

test('a media stream upgrade with an empty Host reaches the media endpoint', async () => {
  const head = [
    'GET /api/v1/telephony/ws/1/1/1/not-a-token HTTP/1.1',
    'Host: ',
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
  ]
  const response = await rawHttp(await t.httpUrl(), `${head.join('\r\n')}\r\n\r\n`)
  expect(response.status).toBe(101)
})
