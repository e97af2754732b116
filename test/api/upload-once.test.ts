import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { waitFor } from '../support/wait'

// A signed upload URL uploads once, and an uploaded object is never replaced. Black-box over real HTTP (the PUT
// streams), also against the compiled binary.

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp()
})
afterAll(() => t.close())

const CSV = 'phone_number\n+14155550100\n'

async function grant(fileSize = CSV.length) {
  const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
    body: { file_name: 'leads.csv', file_size: fileSize },
  })
  expect(response.status).toBe(200)
  const { pathname, search } = new URL(response.body.upload_url)
  return { url: `${await t.httpUrl()}${pathname}${search}`, fileKey: response.body.file_key as string }
}

const put = (url: string, body: string) => fetch(url, { method: 'PUT', body, headers: { 'content-type': 'text/csv' } })
const stored = (fileKey: string) => readFileSync(join(t.dataDir, 'objects', fileKey), 'utf8')

test('the same signed URL a second time: 409 {detail}, and the file stays the first one', async () => {
  const { url, fileKey } = await grant()
  expect((await put(url, CSV)).status).toBe(200)
  const replay = await put(url, CSV.replace('0100', '0199'))
  expect(replay.status).toBe(409)
  expect(await replay.json()).toEqual({ detail: expect.stringContaining('used already') })
  expect(stored(fileKey)).toBe(CSV)
})

test('a PUT refused as too large leaves the URL usable', async () => {
  const { url, fileKey } = await grant()
  expect((await put(url, `${CSV}+14155550101\n`)).status).toBe(413)
  expect((await put(url, CSV)).status).toBe(200)
  expect(stored(fileKey)).toBe(CSV)
})

test('while one PUT streams, another of the same URL is a 409; the first one completes', async () => {
  const { url, fileKey } = await grant()
  const { hostname, port, pathname, search } = new URL(url)
  const socket = connect(Number(port), hostname)
  let answer = ''
  socket.on('data', (chunk) => {
    answer += chunk
  })
  const closed = new Promise((resolve) => socket.on('close', resolve))
  await new Promise((resolve) => socket.on('connect', resolve))
  socket.write(
    `PUT ${pathname}${search} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\nContent-Length: ${CSV.length}\r\nConnection: close\r\n\r\n`,
  )
  socket.write(CSV.slice(0, 5))
  // The first PUT has claimed the upload once it writes its partial file.
  await waitFor('the first PUT streaming', () => readdirSync(join(t.dataDir, 'objects', '.partial')).length > 0)
  const second = await put(url, CSV)
  expect(second.status).toBe(409)
  socket.write(CSV.slice(5))
  await closed
  expect(answer).toStartWith('HTTP/1.1 200')
  expect(stored(fileKey)).toBe(CSV)
})
