import { afterEach, beforeEach, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { deadBaseUrl, startFakeModels } from '../support/fake-models'

// The overview's health: the data dir's disk space (admin keys and their sessions only) and each model server's last check.

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
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

test("a model server's last check (ok or not, when, why) is kept and shown with the connection; another org's is 404", async () => {
  const models = startFakeModels()
  try {
    const CONNECTIONS = '/api/v1/organizations/provider-connections'
    const up = (
      await t.request('POST', CONNECTIONS, { body: { name: 'Up', provider: 'openai', base_url: models.baseUrl } })
    ).body
    const down = (
      await t.request('POST', CONNECTIONS, { body: { name: 'Down', provider: 'openai', base_url: deadBaseUrl() } })
    ).body
    expect(up.last_check).toBeNull()
    expect((await t.request('POST', `${CONNECTIONS}/${up.uuid}/check`)).body.ok).toBe(true)
    const failed = await t.request('POST', `${CONNECTIONS}/${down.uuid}/check`)
    expect(failed.body.ok).toBe(false)
    const listed = (await t.request('GET', CONNECTIONS)).body.connections
    expect(listed.find((item: { name: string }) => item.name === 'Up').last_check).toEqual({
      ok: true,
      at: expect.any(String),
      error: null,
    })
    expect(listed.find((item: { name: string }) => item.name === 'Down').last_check).toEqual({
      ok: false,
      at: expect.any(String),
      error: failed.body.error,
    })
    expect((await t.request('GET', `${CONNECTIONS}/${up.uuid}`)).body.last_check.ok).toBe(true)
    const other = t.newOrg('other')
    expect((await t.request('POST', `${CONNECTIONS}/${up.uuid}/check`, { key: other.key })).status).toBe(404)
  } finally {
    models.stop()
  }
})
