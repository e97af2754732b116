import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { DomainError, refused } from '../../../src/lib/errors'
import {
  getConfigCredentials,
  listActiveAriConfigs,
  markInactive,
  resolveOutbound,
  type OutboundChoice,
} from '../../../src/telephony/config/configurations'
import { createTestApp, type TestApp } from '../../support/app'
import { addPhoneNumber, createConfiguration, VALID_CONFIGS } from '../../support/telephony'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const ORG = 1

/** The DomainError `resolveOutbound` throws, as `{kind, detail}`, or the chosen configuration's name. */
function outcome(choice: OutboundChoice, options = {}): string | { kind: string; detail: unknown } {
  try {
    return resolveOutbound(t.ctx, ORG, choice, options).config.name
  } catch (error) {
    if (!(error instanceof DomainError)) throw error
    return { kind: error.kind, detail: error.detail }
  }
}

const notReady = (name: string) =>
  expect.objectContaining({
    kind: 'refused',
    detail: expect.stringMatching(new RegExp(`^'${name}' is not ready for outbound calls\\. \\S`)),
  })

describe('resolveOutbound: which configuration', () => {
  test('no configuration at all → 400; unknown, foreign or inactive explicit id → 404', async () => {
    expect(outcome({})).toEqual({ kind: 'refused', detail: 'Telephony provider not configured for this organization' })
    const acme = t.newOrg('acme')
    const foreign = await createConfiguration(t, 'theirs', VALID_CONFIGS.ari.config, { key: acme.key })
    const inactive = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    markInactive(t.ctx, inactive.id, 'down')
    for (const id of [999, foreign.id, inactive.id]) {
      expect(outcome({ telephonyConfigurationId: id })).toEqual({
        kind: 'not_found',
        detail: 'Telephony configuration not found',
      })
    }
    expect(outcome({})).toEqual({ kind: 'refused', detail: 'Telephony provider not configured for this organization' })
  })

  test('an explicit id must be ready; there is no fallback', async () => {
    await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config, { isDefaultOutbound: true })
    const plivo = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    expect(outcome({ telephonyConfigurationId: plivo.id })).toEqual(notReady('plivo'))
    await addPhoneNumber(t, plivo.id, { address: '+14155550100' })
    expect(outcome({ telephonyConfigurationId: plivo.id })).toBe('plivo')
  })

  const SCENARIOS: [
    string,
    {
      name: string
      provider: 'ari' | 'plivo' | 'whatsapp'
      isDefault?: boolean
      withNumber?: boolean
      inactive?: boolean
    }[],
    string | ReturnType<typeof notReady>,
  ][] = [
    [
      'the default when ready',
      [
        { name: 'old', provider: 'ari' },
        { name: 'default', provider: 'ari', isDefault: true },
      ],
      'default',
    ],
    [
      'then the oldest ready one',
      [
        { name: 'old', provider: 'plivo' },
        { name: 'older ready', provider: 'plivo', withNumber: true },
        { name: 'default', provider: 'plivo', isDefault: true },
      ],
      'older ready',
    ],
    [
      'an inactive default is skipped',
      [
        { name: 'default', provider: 'ari', isDefault: true, inactive: true },
        { name: 'other', provider: 'ari' },
      ],
      'other',
    ],
    [
      'none ready → the first candidate (default first) explains why',
      [
        { name: 'plain', provider: 'plivo' },
        { name: 'default', provider: 'whatsapp', isDefault: true },
      ],
      notReady('default'),
    ],
    [
      'none ready and no default → the oldest explains',
      [
        { name: 'first', provider: 'plivo' },
        { name: 'second', provider: 'plivo' },
      ],
      notReady('first'),
    ],
  ]

  test.each(SCENARIOS)('without an id: %s', async (_name, configurations, expected) => {
    for (const spec of configurations) {
      const created = await createConfiguration(t, spec.name, VALID_CONFIGS[spec.provider].config, {
        isDefaultOutbound: spec.isDefault,
      })
      if (spec.withNumber)
        await addPhoneNumber(t, created.id, { address: `+1415555${String(created.id).padStart(4, '0')}` })
      if (spec.inactive) markInactive(t.ctx, created.id, 'down')
    }
    expect(outcome({})).toEqual(expected)
  })

  test('callers may replace the not-found answers (campaigns answer 400 telephony_configuration_not_found)', async () => {
    const missingConfiguration = () => refused('telephony_configuration_not_found')
    expect(outcome({}, { missingConfiguration })).toEqual({
      kind: 'refused',
      detail: 'telephony_configuration_not_found',
    })
    expect(outcome({ telephonyConfigurationId: 5 }, { missingConfiguration })).toEqual({
      kind: 'refused',
      detail: 'telephony_configuration_not_found',
    })
  })

  test('the resolved configuration carries decrypted credentials', async () => {
    await createConfiguration(t, 'tw', VALID_CONFIGS.twilio.config, { isDefaultOutbound: true }).then((created) =>
      addPhoneNumber(t, created.id, { address: '+14155550100' }),
    )
    const { config } = resolveOutbound(t.ctx, ORG, {})
    expect(config).toMatchObject({ name: 'tw', provider: 'twilio', organizationId: ORG, isDefaultOutbound: true })
    expect(config.credentials).toEqual({ account_sid: 'S3cr3t-twilio-sid', auth_token: 'S3cr3t-twilio-token' })
  })
})

describe('resolveOutbound: which caller id', () => {
  test('an explicit number must be an active number of the resolved configuration', async () => {
    const plivo = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    const other = await createConfiguration(t, 'other', VALID_CONFIGS.ari.config)
    const active = await addPhoneNumber(t, plivo.id, { address: '+14155550100' })
    const inactive = await addPhoneNumber(t, plivo.id, { address: '+14155550101', is_active: false })
    const elsewhere = await addPhoneNumber(t, other.id, { address: '+14155550102' })
    for (const fromPhoneNumberId of [inactive.id, elsewhere.id, 999]) {
      expect(outcome({ telephonyConfigurationId: plivo.id, fromPhoneNumberId })).toEqual({
        kind: 'refused',
        detail: 'from_phone_number_not_found',
      })
    }
    expect(
      resolveOutbound(t.ctx, ORG, { telephonyConfigurationId: plivo.id, fromPhoneNumberId: active.id }).fromNumber
        ?.addressNormalized,
    ).toBe('+14155550100')
  })

  test('otherwise the default caller id, else an active number, else none', async () => {
    const plivo = await createConfiguration(t, 'plivo', VALID_CONFIGS.plivo.config)
    await addPhoneNumber(t, plivo.id, { address: '+14155550100' })
    const onlyActive = resolveOutbound(t.ctx, ORG, { telephonyConfigurationId: plivo.id }).fromNumber
    expect(onlyActive?.addressNormalized).toBe('+14155550100')
    const preferred = await addPhoneNumber(t, plivo.id, { address: '+14155550101', is_default_caller_id: true })
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(resolveOutbound(t.ctx, ORG, { telephonyConfigurationId: plivo.id }).fromNumber?.id).toBe(preferred.id)
    }
    const ari = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    expect(resolveOutbound(t.ctx, ORG, { telephonyConfigurationId: ari.id }).fromNumber).toBeNull()
  })
})

describe('what the ARI connection manager uses', () => {
  test('listActiveAriConfigs: active ARI configurations of every organization, decrypted', async () => {
    const acme = t.newOrg('acme')
    const mine = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    const theirs = await createConfiguration(t, 'their pbx', VALID_CONFIGS.ari.config, { key: acme.key })
    const down = await createConfiguration(t, 'down', VALID_CONFIGS.ari.config)
    await createConfiguration(t, 'tw', VALID_CONFIGS.twilio.config)
    markInactive(t.ctx, down.id, 'down')
    const listed = listActiveAriConfigs(t.ctx)
    expect(listed.map((config) => [config.id, config.organizationId])).toEqual([
      [mine.id, ORG],
      [theirs.id, acme.organizationId],
    ])
    expect(listed[0].credentials).toMatchObject({
      app_password: 'S3cr3t-ari-password-01',
      stasis_app_name: mine.credentials.stasis_app_name,
      external_pbx: { agent_api: { password: 'S3cr3t-vici-agent-pass' } },
    })
    expect(listed[0].updatedAt).toBe(mine.updated_at)
  })

  test('a configuration whose secrets cannot be decrypted is marked inactive and left out', async () => {
    const broken = await createConfiguration(t, 'broken', VALID_CONFIGS.ari.config)
    const sealed = t.ctx.sqlite
      .query<{ credentials: string }, [number]>('SELECT credentials FROM telephony_configurations WHERE id = ?')
      .get(broken.id)!
    const tampered = JSON.parse(sealed.credentials)
    const [version, iv, tag, ciphertext] = tampered.app_password.split(':')
    tampered.app_password = [version, iv, tag, `${ciphertext[0] === 'A' ? 'B' : 'A'}${ciphertext.slice(1)}`].join(':')
    t.ctx.sqlite.run('UPDATE telephony_configurations SET credentials = ? WHERE id = ?', [
      JSON.stringify(tampered),
      broken.id,
    ])
    expect(listActiveAriConfigs(t.ctx)).toEqual([])
    const row = t.ctx.sqlite
      .query<{ inactive: number; inactive_reason: string }, [number]>(
        'SELECT inactive, inactive_reason FROM telephony_configurations WHERE id = ?',
      )
      .get(broken.id)!
    expect(row.inactive).toBe(1)
    expect(row.inactive_reason).toStartWith('invalid_config: ')
  })

  test('getConfigCredentials: decrypted credentials with their organization, null when unknown', async () => {
    const created = await createConfiguration(t, 'tw', VALID_CONFIGS.twilio.config)
    expect(getConfigCredentials(t.ctx, created.id)).toEqual({
      organizationId: ORG,
      provider: 'twilio',
      credentials: { account_sid: 'S3cr3t-twilio-sid', auth_token: 'S3cr3t-twilio-token' },
    })
    expect(getConfigCredentials(t.ctx, 999)).toBeNull()
  })

  test('markInactive truncates the reason to 255 characters', async () => {
    const created = await createConfiguration(t, 'pbx', VALID_CONFIGS.ari.config)
    markInactive(t.ctx, created.id, 'x'.repeat(300))
    expect(
      (await t.request('GET', `/api/v1/organizations/telephony-configs/${created.id}`)).body.inactive_reason,
    ).toHaveLength(255)
  })
})
