import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { rawHttp } from '../support/raw-http'

// The server routes on the request path, whatever the Host header: real HTTP with raw Host headers, also against the
// compiled binary (test/binary-http.test.ts).

let t: HttpTestApp
beforeAll(async () => { t = await startHttpTestApp() })
afterAll(() => t.close())

const request = async (method: string, path: string, host: string, body?: string) => {
  const headers = [`Host: ${host}`, `X-API-Key: ${t.adminKey}`, 'Connection: close']
  if (body !== undefined) headers.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`)
  return rawHttp(await t.httpUrl(), `${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`, body)
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

test.each(['x', 'api', 'ringbase.local'])('Host: %s does not serve /zzz/api/v1/user/api-keys as /api/v1/user/api-keys', async (host) => {
  const response = await request('GET', '/zzz/api/v1/user/api-keys', host)
  expect(response.status).toBe(404)
  expect(JSON.parse(response.body)).toEqual({ detail: 'Not Found' })
})

test('a signed upload streams through under a short Host', async () => {
  const csv = 'phone_number\n+14155550100\n'
  const grant = (await t.request('POST', '/api/v1/s3/presigned-upload-url', { body: { file_name: 'leads.csv', file_size: csv.length } })).body
  const { pathname, search } = new URL(grant.upload_url)
  const head = `PUT ${pathname}${search} HTTP/1.1\r\nHost: api\r\nContent-Type: text/csv\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`
  const response = await rawHttp(await t.httpUrl(), head, `${csv.length.toString(16)}\r\n${csv}\r\n0\r\n\r\n`)
  expect(response.status).toBe(200)
  expect(JSON.parse(response.body)).toEqual({ file_key: grant.file_key, size: csv.length })
})
