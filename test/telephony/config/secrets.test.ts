import { describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { maskSecret } from '../../../src/lib/mask'
import {
  maskCredentials,
  openCredentials,
  preserveMasked,
  sealCredentials,
} from '../../../src/telephony/config/secrets'

const key = randomBytes(32)

describe('maskSecret', () => {
  test('keeps the last four characters at the same length', () => {
    expect(maskSecret('sk-1234567890abcdef')).toBe('***************cdef')
    expect(maskSecret('abcde')).toBe('*bcde')
  })

  test('four characters or fewer are all masked', () => {
    expect(maskSecret('abcd')).toBe('****')
    expect(maskSecret('a')).toBe('*')
  })

  test('null and empty are left alone', () => {
    expect(maskSecret(null)).toBeNull()
    expect(maskSecret('')).toBe('')
  })
})

const ariCredentials = {
  ari_endpoint: 'http://pbx.example.com:8088',
  app_name: 'ringbase',
  app_password: 'ari-password-1',
  ws_client_name: '',
  dial_string_template: 'PJSIP/{number}',
  stasis_app_name: 'ringbase_0123456789ab',
  external_pbx: {
    type: 'vicidial',
    timeout_seconds: 8,
    agent_api: {
      url: 'https://dialer/agc/api.php',
      username: 'agent-user',
      password: 'agent-password',
      source: 'ringbase',
    },
    non_agent_api: { url: null, username: null, password: '', source: 'ringbase' },
  },
}

describe('sealCredentials / openCredentials', () => {
  test('no plain secret reaches the sealed object, and opening restores it', () => {
    const sealed = sealCredentials(key, 'ari', ariCredentials)
    const sealedText = JSON.stringify(sealed)
    for (const secret of ['ari-password-1', 'agent-user', 'agent-password']) expect(sealedText).not.toContain(secret)
    expect(sealed.app_password).toStartWith('v1:')
    expect(sealed.ari_endpoint).toBe(ariCredentials.ari_endpoint)
    expect(sealed.stasis_app_name).toBe(ariCredentials.stasis_app_name)
    expect(openCredentials(key, 'ari', sealed)).toEqual(ariCredentials)
  })

  test('does not modify its input', () => {
    const copy = structuredClone(ariCredentials)
    sealCredentials(key, 'ari', ariCredentials)
    expect(ariCredentials).toEqual(copy)
  })

  test('whatsapp: both secrets sealed, verify token and account id kept in clear', () => {
    const credentials = {
      access_token: 'EAAG-token',
      waba_id: '1029384756',
      app_secret: 'app-secret',
      webhook_verify_token: 'a'.repeat(32),
    }
    const sealed = sealCredentials(key, 'whatsapp', credentials)
    expect(JSON.stringify(sealed)).not.toContain('EAAG-token')
    expect(JSON.stringify(sealed)).not.toContain('app-secret')
    expect(sealed).toMatchObject({ waba_id: '1029384756', webhook_verify_token: 'a'.repeat(32) })
    expect(openCredentials(key, 'whatsapp', sealed)).toEqual(credentials)
  })

  test('opening with another key or a plain stored secret fails', () => {
    const sealed = sealCredentials(key, 'twilio', { account_sid: 'AC1', auth_token: 'tok' })
    expect(() => openCredentials(randomBytes(32), 'twilio', sealed)).toThrow()
    expect(() => openCredentials(key, 'twilio', { account_sid: 'AC1', auth_token: 'tok' })).toThrow(
      'not in the v1 sealed format',
    )
  })
})

describe('maskCredentials', () => {
  test('masks sensitive paths, keeps the rest', () => {
    expect(maskCredentials('ari', ariCredentials)).toEqual({
      ...ariCredentials,
      app_password: '**********rd-1',
      external_pbx: {
        ...ariCredentials.external_pbx,
        agent_api: { ...ariCredentials.external_pbx.agent_api, username: '******user', password: '**********word' },
      },
    })
  })

  test('whatsapp verify token and telnyx public key are shown in clear', () => {
    expect(
      maskCredentials('whatsapp', {
        access_token: 'EAAG-token',
        waba_id: '42',
        app_secret: 'app-secret',
        webhook_verify_token: 'tok-1234567',
      }),
    ).toEqual({
      access_token: '******oken',
      waba_id: '42',
      app_secret: '******cret',
      webhook_verify_token: 'tok-1234567',
    })
    expect(
      maskCredentials('telnyx', { api_key: 'KEY0123456789', connection_id: 'c1', webhook_public_key: 'pubkey==' }),
    ).toEqual({ api_key: '*********6789', connection_id: 'c1', webhook_public_key: 'pubkey==' })
  })

  test('hidden server-managed fields are left out', () => {
    expect(
      maskCredentials('cloudonix', {
        bearer_token: 'XI-token-1234',
        domain_id: 'acme.cloudonix.net',
        application_name: 'app',
        domain_uuid: 'u1',
        application_id: 'a1',
        application_uuid: 'a2',
      }),
    ).toEqual({ bearer_token: '*********1234', domain_id: 'acme.cloudonix.net', application_name: 'app' })
  })
})

describe('preserveMasked', () => {
  const stored = { account_sid: 'AC0123456789', auth_token: 'twilio-token' }

  test('the exact mask of the stored value keeps the stored value', () => {
    expect(preserveMasked('twilio', { account_sid: '********6789', auth_token: '********oken' }, stored)).toEqual(
      stored,
    )
  })

  test('a mask of another length is a new value', () => {
    expect(preserveMasked('twilio', { auth_token: '****oken' }, stored)).toEqual({ auth_token: '****oken' })
  })

  test('a new value replaces, an absent one stays absent', () => {
    expect(preserveMasked('twilio', { auth_token: 'new-token' }, stored)).toEqual({ auth_token: 'new-token' })
    expect(preserveMasked('twilio', {}, stored)).toEqual({})
  })

  test('nested paths and short secrets', () => {
    const incoming = { external_pbx: { agent_api: { username: '******user', password: '**********word' } } }
    expect(preserveMasked('ari', incoming, ariCredentials)).toEqual({
      external_pbx: { agent_api: { username: 'agent-user', password: 'agent-password' } },
    })
    expect(preserveMasked('vonage', { signature_secret: '***' }, { signature_secret: 'abc' })).toEqual({
      signature_secret: 'abc',
    })
  })

  test('does not modify its input', () => {
    const incoming = { auth_token: '********oken' }
    preserveMasked('twilio', incoming, stored)
    expect(incoming).toEqual({ auth_token: '********oken' })
  })
})
