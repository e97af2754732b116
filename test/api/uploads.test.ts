import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { manualClock } from '../../src/lib/clock'
import { createTestApp, type TestApp } from '../support/app'
import { uploadCsv } from '../support/campaigns'

let t: TestApp
beforeEach(() => {
  t = createTestApp({ flags: { 'public-url': 'https://ringbase.example.test' } })
})
afterEach(() => t.close())

const localUrl = (url: string) => url.replace('https://ringbase.example.test', 'http://localhost')

async function grant(fileSize: number, fileName = 'leads.csv') {
  const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
    body: { file_name: fileName, file_size: fileSize },
  })
  expect(response.status).toBe(200)
  return response.body as { upload_url: string; file_key: string; expires_in: number }
}

const put = (url: string, body: string | Uint8Array, contentType = 'text/csv') =>
  t.app.handle(new Request(localUrl(url), { method: 'PUT', body, headers: { 'content-type': contentType } }))

const partialFiles = () => readdirSync(join(t.dataDir, 'objects', '.partial'))

describe('presigned upload URL', () => {
  test('is an absolute URL on --public-url with a key scoped to the organization', async () => {
    const body = await grant(42, 'my leads (final).csv')
    expect(body.expires_in).toBe(900)
    expect(body.upload_url).toStartWith('https://ringbase.example.test/api/v1/s3/upload?')
    expect(body.file_key).toMatch(/^campaigns\/1\/[0-9a-f-]{36}_my_leads__final_\.csv$/)
  })

  test('validates the request', async () => {
    const cases: [unknown, string, (string | number)[]][] = [
      [{ file_name: 'leads.xlsx', file_size: 10 }, 'string_pattern_mismatch', ['body', 'file_name']],
      [{ file_name: 'leads.csv', file_size: 0 }, 'greater_than', ['body', 'file_size']],
      [{ file_name: 'leads.csv', file_size: 200 * 1024 * 1024 }, 'less_than_equal', ['body', 'file_size']],
      [
        { file_name: 'leads.csv', file_size: 10, content_type: 'application/pdf' },
        'literal_error',
        ['body', 'content_type'],
      ],
      [{ file_size: 10 }, 'missing', ['body', 'file_name']],
    ]
    for (const [body, type, loc] of cases) {
      const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', { body })
      expect(response.status).toBe(422)
      expect(response.body.detail[0]).toMatchObject({ type, loc })
    }
  })

  test('needs an API key', async () => {
    const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      key: null,
      body: { file_name: 'a.csv', file_size: 1 },
    })
    expect(response.status).toBe(401)
  })
})

describe('signed PUT', () => {
  test('streams the body into the object store', async () => {
    const csv = 'phone_number\n+14155550100\n'
    const key = await uploadCsv(t, csv)
    expect(await (await t.ctx.objects.get(key))!.text()).toBe(csv)
  })

  test('a tampered key or signature is refused with 403 and nothing is stored', async () => {
    const body = await grant(5)
    const otherKey = body.upload_url.replace(
      encodeURIComponent(body.file_key),
      encodeURIComponent('campaigns/2/stolen.csv'),
    )
    expect((await put(otherKey, 'a,b\n')).status).toBe(403)
    const badSignature = body.upload_url.replace(/signature=[^&]+/, 'signature=AAAA')
    expect((await put(badSignature, 'a,b\n')).status).toBe(403)
    const traversal = body.upload_url.replace(encodeURIComponent(body.file_key), encodeURIComponent('../../etc/passwd'))
    expect((await put(traversal, 'a,b\n')).status).toBe(403)
    expect(await t.ctx.objects.exists(body.file_key)).toBe(false)
  })

  test('an expired URL is refused with 403', async () => {
    const body = await grant(5)
    ;(t.ctx.clock as ReturnType<typeof manualClock>).advance(901_000)
    const response = await put(body.upload_url, 'a,b\n')
    expect(response.status).toBe(403)
    expect(JSON.parse(await response.text()).detail).toContain('expired')
  })

  test('a wrong content type is refused with 415', async () => {
    const body = await grant(5)
    expect((await put(body.upload_url, 'a,b\n', 'application/json')).status).toBe(415)
  })

  test('a body larger than the signed size is refused with 413 and leaves nothing behind', async () => {
    const body = await grant(10)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode('0123456789'))
        controller.close()
      },
    })
    const response = await t.app.handle(
      new Request(localUrl(body.upload_url), { method: 'PUT', body: stream, headers: { 'content-type': 'text/csv' } }),
    )
    expect(response.status).toBe(413)
    expect(await t.ctx.objects.exists(body.file_key)).toBe(false)
    expect(partialFiles()).toEqual([])
    expect(existsSync(join(t.dataDir, 'objects', body.file_key))).toBe(false)
  })
})
