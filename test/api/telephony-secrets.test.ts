import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { CONFIGS_PATH, VALID_CONFIGS } from '../support/telephony'

// A stored secret never goes to an address the request names unless the request sends it too, and a masked value is
// never stored. Black-box; also run against the compiled binary.

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp()
})
afterAll(() => t.close())

const create = async (name: string, config: Record<string, unknown>) => {
  const response = await t.request('POST', CONFIGS_PATH, { body: { name, config } })
  expect(response.status, response.text).toBe(200)
  return response.body as { id: number; credentials: Record<string, any> }
}
const update = (id: number, config: Record<string, unknown>) =>
  t.request('PUT', `${CONFIGS_PATH}/${id}`, { body: { config } })
const locs = (response: { body: any }) => response.body.detail.map((item: { loc: unknown[] }) => item.loc)

describe('changing where a configuration connects needs its secrets again, in clear', () => {
  test('ARI: a new ari_endpoint with the masked password (what a GET shows) is a 422 naming app_password; nothing changes', async () => {
    const ari = await create('ari endpoint', VALID_CONFIGS.ari.config)
    const shown = (await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)).body.credentials
    for (const config of [
      { ari_endpoint: 'http://attacker.example:8088', app_password: shown.app_password },
      { ari_endpoint: 'http://attacker.example:8088' },
      { ...shown, ari_endpoint: 'http://attacker.example:8088' },
    ]) {
      const response = await update(ari.id, config)
      expect(response.status).toBe(422)
      expect(locs(response)).toEqual([['body', 'config', 'ari', 'app_password']])
      expect(response.body.detail[0].msg).toContain('ari_endpoint')
    }
    expect((await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)).body.credentials.ari_endpoint).toBe(
      'http://pbx.example.com:8088',
    )
  })

  test('ARI: with the password in clear the endpoint changes; the same endpoint with the mask still keeps the password', async () => {
    const ari = await create('ari moved', VALID_CONFIGS.ari.config)
    const moved = await update(ari.id, {
      ari_endpoint: 'http://pbx2.example.com:8088',
      app_password: 'S3cr3t-ari-password-02',
    })
    expect(moved.status).toBe(200)
    expect(moved.body.credentials).toMatchObject({
      ari_endpoint: 'http://pbx2.example.com:8088',
      app_password: '******************d-02',
    })
    const sameEndpoint = await update(ari.id, {
      ari_endpoint: 'http://pbx2.example.com:8088',
      app_password: '******************d-02',
      app_name: 'renamed',
    })
    expect(sameEndpoint.status).toBe(200)
  })

  test("ARI external PBX: a new agent API URL needs that API's username and password, not the ARI password", async () => {
    const ari = await create('ari pbx', VALID_CONFIGS.ari.config)
    const shown = (await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)).body.credentials
    const agentApi = { ...shown.external_pbx.agent_api, url: 'https://attacker.example/agc/api.php' }
    const refused = await update(ari.id, { external_pbx: { ...shown.external_pbx, agent_api: agentApi } })
    expect(refused.status).toBe(422)
    expect(locs(refused).sort()).toEqual([
      ['body', 'config', 'ari', 'external_pbx', 'agent_api', 'password'],
      ['body', 'config', 'ari', 'external_pbx', 'agent_api', 'username'],
    ])
    const accepted = await update(ari.id, {
      external_pbx: {
        ...shown.external_pbx,
        agent_api: { ...agentApi, username: 'new-user', password: 'new-password' },
      },
    })
    expect(accepted.status).toBe(200)
  })

  test('Exotel: a new api_base_url needs the account secrets again', async () => {
    const exotel = await create('exotel region', VALID_CONFIGS.exotel.config)
    const refused = await update(exotel.id, { api_base_url: 'https://attacker.example' })
    expect(refused.status).toBe(422)
    expect(locs(refused).sort()).toEqual([
      ['body', 'config', 'exotel', 'account_sid'],
      ['body', 'config', 'exotel', 'api_key'],
      ['body', 'config', 'exotel', 'api_token'],
    ])
    const accepted = await update(exotel.id, {
      api_base_url: 'https://api.exotel.com',
      account_sid: 'sid-2',
      api_key: 'key-2',
      api_token: 'token-2',
    })
    expect(accepted.status).toBe(200)
    expect(accepted.body.credentials.api_base_url).toBe('https://api.exotel.com')
  })
})

describe('a masked value is never stored', () => {
  test('a mask of another length is refused (the stored secret stays), on update and on create', async () => {
    const ari = await create('ari masks', VALID_CONFIGS.ari.config)
    const wrongLength = await update(ari.id, { app_password: '**********d-01' })
    expect(wrongLength.status).toBe(422)
    expect(locs(wrongLength)).toEqual([['body', 'config', 'ari', 'app_password']])
    const exactMask = (await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)).body.credentials.app_password
    expect((await update(ari.id, { app_password: exactMask })).status).toBe(200)
    const created = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'copied', config: { ...VALID_CONFIGS.twilio.config, auth_token: '*****oken' } },
    })
    expect(created.status).toBe(422)
    expect(locs(created)).toEqual([['body', 'config', 'twilio', 'auth_token']])
  })
})
