import { afterEach, beforeEach, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'

// The overview's health: the data dir's disk space, for admin keys (and their sessions) only.

let t: TestApp
beforeEach(() => { t = createTestApp() })
afterEach(() => t.close())

test('an admin key, or its browser session, sees the disk space of the data dir', async () => {
  const byKey = await t.request('GET', '/api/v1/health')
  expect(byKey.status).toBe(200)
  expect(byKey.body.disk).toEqual({ free_bytes: expect.any(Number), total_bytes: expect.any(Number) })
  expect(byKey.body.disk.total_bytes).toBeGreaterThan(0)
  expect(byKey.body.disk.free_bytes).toBeLessThanOrEqual(byKey.body.disk.total_bytes)
  const session = await t.request('POST', '/api/v1/auth/session', { key: null, body: { api_key: t.adminKey } })
  const cookie = session.headers.get('set-cookie')!.split(';')[0]
  const bySession = await t.request('GET', '/api/v1/health', { key: null, headers: { cookie } })
  expect(bySession.body.disk).toEqual({ free_bytes: expect.any(Number), total_bytes: expect.any(Number) })
})

test('without a key, with a wrong one or with a trigger key: health answers 200 without the disk', async () => {
  const trigger = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'trigger', scope: 'trigger' } })
  for (const key of [null, 'rb_wrong', trigger.body.api_key]) {
    const response = await t.request('GET', '/api/v1/health', { key })
    expect(response.status).toBe(200)
    expect(response.body.status).toBe('ok')
    expect(response.body).not.toHaveProperty('disk')
  }
})
