import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { getConfigCredentials, markInactive } from '../../src/telephony/config/configurations'
import { PROVIDER_NAMES, type ProviderName } from '../../src/telephony/config/providers'
import { createTestApp, type TestApp } from '../support/app'
import { addPhoneNumber, CONFIGS_PATH, createConfiguration, VALID_CONFIGS } from '../support/telephony'
import { sqliteOnlyTest, storedDatabaseText } from '../support/postgres-databases'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const ALL_SECRETS = Object.values(VALID_CONFIGS).flatMap((entry) => entry.secrets)

async function createEveryProvider(): Promise<Record<ProviderName, any>> {
  const created: Partial<Record<ProviderName, any>> = {}
  for (const provider of PROVIDER_NAMES)
    created[provider] = await createConfiguration(t, `${provider} account`, VALID_CONFIGS[provider].config)
  return created as Record<ProviderName, any>
}

const storedCredentials = (id: number) => getConfigCredentials(t.ctx, id)!.credentials

/** The database file and its WAL, as text, after everything was written back to the file. */
const rawDatabase = () => storedDatabaseText(t)

describe('telephony configurations: the nine provider variants', () => {
  test.each(PROVIDER_NAMES.map((provider) => [provider]))(
    'a valid %s configuration is stored with its defaults and shown masked',
    async (provider) => {
      const { config, secrets } = VALID_CONFIGS[provider]
      const created = await createConfiguration(t, 'main', config)
      expect(created).toMatchObject({
        name: 'main',
        provider,
        is_default_outbound: false,
        inactive: false,
        inactive_since: null,
        inactive_reason: null,
      })
      const shown = JSON.stringify(created)
      for (const secret of secrets) expect(shown).not.toContain(secret)
      const stored = storedCredentials(created.id)
      for (const secret of secrets) expect(JSON.stringify(stored)).toContain(secret)
      expect(stored.provider).toBeUndefined()
      expect(stored.from_numbers).toBeUndefined()
    },
  )

  test('defaults of the spec table are filled in and from_numbers is ignored', async () => {
    const { ari, cloudonix, exotel, telnyx, vonage } = await createEveryProvider()
    expect(ari.credentials).toMatchObject({
      ws_client_name: '',
      dial_string_template: 'PJSIP/{number}',
      external_pbx: {
        type: 'vicidial',
        timeout_seconds: 8,
        agent_api: { source: 'ringbase' },
        non_agent_api: { source: 'ringbase' },
      },
    })
    expect(cloudonix.credentials.domain_id).toBe('acme.cloudonix.net')
    expect(exotel.credentials.api_base_url).toBe('https://api.in.exotel.com')
    expect(exotel.credentials.from_numbers).toBeUndefined()
    expect(telnyx.credentials.webhook_public_key).toBeNull()
    expect(vonage.credentials.application_id).toBe('vonage-app')
    const plain = await createConfiguration(t, 'plain ari', { ...VALID_CONFIGS.ari.config, external_pbx: undefined })
    expect(plain.credentials.external_pbx).toBeNull()
  })

  test('responses mask every sensitive value but its last 4 characters, nested ones included', async () => {
    const { ari, twilio, vonage } = await createEveryProvider()
    expect(ari.credentials.app_password).toBe(`${'*'.repeat('S3cr3t-ari-password-01'.length - 4)}d-01`)
    expect(ari.credentials.external_pbx.agent_api).toMatchObject({
      username: '******************user',
      password: '******************pass',
    })
    expect(ari.credentials.external_pbx.non_agent_api.password).toBe('****************pass')
    expect(ari.credentials.ari_endpoint).toBe('http://pbx.example.com:8088')
    expect(twilio.credentials).toEqual({ account_sid: '*************-sid', auth_token: '***************oken' })
    expect(vonage.credentials.application_id).toBe('vonage-app')
  })

  test('server-minted values: ARI Stasis app and WhatsApp verify token (never read from the request)', async () => {
    const ari = await createConfiguration(t, 'pbx', {
      ...VALID_CONFIGS.ari.config,
      stasis_app_name: 'chosen-by-client',
    })
    const other = await createConfiguration(t, 'pbx 2', VALID_CONFIGS.ari.config)
    expect(ari.credentials.stasis_app_name).toMatch(/^ringbase_[0-9a-f]{12}$/)
    expect(other.credentials.stasis_app_name).not.toBe(ari.credentials.stasis_app_name)
    const whatsapp = await createConfiguration(t, 'wa', {
      ...VALID_CONFIGS.whatsapp.config,
      webhook_verify_token: 'chosen-by-client',
    })
    const token = whatsapp.credentials.webhook_verify_token
    expect(token).toMatch(/^[0-9a-f]{32}$/)

    for (const [created, field, value] of [
      [ari, 'stasis_app_name', ari.credentials.stasis_app_name],
      [whatsapp, 'webhook_verify_token', token],
    ]) {
      const updated = await t.request('PUT', `${CONFIGS_PATH}/${created.id}`, {
        body: { config: { [field]: 'changed-by-client' } },
      })
      expect(updated.status).toBe(200)
      expect(updated.body.credentials[field]).toBe(value)
    }
  })

  const INVALID: [string, unknown, { type: string; loc: (string | number)[] }][] = [
    ['unknown provider', { provider: 'foo' }, { type: 'union_tag_invalid', loc: ['body', 'config'] }],
    ['no provider', { account_sid: 'x' }, { type: 'union_tag_not_found', loc: ['body', 'config'] }],
    [
      'ari: endpoint not a URL',
      { ...VALID_CONFIGS.ari.config, ari_endpoint: 'pbx:8088' },
      { type: 'string_pattern_mismatch', loc: ['body', 'config', 'ari', 'ari_endpoint'] },
    ],
    [
      'ari: no password',
      { provider: 'ari', ari_endpoint: 'http://pbx:8088', app_name: 'u' },
      { type: 'missing', loc: ['body', 'config', 'ari', 'app_password'] },
    ],
    [
      'ari: template without {number}',
      { ...VALID_CONFIGS.ari.config, dial_string_template: 'PJSIP/x' },
      { type: 'string_pattern_mismatch', loc: ['body', 'config', 'ari', 'dial_string_template'] },
    ],
    [
      'ari: pbx timeout 0',
      {
        ...VALID_CONFIGS.ari.config,
        external_pbx: { agent_api: { url: 'http://d/agc', username: 'u', password: 'p' }, timeout_seconds: 0 },
      },
      { type: 'greater_than_equal', loc: ['body', 'config', 'ari', 'external_pbx', 'timeout_seconds'] },
    ],
    [
      'ari: pbx timeout 31',
      {
        ...VALID_CONFIGS.ari.config,
        external_pbx: { agent_api: { url: 'http://d/agc', username: 'u', password: 'p' }, timeout_seconds: 31 },
      },
      { type: 'less_than_equal', loc: ['body', 'config', 'ari', 'external_pbx', 'timeout_seconds'] },
    ],
    [
      'ari: pbx without agent_api',
      { ...VALID_CONFIGS.ari.config, external_pbx: {} },
      { type: 'missing', loc: ['body', 'config', 'ari', 'external_pbx', 'agent_api'] },
    ],
    [
      'ari: non-agent API without password',
      {
        ...VALID_CONFIGS.ari.config,
        external_pbx: {
          agent_api: { url: 'http://d/agc', username: 'u', password: 'p' },
          non_agent_api: { url: 'http://d/n', username: 'u' },
        },
      },
      { type: 'value_error', loc: ['body', 'config', 'ari', 'external_pbx', 'non_agent_api'] },
    ],
    [
      'ari: dial string template with Dial() options',
      { ...VALID_CONFIGS.ari.config, dial_string_template: 'PJSIP/{number},30' },
      { type: 'value_error', loc: ['body', 'config', 'ari', 'dial_string_template'] },
    ],
    [
      'ari: dial string template ringing a second channel',
      { ...VALID_CONFIGS.ari.config, dial_string_template: 'PJSIP/{number}&PJSIP/listener' },
      { type: 'value_error', loc: ['body', 'config', 'ari', 'dial_string_template'] },
    ],
    [
      'ari: dial string template without a channel technology',
      { ...VALID_CONFIGS.ari.config, dial_string_template: '{number}@trunk' },
      { type: 'value_error', loc: ['body', 'config', 'ari', 'dial_string_template'] },
    ],
    [
      'cloudonix: no domain',
      { provider: 'cloudonix', bearer_token: 'x' },
      { type: 'missing', loc: ['body', 'config', 'cloudonix', 'domain_id'] },
    ],
    [
      'exotel: no token',
      { provider: 'exotel', account_sid: 'a', api_key: 'k' },
      { type: 'missing', loc: ['body', 'config', 'exotel', 'api_token'] },
    ],
    [
      'plivo: auth_id not a string',
      { provider: 'plivo', auth_id: 5, auth_token: 't' },
      { type: 'string_type', loc: ['body', 'config', 'plivo', 'auth_id'] },
    ],
    ['telnyx: no api key', { provider: 'telnyx' }, { type: 'missing', loc: ['body', 'config', 'telnyx', 'api_key'] }],
    [
      'twilio: no token',
      { provider: 'twilio', account_sid: 'AC1' },
      { type: 'missing', loc: ['body', 'config', 'twilio', 'auth_token'] },
    ],
    [
      'vobiz: no token',
      { provider: 'vobiz', auth_id: 'a' },
      { type: 'missing', loc: ['body', 'config', 'vobiz', 'auth_token'] },
    ],
    [
      'vonage: no private key',
      { provider: 'vonage', api_key: 'k', api_secret: 's', application_id: 'a' },
      { type: 'missing', loc: ['body', 'config', 'vonage', 'private_key'] },
    ],
    [
      'whatsapp: empty access token',
      { ...VALID_CONFIGS.whatsapp.config, access_token: '' },
      { type: 'string_too_short', loc: ['body', 'config', 'whatsapp', 'access_token'] },
    ],
    [
      'whatsapp: no waba id',
      { provider: 'whatsapp', access_token: 'a', app_secret: 's' },
      { type: 'missing', loc: ['body', 'config', 'whatsapp', 'waba_id'] },
    ],
  ]

  test.each(INVALID)('422 %s', async (_name, config, expected) => {
    const response = await t.request('POST', CONFIGS_PATH, { body: { name: 'bad', config } })
    expect(response.status).toBe(422)
    expect(response.body.detail).toContainEqual(expect.objectContaining(expected))
    expect((await t.request('GET', CONFIGS_PATH)).body.configurations).toEqual([])
  })

  test.each([
    'Local/{number}@from-internal',
    'PJSIP/mytrunk/sip:{number}@carrier.example.com',
    'SIP/{number}@provider',
    'DAHDI/g1/{number}',
  ])('an ARI dial string template Asterisk reads as one channel is stored: %s', async (template) => {
    const created = await t.request('POST', CONFIGS_PATH, {
      body: { name: `pbx ${template}`, config: { ...VALID_CONFIGS.ari.config, dial_string_template: template } },
    })
    expect(created.status, created.text).toBe(200)
    const read = await t.request('GET', `${CONFIGS_PATH}/${created.body.id}`)
    expect(read.body.credentials.dial_string_template).toBe(template)
  })

  test('422 items of the tag errors are worded like the reference', async () => {
    const unknown = await t.request('POST', CONFIGS_PATH, { body: { name: 'bad', config: { provider: 'foo' } } })
    expect(unknown.body.detail[0]).toMatchObject({
      msg: "Input tag 'foo' found using 'provider' does not match any of the expected tags: 'ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp'",
      ctx: { discriminator: "'provider'", tag: 'foo' },
    })
    const none = await t.request('POST', CONFIGS_PATH, { body: { name: 'bad', config: {} } })
    expect(none.body.detail[0]).toMatchObject({
      msg: "Unable to extract tag using discriminator 'provider'",
      ctx: { discriminator: "'provider'" },
    })
  })

  test('422 on the request fields: name 1–64 characters, config required', async () => {
    const cases: [unknown, { type: string; loc: string[] }][] = [
      [
        { name: '', config: VALID_CONFIGS.twilio.config },
        { type: 'string_too_short', loc: ['body', 'name'] },
      ],
      [
        { name: 'x'.repeat(65), config: VALID_CONFIGS.twilio.config },
        { type: 'string_too_long', loc: ['body', 'name'] },
      ],
      [{ name: 'x' }, { type: 'missing', loc: ['body', 'config'] }],
    ]
    for (const [body, expected] of cases) {
      const response = await t.request('POST', CONFIGS_PATH, { body })
      expect(response.status).toBe(422)
      expect(response.body.detail).toContainEqual(expect.objectContaining(expected))
    }
  })
})

describe('telephony configurations: secrets', () => {
  test('no secret is stored in clear: the data at rest does not contain any', async () => {
    const created = await createEveryProvider()
    await t.request('PUT', `${CONFIGS_PATH}/${created.twilio.id}`, {
      body: { config: { auth_token: 'S3cr3t-twilio-rotated' } },
    })
    const raw = rawDatabase()
    for (const secret of [...ALL_SECRETS, 'S3cr3t-twilio-rotated']) expect(raw).not.toContain(secret)
    expect(raw).toContain('http://pbx.example.com:8088')
  })

  test('no secret reaches the log, on success or on a provider failure', async () => {
    const created = await createEveryProvider()
    await t.request('PUT', `${CONFIGS_PATH}/${created.vonage.id}`, {
      body: { config: { api_secret: 'S3cr3t-vonage-rotated' } },
    })
    const unreachable = await t.request('POST', CONFIGS_PATH, {
      body: {
        name: 'new plivo',
        config: { provider: 'plivo', auth_id: 'S3cr3t-failing-id', auth_token: 'S3cr3t-failing-token' },
      },
    })
    expect(unreachable.status).toBe(502)
    const log = t.logText()
    expect(log).toContain('telephony configuration created')
    for (const secret of [...ALL_SECRETS, 'S3cr3t-vonage-rotated', 'S3cr3t-failing-id', 'S3cr3t-failing-token'])
      expect(log).not.toContain(secret)
  })

  test('masking round trip: PUT of the GET credentials unchanged keeps every secret of every provider', async () => {
    const created = await createEveryProvider()
    for (const provider of PROVIDER_NAMES) {
      const before = storedCredentials(created[provider].id)
      const shown = await t.request('GET', `${CONFIGS_PATH}/${created[provider].id}`)
      const resent = await t.request('PUT', `${CONFIGS_PATH}/${created[provider].id}`, {
        body: { name: shown.body.name, config: { provider, ...shown.body.credentials } },
      })
      expect(resent.status, `${provider}: ${resent.text}`).toBe(200)
      expect(resent.body.credentials).toEqual(shown.body.credentials)
      expect(storedCredentials(created[provider].id)).toEqual(before)
    }
  })

  test('a new value replaces the secret; a mask of another length is refused and keeps it', async () => {
    const { twilio } = await createEveryProvider()
    const rotated = await t.request('PUT', `${CONFIGS_PATH}/${twilio.id}`, {
      body: { config: { auth_token: 'S3cr3t-new-token-9876' } },
    })
    expect(rotated.body.credentials.auth_token).toBe('*****************9876')
    expect(storedCredentials(twilio.id)).toEqual({
      account_sid: 'S3cr3t-twilio-sid',
      auth_token: 'S3cr3t-new-token-9876',
    })
    const wrongMask = await t.request('PUT', `${CONFIGS_PATH}/${twilio.id}`, {
      body: { config: { auth_token: '****9876' } },
    })
    expect(wrongMask.status).toBe(422)
    expect(wrongMask.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'config', 'twilio', 'auth_token'], input: '****9876' }),
    ])
    expect(storedCredentials(twilio.id).auth_token).toBe('S3cr3t-new-token-9876')
  })

  test('the master key file is created with mode 0600 in the data dir', () => {
    const keyFile = join(t.dataDir, 'master.key')
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
  })

  test('with RINGBASE_MASTER_KEY set no key file is written, and secrets still round-trip', async () => {
    const withEnvKey = createTestApp({ env: { RINGBASE_MASTER_KEY: 'ab'.repeat(32) } })
    try {
      expect(existsSync(join(withEnvKey.dataDir, 'master.key'))).toBe(false)
      const created = await createConfiguration(withEnvKey, 'tw', VALID_CONFIGS.twilio.config)
      expect(getConfigCredentials(withEnvKey.ctx, created.id)!.credentials.auth_token).toBe('S3cr3t-twilio-token')
    } finally {
      withEnvKey.close()
    }
  })
})

describe('telephony configurations: update, delete, names', () => {
  test('update is partial: only the sent fields change', async () => {
    const { vonage } = await createEveryProvider()
    const renamed = await t.request('PUT', `${CONFIGS_PATH}/${vonage.id}`, { body: { name: 'vonage renamed' } })
    expect(renamed.body.name).toBe('vonage renamed')
    const partial = await t.request('PUT', `${CONFIGS_PATH}/${vonage.id}`, {
      body: { config: { application_id: 'vonage-app-2' } },
    })
    expect(partial.status).toBe(200)
    expect(storedCredentials(vonage.id)).toMatchObject({
      api_key: 'S3cr3t-vonage-key',
      signature_secret: 'S3cr3t-vonage-signature',
      application_id: 'vonage-app-2',
    })
  })

  test('the provider cannot change (400); an unknown one is a 422; field errors name the stored variant', async () => {
    const { ari } = await createEveryProvider()
    const changed = await t.request('PUT', `${CONFIGS_PATH}/${ari.id}`, {
      body: { config: { ...VALID_CONFIGS.twilio.config } },
    })
    expect(changed.status).toBe(400)
    expect(changed.body).toEqual({ detail: 'Provider cannot be changed; create a new configuration instead.' })
    const unknown = await t.request('PUT', `${CONFIGS_PATH}/${ari.id}`, { body: { config: { provider: 'foo' } } })
    expect(unknown.body.detail[0]).toMatchObject({ type: 'union_tag_invalid', loc: ['body', 'config'] })
    const invalid = await t.request('PUT', `${CONFIGS_PATH}/${ari.id}`, { body: { config: { app_password: 5 } } })
    expect(invalid.status).toBe(422)
    expect(invalid.body.detail[0]).toMatchObject({
      type: 'string_type',
      loc: ['body', 'config', 'ari', 'app_password'],
    })
  })

  test('a duplicate name is a 409 on create and on update, never a 500', async () => {
    await createConfiguration(t, 'main', VALID_CONFIGS.twilio.config)
    const other = await createConfiguration(t, 'other', VALID_CONFIGS.twilio.config)
    const duplicate = await t.request('POST', CONFIGS_PATH, {
      body: { name: 'main', config: VALID_CONFIGS.ari.config },
    })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body).toEqual({
      detail: "A telephony configuration named 'main' already exists in this organization. Pick a different name.",
    })
    const renamed = await t.request('PUT', `${CONFIGS_PATH}/${other.id}`, { body: { name: 'main' } })
    expect(renamed.status).toBe(409)
    const concurrent = await Promise.all(
      [1, 2, 3].map(() =>
        t.request('POST', CONFIGS_PATH, { body: { name: 'race', config: VALID_CONFIGS.twilio.config } }),
      ),
    )
    expect(concurrent.map((response) => response.status).sort()).toEqual([200, 409, 409])
  })

  sqliteOnlyTest(
    'delete removes the configuration with its phone numbers; a campaign using it blocks it (409)',
    async () => {
      const used = await createConfiguration(t, 'used', VALID_CONFIGS.twilio.config)
      const free = await createConfiguration(t, 'free', VALID_CONFIGS.plivo.config)
      await addPhoneNumber(t, free.id, { address: '+14155550100' })
      insertCampaignUsing(used.id)
      const blocked = await t.request('DELETE', `${CONFIGS_PATH}/${used.id}`)
      expect(blocked.status).toBe(409)
      expect(blocked.body).toEqual({
        detail: `Telephony configuration ${used.id} is referenced by one or more campaigns and cannot be deleted.`,
      })
      const deleted = await t.request('DELETE', `${CONFIGS_PATH}/${free.id}`)
      expect(deleted.body).toEqual({ message: 'Telephony configuration deleted' })
      expect((await t.request('GET', `${CONFIGS_PATH}/${free.id}`)).status).toBe(404)
      expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM phone_numbers').get()).toEqual({ n: 0 })
      expect((await t.request('DELETE', `${CONFIGS_PATH}/${free.id}`)).status).toBe(404)
    },
  )
})

/** A campaign row pointing at the configuration, whether or not the campaigns migration has landed yet. */
function insertCampaignUsing(configurationId: number): void {
  const columns = t.ctx.sqlite
    .query<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }, []>(
      'PRAGMA table_info(campaigns)',
    )
    .all()
  if (columns.length === 0) {
    t.ctx.sqlite.run('CREATE TABLE campaigns (id INTEGER PRIMARY KEY, telephony_configuration_id INTEGER)')
    t.ctx.sqlite.run('INSERT INTO campaigns (telephony_configuration_id) VALUES (?)', [configurationId])
    return
  }
  const placeholders: Record<string, unknown> = {
    state: 'draft',
    source_type: 'csv',
    organization_id: 1,
    telephony_configuration_id: configurationId,
  }
  const required = columns.filter(
    (column) =>
      (column.notnull && column.dflt_value === null && !column.pk) || column.name === 'telephony_configuration_id',
  )
  const values = required.map((column) => placeholders[column.name] ?? (column.type === 'INTEGER' ? 0 : '{}'))
  t.ctx.sqlite.run('PRAGMA foreign_keys = OFF')
  t.ctx.sqlite.run(
    `INSERT INTO campaigns (${required.map((column) => column.name).join(', ')}) VALUES (${required.map(() => '?').join(', ')})`,
    values as never,
  )
  t.ctx.sqlite.run('PRAGMA foreign_keys = ON')
}

describe('telephony configurations: default outbound', () => {
  const defaults = async () =>
    (await t.request('GET', CONFIGS_PATH)).body.configurations
      .filter((config: any) => config.is_default_outbound)
      .map((config: any) => config.name)

  test('creating with is_default_outbound moves the default; set-default-outbound too; creating never claims it', async () => {
    await createConfiguration(t, 'first', VALID_CONFIGS.twilio.config)
    expect(await defaults()).toEqual([])
    await createConfiguration(t, 'second', VALID_CONFIGS.twilio.config, { isDefaultOutbound: true })
    const third = await createConfiguration(t, 'third', VALID_CONFIGS.ari.config, { isDefaultOutbound: true })
    expect(await defaults()).toEqual(['third'])
    const first = (await t.request('GET', CONFIGS_PATH)).body.configurations[0]
    const set = await t.request('POST', `${CONFIGS_PATH}/${first.id}/set-default-outbound`)
    expect(set.status).toBe(200)
    expect(set.body.is_default_outbound).toBe(true)
    expect(await defaults()).toEqual(['first'])
    expect((await t.request('GET', `${CONFIGS_PATH}/${third.id}`)).body.is_default_outbound).toBe(false)
  })

  test('concurrent set-default and create-with-default requests leave exactly one default', async () => {
    const existing = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => createConfiguration(t, `existing ${n}`, VALID_CONFIGS.twilio.config)),
    )
    const requests = [
      ...existing.map((config) => t.request('POST', `${CONFIGS_PATH}/${config.id}/set-default-outbound`)),
      ...[1, 2, 3, 4, 5].map((n) =>
        t.request('POST', CONFIGS_PATH, {
          body: { name: `new ${n}`, is_default_outbound: true, config: VALID_CONFIGS.ari.config },
        }),
      ),
    ]
    const responses = await Promise.all(requests)
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200))
    expect(await defaults()).toHaveLength(1)
  })

  test('the database itself refuses a second default in one organization', async () => {
    const first = await createConfiguration(t, 'first', VALID_CONFIGS.twilio.config, { isDefaultOutbound: true })
    const second = await createConfiguration(t, 'second', VALID_CONFIGS.twilio.config)
    expect(() =>
      t.ctx.sqlite.run('UPDATE telephony_configurations SET is_default_outbound = 1 WHERE id = ?', [second.id]),
    ).toThrow('UNIQUE constraint failed: telephony_configurations.organization_id')
    expect(first.is_default_outbound).toBe(true)
  })

  test('each organization has its own default', async () => {
    const acme = t.newOrg('acme')
    await createConfiguration(t, 'mine', VALID_CONFIGS.twilio.config, { isDefaultOutbound: true })
    await createConfiguration(t, 'theirs', VALID_CONFIGS.twilio.config, { key: acme.key, isDefaultOutbound: true })
    expect(await defaults()).toEqual(['mine'])
  })
})

describe('telephony configurations: readiness, inactive, connection', () => {
  test('carrier providers need an active caller id before they are ready for outbound', async () => {
    const plivo = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    expect(plivo.setup_checklist).toMatchObject({
      ready_for_outbound: false,
      steps: [{ key: 'caller_id', complete: false, blocks_outbound: true }],
    })
    expect(plivo.setup_checklist.outbound_blocked_reason).toBe(plivo.setup_checklist.steps[0].description)
    const listed = async () => (await t.request('GET', CONFIGS_PATH)).body.configurations[0]
    expect(await listed()).toMatchObject({ phone_number_count: 0, is_ready_for_outbound: false })
    await addPhoneNumber(t, plivo.id, { address: '+14155550100', is_active: false })
    expect(await listed()).toMatchObject({ phone_number_count: 0, is_ready_for_outbound: false })
    await addPhoneNumber(t, plivo.id, { address: '+14155550101' })
    expect(await listed()).toMatchObject({
      phone_number_count: 1,
      is_ready_for_outbound: true,
      outbound_blocked_reason: null,
    })
    const detail = await t.request('GET', `${CONFIGS_PATH}/${plivo.id}`)
    expect(detail.body.setup_checklist).toMatchObject({
      ready_for_outbound: true,
      outbound_blocked_reason: null,
      steps: [{ key: 'caller_id', complete: true }],
    })
  })

  test('ARI has no checklist and is ready unless inactive; only reactivate clears inactive', async () => {
    const ari = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    expect(ari.setup_checklist).toBeNull()
    expect((await t.request('GET', CONFIGS_PATH)).body.configurations[0].is_ready_for_outbound).toBe(true)
    expect(markInactive(t.ctx, ari.id, 'connection_refused: ARI unreachable')).toBe(true)
    expect(markInactive(t.ctx, ari.id, 'again')).toBe(false)
    const inactive = await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)
    expect(inactive.body).toMatchObject({
      inactive: true,
      inactive_since: '2026-01-05T10:00:00.000Z',
      inactive_reason: 'connection_refused: ARI unreachable',
    })
    expect((await t.request('GET', CONFIGS_PATH)).body.configurations[0]).toMatchObject({
      inactive: true,
      is_ready_for_outbound: false,
    })
    const edited = await t.request('PUT', `${CONFIGS_PATH}/${ari.id}`, {
      body: { name: 'pbx edited', config: { app_password: 'S3cr3t-new' } },
    })
    expect(edited.body.inactive).toBe(true)
    const reactivated = await t.request('POST', `${CONFIGS_PATH}/${ari.id}/reactivate`)
    expect(reactivated.body).toMatchObject({ inactive: false, inactive_since: null, inactive_reason: null })
  })

  test('WhatsApp carries no outbound calls: never ready, whatever its numbers', async () => {
    const whatsapp = await createConfiguration(t, 'wa', VALID_CONFIGS.whatsapp.config)
    await addPhoneNumber(t, whatsapp.id, { address: '+14155550100' })
    const detail = await t.request('GET', `${CONFIGS_PATH}/${whatsapp.id}`)
    expect(detail.body).toMatchObject({ supports_outbound: false, setup_checklist: { ready_for_outbound: false } })
    expect((await t.request('GET', CONFIGS_PATH)).body.configurations[0].is_ready_for_outbound).toBe(false)
  })

  test('connected: live ARI state from the connection manager hook, null for HTTP providers', async () => {
    const ari = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    const twilio = await createConfiguration(t, 'tw', VALID_CONFIGS.twilio.config)
    expect(ari.connected).toBe(false)
    expect(twilio.connected).toBeNull()
    t.ctx.ariConnected = (configurationId) => configurationId === ari.id
    expect((await t.request('GET', `${CONFIGS_PATH}/${ari.id}`)).body.connected).toBe(true)
    expect((await t.request('GET', CONFIGS_PATH)).body.configurations.map((config: any) => config.connected)).toEqual([
      true,
      null,
    ])
  })

  test('capability flags come from the provider', async () => {
    const created = await createEveryProvider()
    expect(created.cloudonix).toMatchObject({
      connectivity: 'sip',
      supports_trunks: true,
      supports_outbound: true,
      supports_phone_number_sync: true,
    })
    expect(created.ari).toMatchObject({
      connectivity: 'sip',
      supports_trunks: false,
      supports_phone_number_sync: false,
    })
    expect(created.twilio).toMatchObject({
      connectivity: 'api',
      supports_trunks: false,
      trunks: [],
      supports_phone_number_sync: true,
    })
  })
})

describe('telephony configurations: organizations and metadata', () => {
  test("another organization's configuration does not exist for it", async () => {
    const acme = t.newOrg('acme')
    const mine = await createConfiguration(t, 'mine', VALID_CONFIGS.twilio.config)
    await createConfiguration(t, 'theirs', VALID_CONFIGS.twilio.config, { key: acme.key })
    const attempts: [string, string, unknown?][] = [
      ['GET', `${CONFIGS_PATH}/${mine.id}`],
      ['PUT', `${CONFIGS_PATH}/${mine.id}`, { name: 'stolen' }],
      ['DELETE', `${CONFIGS_PATH}/${mine.id}`],
      ['POST', `${CONFIGS_PATH}/${mine.id}/set-default-outbound`],
      ['POST', `${CONFIGS_PATH}/${mine.id}/reactivate`],
      ['GET', `${CONFIGS_PATH}/${mine.id}/phone-numbers`],
      ['POST', `${CONFIGS_PATH}/${mine.id}/phone-numbers`, { address: '+14155550100' }],
    ]
    for (const [method, path, body] of attempts) {
      const response = await t.request(method, path, { key: acme.key, body })
      expect(response.status, `${method} ${path}`).toBe(404)
      expect(response.body).toEqual({ detail: 'Telephony configuration not found' })
    }
    expect(
      (await t.request('GET', CONFIGS_PATH, { key: acme.key })).body.configurations.map((config: any) => config.name),
    ).toEqual(['theirs'])
    expect((await t.request('GET', `${CONFIGS_PATH}/${mine.id}`)).body.name).toBe('mine')
    const theirsCanReuseTheName = await t.request('POST', CONFIGS_PATH, {
      key: acme.key,
      body: { name: 'mine', config: VALID_CONFIGS.twilio.config },
    })
    expect(theirsCanReuseTheName.status).toBe(200)
  })

  test('endpoints need an admin API key', async () => {
    expect((await t.request('GET', CONFIGS_PATH, { key: null })).status).toBe(401)
    expect((await t.request('GET', CONFIGS_PATH, { key: t.newOrg('robots', 'trigger').key })).status).toBe(403)
  })

  test('provider metadata lists every provider and field with label, type, required, sensitive, description', async () => {
    const response = await t.request('GET', '/api/v1/organizations/telephony-providers/metadata')
    expect(response.status).toBe(200)
    const providers = response.body.providers
    expect(providers.map((provider: any) => provider.provider)).toEqual([...PROVIDER_NAMES])
    for (const provider of providers) {
      expect(provider.fields.length).toBeGreaterThan(0)
      for (const field of provider.fields) {
        expect(Object.keys(field)).toEqual(
          expect.arrayContaining(['name', 'label', 'type', 'required', 'sensitive', 'description']),
        )
      }
    }
    const field = (provider: string, name: string) =>
      providers.find((p: any) => p.provider === provider).fields.find((f: any) => f.name === name)
    expect(field('twilio', 'auth_token')).toMatchObject({ required: true, sensitive: true, type: 'password' })
    expect(field('ari', 'external_pbx.agent_api.password')).toMatchObject({ sensitive: true, required: false })
    expect(field('telnyx', 'webhook_public_key')).toMatchObject({ sensitive: false, required: false })
    // Accepted and stored for compatibility, but the media leg never uses it: the form must not ask for a real value.
    expect(field('ari', 'ws_client_name')).toMatchObject({
      label: expect.stringContaining('not used'),
      description: expect.stringMatching(/^Not used: .*websocket_client\.conf needs no entry/),
    })
    expect(field('ari', 'ws_client_name').placeholder ?? null).toBeNull()
  })
})
