import { afterAll, beforeAll, expect, test } from 'bun:test'
import { REDACTED } from '../../src/api/request-log'
import { MEDIA_STREAM_ROUTE } from '../../src/api/telephony-webhooks/media-socket'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { rawHttp } from '../support/raw-http'

/*
 * No secret a request carries in its URL reaches the log. The routes come from the OpenAPI document (plus the media
 * stream WebSocket, which is no HTTP route), so a new route is covered the day it is added: every path parameter is
 * either named below as not secret or treated as a secret (and must then be redacted), every route is requested with
 * secrets in its query string too, and the secret routes with the path shapes routing tolerates (a trailing slash, a
 * doubled slash, more segments, another case). Also against the compiled binary (test/binary-http.test.ts).
 */

/** Path parameters that are ids or names, not credentials. A new parameter must be added here or be redacted. */
const NOT_SECRET = new Set([
  'api_key_id',
  'artifact_type',
  'callback',
  'campaign_id',
  'config_id',
  'credential_uuid',
  'document_uuid',
  'id',
  'name',
  'organization_id',
  'phone_number_id',
  'provider',
  'recording_id',
  'run_id',
  'tool_uuid',
  'trunk_id',
  'uuid',
  'workflow_id',
  'workflow_uuid',
])

type Operation = { method: string; path: string }

let t: HttpTestApp
let operations: Operation[]
let markerCount = 0
const markers: string[] = []
const marker = () => {
  const value = `s3cr3t${++markerCount}x${crypto.randomUUID().slice(0, 8)}`
  markers.push(value)
  return value
}

beforeAll(async () => {
  t = await startHttpTestApp()
  const document = (await t.request('GET', '/api/v1/openapi.json')).body
  operations = Object.entries<Record<string, unknown>>(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map((method) => ({ method: method.toUpperCase(), path })),
  )
  operations.push({ method: 'GET', path: MEDIA_STREAM_ROUTE.replace(/:([a-z_]+)/g, '{$1}') })
})
afterAll(() => t.close())

const secretParameters = (path: string) =>
  [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name).filter((name) => !NOT_SECRET.has(name))

/** The path with every secret parameter a fresh marker and every other one an id that does not exist. */
const filled = (path: string) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    !NOT_SECRET.has(name) ? marker() : name === 'artifact_type' ? 'transcript' : '999999',
  )

/** Shapes of a path that routing may still answer, or that reach the log as a 404. */
const shapes = (path: string) => [
  path,
  `${path}/`,
  `${path}/extra`,
  path.replace('/api/v1/', '/api//v1/'),
  path.replace('/api/v1/', '/API/v1/'),
]

/** The log lines that hold a marker, once the lines written after the responses are in (in-process, a turn later). */
async function leakedLines(): Promise<string[]> {
  await new Promise((resolve) => setTimeout(resolve, 10))
  return t
    .logText()
    .split('\n')
    .filter((line) => markers.some((value) => line.includes(value)))
}

test('the OpenAPI document has routes with secret path parameters, and the secret parameters are known', () => {
  const secret = operations.filter(({ path }) => secretParameters(path).length > 0)
  expect(secret.map(({ method, path }) => `${method} ${path}`).sort()).toEqual([
    'GET /api/v1/public/download/workflow/{token}/{artifact_type}',
    `GET ${MEDIA_STREAM_ROUTE.replace(/:([a-z_]+)/g, '{$1}')}`,
  ])
})

test('no secret in a path segment or a query string reaches the log, whatever shape the path has', async () => {
  for (const { method, path } of operations) {
    const secretPath = secretParameters(path).length > 0
    for (const shape of secretPath ? shapes(path) : [path]) {
      const query = `?signature=${marker()}&token=${marker()}&key=${marker()}`
      await t.request(method, `${filled(shape)}${query}`, {
        headers: { 'content-type': 'application/json' },
        rawBody: method === 'GET' ? undefined : '{}',
      })
    }
  }
  expect(await leakedLines()).toEqual([])
  expect(t.logText()).toContain(`/api/v1/public/download/workflow/${REDACTED}/transcript/`)
  expect(t.logText()).toContain(`/api/v1/telephony/ws/999999/999999/999999/${REDACTED}`)
})

test('the media stream token: a WebSocket upgrade, a plain GET and a trailing slash over real HTTP, under an empty Host too', async () => {
  const url = await t.httpUrl()
  for (const host of ['ringbase.local', '']) {
    for (const suffix of ['', '/']) {
      const path = `${filled(MEDIA_STREAM_ROUTE.replace(/:([a-z_]+)/g, '{$1}'))}${suffix}`
      const upgrade = await rawHttp(
        url,
        [
          `GET ${path} HTTP/1.1`,
          `Host: ${host}`,
          'Upgrade: websocket',
          'Connection: Upgrade',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
          'Sec-WebSocket-Version: 13',
          '',
          '',
        ].join('\r\n'),
      )
      expect(upgrade.status).toBe(101)
      const plain = await rawHttp(
        url,
        `GET ${filled(MEDIA_STREAM_ROUTE.replace(/:([a-z_]+)/g, '{$1}'))}${suffix} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      )
      expect(plain.status).toBe(404)
    }
  }
  expect(await leakedLines()).toEqual([])
})

test('a signed upload PUT: its signature never reaches the log', async () => {
  const csv = 'phone_number\n+14155550100\n'
  const grant = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
    body: { file_name: 'leads.csv', file_size: csv.length },
  })
  expect(grant.status).toBe(200)
  const { pathname, search } = new URL(grant.body.upload_url)
  const signature = new URLSearchParams(search).get('signature')!
  markers.push(signature)
  const put = await t.request('PUT', `${pathname}${search}`, {
    key: null,
    rawBody: csv,
    headers: { 'content-type': 'text/csv' },
  })
  expect(put.status).toBe(200)
  const again = await t.request('PUT', `${pathname}/${search}`, {
    key: null,
    rawBody: csv,
    headers: { 'content-type': 'text/csv' },
  })
  expect(again.status).not.toBe(200)
  expect(await leakedLines()).toEqual([])
})
