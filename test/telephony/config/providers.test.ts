import { describe, expect, test } from 'bun:test'
import type { TObject, TSchema } from '@sinclair/typebox'
import { Kind } from '@sinclair/typebox'
import {
  PROVIDER_NAMES,
  PROVIDERS,
  applyDefaults,
  createCredentials,
  isProviderName,
  providerMetadata,
  sensitivePaths,
  setupChecklist,
  validateConfig,
  validatePartialUpdate,
  type ProviderName,
  type ValidatedConfig,
} from '../../../src/telephony/config/providers'
import { maskSecret } from '../../../src/lib/mask'
import { mergeUpdate } from '../../../src/telephony/config/configurations'
import { CARRIERS } from '../../../src/telephony/carriers/registry'

const LOC = ['body', 'config']

// `stored` is loosely typed so scenarios can spread it and edit nested values.
type Case = { valid: ValidatedConfig; stored: Record<string, any>; required: string[] }

const agentApi = { url: 'https://dialer.example.com/agc/api.php', username: 'agent', password: 'agent-pass' }

const CASES: Record<ProviderName, Case> = {
  ari: {
    valid: {
      provider: 'ari',
      ari_endpoint: 'http://pbx.example.com:8088',
      app_name: 'ringbase',
      app_password: 'ari-secret',
    },
    stored: {
      ari_endpoint: 'http://pbx.example.com:8088',
      app_name: 'ringbase',
      app_password: 'ari-secret',
      ws_client_name: '',
      dial_string_template: 'PJSIP/{number}',
      allow_raw_dial_strings: false,
      external_pbx: null,
    },
    required: ['ari_endpoint', 'app_name', 'app_password'],
  },
  cloudonix: {
    valid: { provider: 'cloudonix', bearer_token: 'XI-token-1234', domain_id: 'acme.example.net' },
    stored: { bearer_token: 'XI-token-1234', domain_id: 'acme.example.net', application_name: null },
    required: ['bearer_token', 'domain_id'],
  },
  exotel: {
    valid: { provider: 'exotel', account_sid: 'acme1', api_key: 'key-1234', api_token: 'token-5678' },
    stored: {
      account_sid: 'acme1',
      api_key: 'key-1234',
      api_token: 'token-5678',
      api_base_url: 'https://api.in.exotel.com',
    },
    required: ['account_sid', 'api_key', 'api_token'],
  },
  plivo: {
    valid: { provider: 'plivo', auth_id: 'MA123456', auth_token: 'plivo-token' },
    stored: { auth_id: 'MA123456', auth_token: 'plivo-token', application_id: null },
    required: ['auth_id', 'auth_token'],
  },
  telnyx: {
    valid: { provider: 'telnyx', api_key: 'KEY0123456789' },
    stored: { api_key: 'KEY0123456789', connection_id: null, webhook_public_key: null },
    required: ['api_key'],
  },
  twilio: {
    valid: { provider: 'twilio', account_sid: 'AC0123456789', auth_token: 'twilio-token' },
    stored: { account_sid: 'AC0123456789', auth_token: 'twilio-token' },
    required: ['account_sid', 'auth_token'],
  },
  vobiz: {
    valid: { provider: 'vobiz', auth_id: 'MA_SYQRLN1K', auth_token: 'vobiz-token' },
    stored: { auth_id: 'MA_SYQRLN1K', auth_token: 'vobiz-token', application_id: null },
    required: ['auth_id', 'auth_token'],
  },
  vonage: {
    valid: {
      provider: 'vonage',
      api_key: 'vkey1234',
      api_secret: 'vsecret99',
      application_id: 'app-1',
      private_key: '-----BEGIN PRIVATE KEY-----x',
    },
    stored: {
      api_key: 'vkey1234',
      api_secret: 'vsecret99',
      application_id: 'app-1',
      private_key: '-----BEGIN PRIVATE KEY-----x',
      signature_secret: null,
    },
    required: ['api_key', 'api_secret', 'application_id', 'private_key'],
  },
  whatsapp: {
    valid: { provider: 'whatsapp', access_token: 'EAAG-token', waba_id: '1029384756', app_secret: 'app-secret' },
    stored: { access_token: 'EAAG-token', waba_id: '1029384756', app_secret: 'app-secret' },
    required: ['access_token', 'waba_id', 'app_secret'],
  },
}

const ariWithPbx = (externalPbx: unknown) => ({ ...CASES.ari.valid, external_pbx: externalPbx })

describe('create validation', () => {
  for (const provider of PROVIDER_NAMES) {
    const { valid, stored, required } = CASES[provider]

    test(`${provider}: a valid payload passes and is stored with its defaults`, () => {
      expect(validateConfig(valid)).toEqual([])
      expect(applyDefaults(valid)).toEqual(stored)
    })

    test(`${provider}: from_numbers is accepted and dropped`, () => {
      const withNumbers = { ...valid, from_numbers: ['+14155550100'] }
      expect(validateConfig(withNumbers)).toEqual([])
      expect(applyDefaults(withNumbers)).toEqual(stored)
    })

    for (const field of required) {
      test(`${provider}: missing ${field} is reported with the tag in loc`, () => {
        const { [field]: _removed, ...payload } = valid
        expect(validateConfig(payload)).toEqual([
          { type: 'missing', loc: [...LOC, provider, field], msg: 'Field required', input: payload },
        ])
      })
    }

    test(`${provider}: a number where a string belongs is string_type`, () => {
      const field = required[0]
      expect(validateConfig({ ...valid, [field]: 42 })).toEqual([
        { type: 'string_type', loc: [...LOC, provider, field], msg: 'Input should be a valid string', input: 42 },
      ])
    })
  }

  test('every missing required field is reported at once', () => {
    expect(validateConfig({ provider: 'vonage' }).map((item) => item.loc.at(-1))).toEqual(CASES.vonage.required)
  })

  test('an unknown provider lists the nine tags', () => {
    const [item] = validateConfig({ provider: 'skype' })
    expect(item.type).toBe('union_tag_invalid')
    expect(item.loc).toEqual(LOC)
    expect(item.ctx).toEqual({
      discriminator: "'provider'",
      tag: 'skype',
      expected_tags: "'ari', 'cloudonix', 'exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage', 'whatsapp'",
    })
  })

  test('a config without provider is union_tag_not_found', () => {
    expect(validateConfig({ account_sid: 'AC1' })).toEqual([
      {
        type: 'union_tag_not_found',
        loc: LOC,
        msg: "Unable to extract tag using discriminator 'provider'",
        input: { account_sid: 'AC1' },
        ctx: { discriminator: "'provider'" },
      },
    ])
  })

  test('a config that is not an object is model_attributes_type', () => {
    expect(validateConfig('twilio')[0].type).toBe('model_attributes_type')
  })

  test('whatsapp rejects empty strings', () => {
    const items = validateConfig({ provider: 'whatsapp', access_token: '', waba_id: '', app_secret: '' })
    expect(items).toEqual(
      ['access_token', 'waba_id', 'app_secret'].map((field) => ({
        type: 'string_too_short',
        loc: [...LOC, 'whatsapp', field],
        msg: 'String should have at least 1 character',
        input: '',
        ctx: { min_length: 1 },
      })),
    )
  })

  test('ari: ari_endpoint must be an http(s) URL', () => {
    expect(validateConfig({ ...CASES.ari.valid, ari_endpoint: 'pbx:8088' })[0]).toMatchObject({
      type: 'string_pattern_mismatch',
      loc: [...LOC, 'ari', 'ari_endpoint'],
    })
  })

  test('ari: dial_string_template must contain {number}', () => {
    expect(validateConfig({ ...CASES.ari.valid, dial_string_template: 'PJSIP/100' })[0]).toMatchObject({
      type: 'string_pattern_mismatch',
      loc: [...LOC, 'ari', 'dial_string_template'],
    })
    expect(validateConfig({ ...CASES.ari.valid, dial_string_template: 'Local/{number}@from-internal' })).toEqual([])
  })

  test('ari: external_pbx gets its defaults', () => {
    const config = ariWithPbx({ agent_api: agentApi })
    expect(validateConfig(config)).toEqual([])
    expect(applyDefaults(config).external_pbx).toEqual({
      type: 'vicidial',
      agent_api: { ...agentApi, source: 'ringbase' },
      non_agent_api: null,
      timeout_seconds: 8,
    })
  })

  test('ari: external_pbx timeout must be 1 to 30', () => {
    const loc = [...LOC, 'ari', 'external_pbx', 'timeout_seconds']
    expect(validateConfig(ariWithPbx({ agent_api: agentApi, timeout_seconds: 0 }))).toEqual([
      {
        type: 'greater_than_equal',
        loc,
        msg: 'Input should be greater than or equal to 1',
        input: 0,
        ctx: { ge: 1 },
      },
    ])
    expect(validateConfig(ariWithPbx({ agent_api: agentApi, timeout_seconds: 31 }))).toEqual([
      {
        type: 'less_than_equal',
        loc,
        msg: 'Input should be less than or equal to 30',
        input: 31,
        ctx: { le: 30 },
      },
    ])
    expect(validateConfig(ariWithPbx({ agent_api: agentApi, timeout_seconds: 2.5 }))[0].type).toBe('int_from_float')
    expect(validateConfig(ariWithPbx({ agent_api: agentApi, timeout_seconds: 30 }))).toEqual([])
  })

  test('ari: external_pbx needs agent_api with an http(s) url and credentials', () => {
    expect(validateConfig(ariWithPbx({})).map((item) => [item.type, item.loc])).toEqual([
      ['missing', [...LOC, 'ari', 'external_pbx', 'agent_api']],
    ])
    const items = validateConfig(ariWithPbx({ agent_api: { url: 'ftp://dialer', username: '', password: 1 } }))
    expect(items.map((item) => [item.type, item.loc.at(-1)])).toEqual([
      ['string_pattern_mismatch', 'url'],
      ['string_too_short', 'username'],
      ['string_type', 'password'],
    ])
  })

  test('ari: external_pbx type is the vicidial constant', () => {
    expect(validateConfig(ariWithPbx({ type: 'other', agent_api: agentApi }))[0]).toMatchObject({
      type: 'literal_error',
      loc: [...LOC, 'ari', 'external_pbx', 'type'],
      msg: "Input should be 'vicidial'",
    })
  })

  test('ari: non_agent_api needs url, username and password together; an empty url turns it off', () => {
    const partial = ariWithPbx({
      agent_api: agentApi,
      non_agent_api: { url: 'https://dialer/non_agent_api.php', username: 'admin' },
    })
    expect(validateConfig(partial)).toEqual([
      expect.objectContaining({
        type: 'value_error',
        loc: [...LOC, 'ari', 'external_pbx', 'non_agent_api'],
      }),
    ])
    const disabled = ariWithPbx({ agent_api: agentApi, non_agent_api: { url: '', username: 'admin' } })
    expect(validateConfig(disabled)).toEqual([])
    expect((applyDefaults(disabled).external_pbx as Record<string, unknown>).non_agent_api).toBeNull()
  })

  test('cloudonix domain_id is normalised', () => {
    const stored = (domain: string) =>
      applyDefaults({ provider: 'cloudonix', bearer_token: 't', domain_id: domain }).domain_id
    expect(stored('  Acme. ')).toBe('acme.cloudonix.net')
    expect(stored('Sip.Example.COM.')).toBe('sip.example.com')
  })

  test('exotel accepts another regional base URL and rejects a non-URL', () => {
    expect(validateConfig({ ...CASES.exotel.valid, api_base_url: 'https://api.exotel.com' })).toEqual([])
    expect(validateConfig({ ...CASES.exotel.valid, api_base_url: 'exotel' })[0].type).toBe('string_pattern_mismatch')
    expect(validateConfig({ ...CASES.exotel.valid, from_numbers: 'x' })[0]).toMatchObject({
      type: 'list_type',
      loc: [...LOC, 'exotel', 'from_numbers'],
    })
  })

  test('server-managed values in a request are not stored', () => {
    const smuggled = { ...CASES.ari.valid, stasis_app_name: 'stolen' }
    expect(applyDefaults(smuggled)).not.toHaveProperty('stasis_app_name')
    expect(createCredentials(smuggled).stasis_app_name).not.toBe('stolen')
  })
})

describe('createCredentials', () => {
  test('mints the ARI Stasis app name and the WhatsApp verify token', () => {
    const ari = createCredentials(CASES.ari.valid)
    expect(ari.stasis_app_name).toMatch(/^ringbase_[0-9a-f]{12}$/)
    expect(createCredentials(CASES.ari.valid).stasis_app_name).not.toBe(ari.stasis_app_name)
    expect(createCredentials(CASES.whatsapp.valid).webhook_verify_token).toMatch(/^[0-9a-f]{32}$/)
  })

  test('mints nothing for the other providers', () => {
    for (const provider of PROVIDER_NAMES.filter((name) => name !== 'ari' && name !== 'whatsapp')) {
      expect(createCredentials(CASES[provider].valid)).toEqual(CASES[provider].stored)
    }
  })
})

describe('partial update', () => {
  test('validation requires nothing and keeps the tag in loc', () => {
    expect(validatePartialUpdate({}, 'twilio')).toEqual([])
    expect(validatePartialUpdate({ auth_token: 5 }, 'twilio')).toEqual([
      { type: 'string_type', loc: [...LOC, 'twilio', 'auth_token'], msg: 'Input should be a valid string', input: 5 },
    ])
    expect(validatePartialUpdate({ provider: 'twilio', auth_token: 'x' }, 'twilio')).toEqual([])
  })

  test('validation applies the variant rules to the fields sent', () => {
    expect(validatePartialUpdate({ access_token: '' }, 'whatsapp')[0]).toMatchObject({
      type: 'string_too_short',
      loc: [...LOC, 'whatsapp', 'access_token'],
    })
    expect(
      validatePartialUpdate({ external_pbx: { agent_api: agentApi, timeout_seconds: 0 } }, 'ari')[0],
    ).toMatchObject({
      type: 'greater_than_equal',
      loc: [...LOC, 'ari', 'external_pbx', 'timeout_seconds'],
    })
    expect(
      validatePartialUpdate({ external_pbx: { agent_api: agentApi, non_agent_api: { url: 'https://d/n' } } }, 'ari')[0]
        .type,
    ).toBe('value_error')
  })

  test('an unknown provider is union_tag_invalid; another known one is left to the caller', () => {
    expect(validatePartialUpdate({ provider: 'skype' }, 'twilio')[0].type).toBe('union_tag_invalid')
    expect(validatePartialUpdate({ provider: 'plivo', auth_id: 'x' }, 'twilio')).toEqual([])
  })

  test('only the fields sent change', () => {
    const stored = { ...CASES.vonage.stored, signature_secret: 'sig-secret-1' }
    expect(mergeUpdate('vonage', stored, { api_secret: 'rotated-secret' })).toEqual({
      ...stored,
      api_secret: 'rotated-secret',
    })
    expect(mergeUpdate('vonage', stored, {})).toEqual(stored)
  })

  test('null clears a nullable field', () => {
    const stored = { ...CASES.vonage.stored, signature_secret: 'sig-secret-1' }
    expect(mergeUpdate('vonage', stored, { signature_secret: null }).signature_secret).toBeNull()
  })

  test('a re-sent masked value keeps the stored secret; a new value replaces it', () => {
    const stored = CASES.twilio.stored
    const masked = {
      provider: 'twilio',
      account_sid: maskSecret('AC0123456789'),
      auth_token: maskSecret('twilio-token'),
    }
    expect(mergeUpdate('twilio', stored, masked)).toEqual(stored)
    expect(mergeUpdate('twilio', stored, { ...masked, auth_token: 'new-token' })).toEqual({
      ...stored,
      auth_token: 'new-token',
    })
  })

  test('a whole GET body sent back unchanged changes nothing, nested secrets included', () => {
    const stored: Record<string, any> = {
      ...CASES.ari.stored,
      stasis_app_name: 'ringbase_0123456789ab',
      external_pbx: {
        type: 'vicidial',
        agent_api: { ...agentApi, source: 'ringbase' },
        timeout_seconds: 8,
        non_agent_api: {
          url: 'https://dialer/non_agent_api.php',
          username: 'admin',
          password: 'admin-pass',
          source: 'ringbase',
        },
      },
    }
    const shown = structuredClone(stored)
    shown.app_password = maskSecret(stored.app_password)
    shown.external_pbx.agent_api.password = maskSecret(agentApi.password)
    shown.external_pbx.non_agent_api.username = maskSecret('admin')
    expect(mergeUpdate('ari', stored, { provider: 'ari', ...shown })).toEqual(stored)
  })

  test('server-managed fields are carried forward and never read from the request', () => {
    const ari = { ...CASES.ari.stored, stasis_app_name: 'ringbase_0123456789ab' }
    expect(mergeUpdate('ari', ari, { stasis_app_name: 'evil', app_name: 'new-user' })).toEqual({
      ...ari,
      app_name: 'new-user',
    })
    const whatsapp = { ...CASES.whatsapp.stored, webhook_verify_token: 'f'.repeat(32) }
    expect(mergeUpdate('whatsapp', whatsapp, { webhook_verify_token: 'mine' }).webhook_verify_token).toBe(
      'f'.repeat(32),
    )
  })

  test('a legacy ARI row without a Stasis app name does not get one on update', () => {
    expect(mergeUpdate('ari', CASES.ari.stored, { ws_client_name: 'media' })).not.toHaveProperty('stasis_app_name')
  })

  test('cloudonix ids bound to the domain are dropped when the domain changes', () => {
    const stored: Record<string, any> = {
      ...CASES.cloudonix.stored,
      domain_id: 'acme.cloudonix.net',
      application_name: 'app-1',
      domain_uuid: 'uuid-1',
      application_id: 'app-id',
      application_uuid: 'app-uuid',
    }
    expect(mergeUpdate('cloudonix', stored, { domain_id: 'ACME' })).toEqual(stored)
    expect(mergeUpdate('cloudonix', stored, { domain_id: 'other' })).toEqual({
      bearer_token: stored.bearer_token,
      domain_id: 'other.cloudonix.net',
      application_name: 'app-1',
    })
  })

  test('external_pbx is replaced as a whole and can be removed', () => {
    const stored = {
      ...CASES.ari.stored,
      external_pbx: {
        type: 'vicidial',
        agent_api: { ...agentApi, source: 'ringbase' },
        non_agent_api: null,
        timeout_seconds: 8,
      },
    }
    expect(
      mergeUpdate('ari', stored, {
        external_pbx: { agent_api: { ...agentApi, password: 'other' }, timeout_seconds: 12 },
      }).external_pbx,
    ).toEqual({
      type: 'vicidial',
      agent_api: { ...agentApi, password: 'other', source: 'ringbase' },
      non_agent_api: null,
      timeout_seconds: 12,
    })
    expect(mergeUpdate('ari', stored, { external_pbx: null }).external_pbx).toBeNull()
  })
})

/** Dotted paths of every leaf of a request schema. */
function leafPaths(schema: TObject, prefix = ''): string[] {
  return Object.entries(schema.properties).flatMap(([key, property]: [string, TSchema]) => {
    const objectSchema =
      property[Kind] === 'Object'
        ? property
        : property[Kind] === 'Union'
          ? (property.anyOf as TSchema[]).find((branch) => branch[Kind] === 'Object')
          : undefined
    return objectSchema ? leafPaths(objectSchema as TObject, `${prefix}${key}.`) : [`${prefix}${key}`]
  })
}

describe('provider metadata', () => {
  const { providers } = providerMetadata()

  test('lists the nine providers sorted by name', () => {
    expect(providers.map((entry) => entry.provider)).toEqual([...PROVIDER_NAMES])
    expect([...PROVIDER_NAMES].sort()).toEqual([...PROVIDER_NAMES])
  })

  test('supports_call_transfer: Asterisk, and the carriers that can transfer', () => {
    const transferring = providers.filter((entry) => entry.supports_call_transfer).map((entry) => entry.provider)
    expect(transferring).toEqual(['ari', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage'])
    for (const [name, carrier] of Object.entries(CARRIERS))
      expect(carrier.transfer !== undefined).toBe(PROVIDERS[name as ProviderName].supportsCallTransfer)
  })

  test("each carrier's file declares its metadata beside its Carrier; ARI's metadata lives in telephony/ari/", async () => {
    for (const name of Object.keys(CARRIERS)) {
      const module = await import(`../../../src/telephony/carriers/${name}`)
      expect(module[name]).toBe(PROVIDERS[name as ProviderName])
      expect(module[`${name}Carrier`]).toBe(CARRIERS[name as keyof typeof CARRIERS])
    }
    expect((await import('../../../src/telephony/ari/metadata')).ari).toBe(PROVIDERS.ari)
  })

  for (const provider of PROVIDER_NAMES) {
    test(`${provider}: the schema requires exactly the spec's required fields`, () => {
      expect(PROVIDERS[provider].schema.required).toEqual(['provider', ...CASES[provider].required])
    })

    test(`${provider}: every request field has a form field with the schema's required flag`, () => {
      const entry = providers.find((candidate) => candidate.provider === provider)!
      const names = entry.fields.map((field) => field.name)
      const schema = PROVIDERS[provider].schema
      const requestFields = leafPaths(schema).filter((path) => path !== 'provider' && path !== 'from_numbers')
      expect(names).toEqual(expect.arrayContaining(requestFields))
      expect(new Set(names).size).toBe(names.length)
      for (const field of entry.fields) {
        expect(['text', 'password', 'textarea', 'string-array', 'number', 'boolean', 'select', 'readonly']).toContain(
          field.type,
        )
        expect(field.required).toBe(CASES[provider].required.includes(field.name))
        expect(field.sensitive).toBe(sensitivePaths(provider).includes(field.name))
        if (field.type === 'readonly')
          expect(PROVIDERS[provider].serverManaged.map((managed) => managed.name)).toContain(field.name)
        else expect(requestFields).toContain(field.name)
      }
      expect(Object.keys(entry).sort()).toEqual([
        'connectivity',
        'display_name',
        'docs_url',
        'fields',
        'provider',
        'supports_call_transfer',
      ])
    })
  }

  test('sensitive fields follow the contract', () => {
    expect(sensitivePaths('ari')).toEqual([
      'app_password',
      'external_pbx.agent_api.username',
      'external_pbx.agent_api.password',
      'external_pbx.non_agent_api.username',
      'external_pbx.non_agent_api.password',
    ])
    expect(sensitivePaths('whatsapp')).toEqual(['access_token', 'app_secret'])
    expect(sensitivePaths('telnyx')).toEqual(['api_key'])
    expect(sensitivePaths('vonage')).toEqual(['api_key', 'api_secret', 'private_key', 'signature_secret'])
    const verifyToken = providers
      .find((entry) => entry.provider === 'whatsapp')!
      .fields.find((field) => field.name === 'webhook_verify_token')
    expect(verifyToken).toMatchObject({ type: 'readonly', sensitive: false, required: false })
  })

  test('nested fields carry their description and section', () => {
    const timeout = providers
      .find((entry) => entry.provider === 'ari')!
      .fields.find((field) => field.name === 'external_pbx.timeout_seconds')
    expect(timeout).toMatchObject({ type: 'number', required: false, section: 'External PBX' })
    expect(timeout!.description).toBeString()
  })

  test('isProviderName narrows stored provider strings', () => {
    expect(PROVIDER_NAMES.every(isProviderName)).toBe(true)
    expect([undefined, 'Twilio', 'skype', 5].some(isProviderName)).toBe(false)
  })

  test('capability flags', () => {
    expect(PROVIDER_NAMES.filter((name) => PROVIDERS[name].supportsTrunks)).toEqual(['cloudonix'])
    expect(PROVIDER_NAMES.filter((name) => !PROVIDERS[name].supportsOutbound)).toEqual(['whatsapp'])
    expect(PROVIDER_NAMES.filter((name) => PROVIDERS[name].connectivity === 'sip')).toEqual(['ari', 'cloudonix'])
    expect(PROVIDER_NAMES.filter((name) => !PROVIDERS[name].requiresCallerId)).toEqual(['ari', 'whatsapp'])
  })

  test('names no brand of the platform the API comes from', () => {
    expect(JSON.stringify(providerMetadata()).toLowerCase()).not.toContain('dograh')
  })
})

describe('setup checklist', () => {
  test('ARI has none', () => {
    expect(setupChecklist('ari', { activeNumberCount: 0 })).toBeNull()
  })

  for (const provider of ['exotel', 'plivo', 'telnyx', 'twilio', 'vobiz', 'vonage'] as const) {
    test(`${provider}: the caller ID step blocks outbound until a number is active`, () => {
      const blocked = setupChecklist(provider, { activeNumberCount: 0 })!
      expect(blocked.steps.map((step) => step.key)).toEqual(['caller_id'])
      expect(blocked.ready_for_outbound).toBe(false)
      expect(blocked.outbound_blocked_reason).toBe(blocked.steps[0].description)
      expect(blocked.outbound_blocked_reason).toContain(PROVIDERS[provider].displayName)
      expect(setupChecklist(provider, { activeNumberCount: 1 })).toMatchObject({
        ready_for_outbound: true,
        outbound_blocked_reason: null,
        docs_url: null,
        steps: [{ key: 'caller_id', complete: true, blocks_outbound: true }],
      })
    })
  }

  test('cloudonix: only the caller ID blocks; trunk assignment appears with several trunks', () => {
    const fresh = setupChecklist('cloudonix', { activeNumberCount: 0 })!
    expect(fresh.steps.map((step) => [step.key, step.complete, step.blocks_outbound])).toEqual([
      ['outbound_trunk', false, false],
      ['caller_id', false, true],
      ['inbound_routing', false, false],
    ])
    expect(fresh.ready_for_outbound).toBe(false)
    const busy = setupChecklist('cloudonix', {
      activeNumberCount: 3,
      enabledTrunkCount: 2,
      activeNumbersWithoutTrunkCount: 1,
      activeNumbersWithInboundAgentCount: 1,
    })!
    expect(busy.steps.map((step) => [step.key, step.complete])).toEqual([
      ['outbound_trunk', true],
      ['caller_id', true],
      ['trunk_assignment', false],
      ['inbound_routing', true],
    ])
    expect(busy).toMatchObject({ ready_for_outbound: true, outbound_blocked_reason: null })
  })

  test('whatsapp is never ready for outbound', () => {
    const checklist = setupChecklist('whatsapp', { activeNumberCount: 1 })!
    expect(checklist.ready_for_outbound).toBe(false)
    expect(checklist.outbound_blocked_reason).toBeString()
    expect(checklist.steps.every((step) => step.complete)).toBe(true)
  })
})

describe('destinations', () => {
  /** Dotted paths of every string in a provider's schema whose pattern is a URL's. */
  const urlFields = (schema: TSchema, prefix = ''): string[] => {
    if (schema[Kind] === 'Union') return (schema.anyOf as TSchema[]).flatMap((branch) => urlFields(branch, prefix))
    if (schema[Kind] === 'Object') {
      return Object.entries((schema as TObject).properties).flatMap(([name, property]) =>
        urlFields(property, prefix ? `${prefix}.${name}` : name),
      )
    }
    return schema[Kind] === 'String' && String(schema.pattern ?? '').includes('https?://') ? [prefix] : []
  }

  test.each(PROVIDER_NAMES)(
    '%s: every URL a configuration connects to is declared a destination (secrets are re-sent to change it)',
    (provider) => {
      const declared = PROVIDERS[provider].fields
        .filter((field) => field.destination)
        .map((field) => field.name)
        .sort()
      expect(declared).toEqual([...new Set(urlFields(PROVIDERS[provider].schema))].sort())
    },
  )
})
