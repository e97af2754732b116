import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { otherConnection, storedDatabaseText } from '../support/postgres-databases'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

describe('API keys', () => {
  test('create returns the full key once; list shows only the prefix', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'ci' } })
    expect(created.status).toBe(200)
    expect(created.body.api_key).toMatch(/^rb_[A-Za-z0-9_-]{43}$/)
    expect(created.body.key_prefix).toBe(created.body.api_key.slice(0, 8))
    expect(created.body.scope).toBe('admin')
    const list = await t.request('GET', '/api/v1/user/api-keys')
    expect(list.status).toBe(200)
    expect(list.body.map((k: any) => k.name)).toEqual(['bootstrap admin', 'ci'])
    expect(list.text).not.toContain(created.body.api_key)
    expect(list.body[1]).toEqual({
      id: created.body.id,
      name: 'ci',
      key_prefix: created.body.key_prefix,
      scope: 'admin',
      is_active: true,
      created_at: created.body.created_at,
      last_used_at: null,
      archived_at: null,
    })
  })

  test('keys are stored hashed: the raw key is nowhere in the data at rest', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'secret' } })
    const raw = storedDatabaseText(t)
    expect(raw).not.toContain(created.body.api_key)
    expect(raw).not.toContain(t.adminKey)
  })

  test('the new key works, archiving revokes it at once, reactivating restores it', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'temp' } })
    const key = created.body.api_key
    expect((await t.request('GET', '/api/v1/user/api-keys', { key })).status).toBe(200)
    const archived = await t.request('DELETE', `/api/v1/user/api-keys/${created.body.id}`)
    expect(archived.body).toEqual({ success: true, message: 'API key archived successfully' })
    const denied = await t.request('GET', '/api/v1/user/api-keys', { key })
    expect(denied.status).toBe(401)
    expect(denied.body).toEqual({ detail: 'Invalid or expired API key' })
    const listed = await t.request('GET', '/api/v1/user/api-keys')
    expect(listed.body.map((k: any) => k.id)).not.toContain(created.body.id)
    const withArchived = await t.request('GET', '/api/v1/user/api-keys?include_archived=true')
    expect(withArchived.body.find((k: any) => k.id === created.body.id).archived_at).not.toBeNull()
    const reactivated = await t.request('PUT', `/api/v1/user/api-keys/${created.body.id}/reactivate`)
    expect(reactivated.body).toEqual({ success: true, message: 'API key reactivated successfully' })
    expect((await t.request('GET', '/api/v1/user/api-keys', { key })).status).toBe(200)
  })

  test('a key archived, reactivated or created by another process counts at once (authentication caches keys)', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'elsewhere' } })
    const key = created.body.api_key
    expect((await t.request('GET', '/api/v1/workflow/fetch', { key })).status).toBe(200)
    expect((await t.request('GET', '/api/v1/workflow/fetch', { key })).status).toBe(200)
    // Another process: its own connection to the same database file.
    const other = otherConnection(t)
    try {
      other.query("UPDATE api_keys SET archived_at = '2026-01-05T10:00:00.000Z' WHERE id = ?").run(created.body.id)
      expect((await t.request('GET', '/api/v1/workflow/fetch', { key })).status).toBe(401)
      other.query('UPDATE api_keys SET archived_at = NULL WHERE id = ?').run(created.body.id)
      expect((await t.request('GET', '/api/v1/workflow/fetch', { key })).status).toBe(200)
      other.query('UPDATE api_keys SET scope = ? WHERE id = ?').run('trigger', created.body.id)
      expect((await t.request('GET', '/api/v1/workflow/fetch', { key })).status).toBe(403)
      const minted = `rb_${'m'.repeat(43)}`
      other
        .query(
          "INSERT INTO api_keys (organization_id, name, scope, key_hash, key_prefix, created_at) VALUES (1, 'minted', 'admin', ?, 'rb_mmmmm', '2026-01-05T10:00:00.000Z')",
        )
        .run(new Bun.CryptoHasher('sha256').update(minted).digest('hex'))
      expect((await t.request('GET', '/api/v1/workflow/fetch', { key: minted })).status).toBe(200)
    } finally {
      other.close()
    }
  })

  test('last_used_at is set when a key is used', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'used' } })
    await t.request('GET', '/api/v1/user/api-keys', { key: created.body.api_key })
    const list = await t.request('GET', '/api/v1/user/api-keys')
    expect(list.body.find((k: any) => k.id === created.body.id).last_used_at).toBe('2026-01-05T10:00:00.000Z')
  })

  test('missing and unknown keys answer 401 with a string detail', async () => {
    for (const key of [null, 'rb_nope', '']) {
      const response = await t.request('GET', '/api/v1/user/api-keys', { key })
      expect(response.status).toBe(401)
      expect(typeof response.body.detail).toBe('string')
    }
  })

  test("another organization's key id answers 404 and its keys never show", async () => {
    const other = t.newOrg('acme')
    const mine = await t.request('GET', '/api/v1/user/api-keys')
    const theirs = await t.request('GET', '/api/v1/user/api-keys', { key: other.key })
    expect(theirs.body).toHaveLength(1)
    expect(theirs.body[0].name).toBe('acme key')
    const response = await t.request('DELETE', `/api/v1/user/api-keys/${mine.body[0].id}`, { key: other.key })
    expect(response.status).toBe(404)
    expect(response.body).toEqual({ detail: 'API key not found' })
    expect((await t.request('GET', '/api/v1/user/api-keys')).status).toBe(200)
  })

  test('a trigger-scoped key is refused with 403 on admin endpoints', async () => {
    const trigger = t.newOrg('robots', 'trigger')
    const response = await t.request('GET', '/api/v1/user/api-keys', { key: trigger.key })
    expect(response.status).toBe(403)
    expect(typeof response.body.detail).toBe('string')
  })

  test('authentication runs before validation: bad key + bad body is 401', async () => {
    const response = await t.request('POST', '/api/v1/user/api-keys', { key: 'rb_wrong', body: { name: '' } })
    expect(response.status).toBe(401)
  })

  test('validation errors name the field the Pydantic way', async () => {
    const empty = await t.request('POST', '/api/v1/user/api-keys', { body: { name: '' } })
    expect(empty.status).toBe(422)
    expect(empty.body.detail).toEqual([
      {
        type: 'string_too_short',
        loc: ['body', 'name'],
        msg: 'String should have at least 1 character',
        input: '',
        ctx: { min_length: 1 },
      },
    ])
    const noBody = await t.request('POST', '/api/v1/user/api-keys')
    expect(noBody.body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }])
    const scope = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'x', scope: 'root' } })
    expect(scope.body.detail[0]).toMatchObject({
      type: 'literal_error',
      loc: ['body', 'scope'],
      msg: "Input should be 'admin' or 'trigger'",
    })
    const path = await t.request('DELETE', '/api/v1/user/api-keys/abc')
    expect(path.body.detail).toEqual([
      {
        type: 'int_parsing',
        loc: ['path', 'api_key_id'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'abc',
      },
    ])
  })
})
