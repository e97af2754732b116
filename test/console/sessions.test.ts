import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { SESSION_LIFETIME_MS } from '../../src/auth/sessions'

// Browser sessions: made from an API key, acting as that key (organization, scope), with a CSRF token on writes.

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

async function signIn(apiKey = t.adminKey) {
  const response = await t.request('POST', '/api/v1/auth/session', { key: null, body: { api_key: apiKey } })
  expect(response.status).toBe(200)
  const cookie = response.headers.get('set-cookie')!
  return {
    cookie: cookie.split(';')[0],
    setCookie: cookie,
    csrf: response.body.session.csrf_token as string,
    body: response.body,
  }
}

describe('signing in', () => {
  test('a key gives an HttpOnly, SameSite=Strict cookie (not Secure over plain HTTP) and the CSRF token; the key is in neither', async () => {
    const { setCookie, body } = await signIn()
    expect(setCookie).toMatch(/^ringbase_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/)
    expect(setCookie).not.toContain(t.adminKey)
    expect(body).toEqual({
      organization_id: expect.any(Number),
      api_key_id: expect.any(Number),
      scope: 'admin',
      session: { expires_at: expect.any(String), csrf_token: expect.any(String) },
    })
    expect(JSON.stringify(body)).not.toContain(t.adminKey)
  })

  test('Secure when the request came over HTTPS (a proxy saying so)', async () => {
    const response = await t.request('POST', '/api/v1/auth/session', {
      key: null,
      body: { api_key: t.adminKey },
      headers: { 'x-forwarded-proto': 'https' },
    })
    expect(response.headers.get('set-cookie')).toEndWith('; Secure')
  })

  test('a wrong key: 401 {detail}, no cookie; a missing one: 422 naming the field', async () => {
    const wrong = await t.request('POST', '/api/v1/auth/session', { key: null, body: { api_key: 'rb_wrong' } })
    expect(wrong.status).toBe(401)
    expect(wrong.body).toEqual({ detail: expect.any(String) })
    expect(wrong.headers.get('set-cookie')).toBeNull()
    const missing = await t.request('POST', '/api/v1/auth/session', { key: null, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.detail[0].loc).toEqual(['body', 'api_key'])
  })
})

describe('the cookie acts as its key', () => {
  test('reads work with the cookie alone; GET session gives the same CSRF token again', async () => {
    const { cookie, csrf } = await signIn()
    const keys = await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })
    expect(keys.status).toBe(200)
    expect(keys.body).toHaveLength(1)
    const session = await t.request('GET', '/api/v1/auth/session', { key: null, headers: { cookie } })
    expect(session.body.session.csrf_token).toBe(csrf)
  })

  test('a write without the CSRF token, or with a wrong one, is refused (403) and changes nothing; with it, it works', async () => {
    const { cookie, csrf } = await signIn()
    const attempts: Record<string, string>[] = [{ cookie }, { cookie, 'x-csrf-token': 'forged' }]
    for (const headers of attempts) {
      const refused = await t.request('POST', '/api/v1/user/api-keys', {
        key: null,
        headers,
        body: { name: 'from another site' },
      })
      expect(refused.status).toBe(403)
      expect(refused.body.detail).toContain('X-CSRF-Token')
    }
    expect((await t.request('GET', '/api/v1/user/api-keys')).body).toHaveLength(1)
    const created = await t.request('POST', '/api/v1/user/api-keys', {
      key: null,
      headers: { cookie, 'x-csrf-token': csrf },
      body: { name: 'k' },
    })
    expect(created.status).toBe(200)
  })

  test("another session's CSRF token does not fit this session", async () => {
    const first = await signIn()
    const second = await signIn()
    const response = await t.request('POST', '/api/v1/user/api-keys', {
      key: null,
      headers: { cookie: first.cookie, 'x-csrf-token': second.csrf },
      body: { name: 'k' },
    })
    expect(response.status).toBe(403)
  })

  test('a trigger key signs in with its scope: admin operations are 403, its runs are readable', async () => {
    const trigger = t.newOrg('default', 'trigger').key
    const { cookie, body } = await signIn(trigger)
    expect(body.scope).toBe('trigger')
    expect((await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })).status).toBe(403)
    expect((await t.request('GET', '/api/v1/workflow/999/runs', { key: null, headers: { cookie } })).status).toBe(404)
  })

  test("a session sees only its organization's resources", async () => {
    const other = t.newOrg('other')
    const { cookie } = await signIn(other.key)
    const keys = await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })
    expect(keys.body.map((key: { name: string }) => key.name)).toEqual(['other key'])
  })

  test('X-API-Key requests are unaffected: a key wins over a cookie, and needs no CSRF token', async () => {
    const other = t.newOrg('other')
    const { cookie } = await signIn(other.key)
    const created = await t.request('POST', '/api/v1/user/api-keys', { headers: { cookie }, body: { name: 'by key' } })
    expect(created.status).toBe(200)
    const keys = await t.request('GET', '/api/v1/user/api-keys', { headers: { cookie } })
    expect(keys.body.map((key: { name: string }) => key.name)).toContain('by key')
    expect((await t.request('GET', '/api/v1/auth/session')).body.session).toBeNull()
  })
})

describe('the session ends', () => {
  test('on sign-out: the cookie is cleared and no longer works', async () => {
    const { cookie, csrf } = await signIn()
    const refused = await t.request('DELETE', '/api/v1/auth/session', { key: null, headers: { cookie } })
    expect(refused.status).toBe(403)
    const out = await t.request('DELETE', '/api/v1/auth/session', {
      key: null,
      headers: { cookie, 'x-csrf-token': csrf },
    })
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0')
    expect((await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })).status).toBe(401)
  })

  test('when it expires', async () => {
    const { cookie } = await signIn()
    ;(t.ctx.clock as unknown as { advance(ms: number): void }).advance(SESSION_LIFETIME_MS - 1000)
    expect((await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })).status).toBe(200)
    ;(t.ctx.clock as unknown as { advance(ms: number): void }).advance(2000)
    const expired = await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })
    expect(expired.status).toBe(401)
    expect(expired.body.detail).toContain('sign in again')
  })

  test('when its key is archived', async () => {
    const second = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'second' } })
    const { cookie } = await signIn(second.body.api_key)
    await t.request('DELETE', `/api/v1/user/api-keys/${second.body.id}`)
    expect((await t.request('GET', '/api/v1/user/api-keys', { key: null, headers: { cookie } })).status).toBe(401)
  })

  test('the database holds only a hash of the token', async () => {
    const { cookie } = await signIn()
    const token = cookie.split('=')[1]
    const rows = t.ctx.sqlite.query('SELECT * FROM sessions').all()
    expect(rows).toHaveLength(1)
    expect(JSON.stringify(rows)).not.toContain(token)
  })
})
