import { afterEach, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { maskSecret } from '../../src/lib/mask'
import {
  decryptSecret, encryptSecret, loadMasterKey, maskCredentials, openCredentials, preserveMasked, sealCredentials,
} from '../../src/telephony/secrets'

const temporaryDirs: string[] = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-secrets-'))
  temporaryDirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of temporaryDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const key = randomBytes(32)

describe('encryptSecret / decryptSecret', () => {
  test('round trip, including unicode and the empty string', () => {
    for (const plain of ['twilio-token', 'pässwörd ☎', '']) expect(decryptSecret(key, encryptSecret(key, plain))).toBe(plain)
  })

  test('versioned format with a fresh IV each time', () => {
    const first = encryptSecret(key, 'same')
    const second = encryptSecret(key, 'same')
    expect(first).toMatch(/^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]*$/)
    expect(Buffer.from(first.split(':')[1], 'base64')).toHaveLength(12)
    expect(first).not.toBe(second)
  })

  test('altered ciphertext, tag or IV is detected', () => {
    const sealed = encryptSecret(key, 'auth-token-value')
    const [version, iv, tag, ciphertext] = sealed.split(':')
    const flip = (part: string) => {
      const bytes = Buffer.from(part, 'base64')
      bytes[0] ^= 1
      return bytes.toString('base64')
    }
    for (const altered of [
      [version, iv, tag, flip(ciphertext)], [version, iv, flip(tag), ciphertext], [version, flip(iv), tag, ciphertext],
    ]) {
      expect(() => decryptSecret(key, altered.join(':'))).toThrow('wrong master key or altered data')
    }
  })

  test('a truncated tag is rejected', () => {
    const [version, iv, tag, ciphertext] = encryptSecret(key, 'secret').split(':')
    const shortTag = Buffer.from(tag, 'base64').subarray(0, 4).toString('base64')
    expect(() => decryptSecret(key, [version, iv, shortTag, ciphertext].join(':'))).toThrow('not in the v1 sealed format')
  })

  test('another key cannot decrypt', () => {
    expect(() => decryptSecret(randomBytes(32), encryptSecret(key, 'secret'))).toThrow('wrong master key or altered data')
  })

  test('a value that is not sealed is rejected', () => {
    for (const value of ['plain-secret', 'v2:a:b:c', 'v1:only:two']) {
      expect(() => decryptSecret(key, value)).toThrow('not in the v1 sealed format')
    }
  })
})

describe('loadMasterKey', () => {
  test('creates master.key with mode 0600 on first use and reuses it', () => {
    const dataDir = join(freshDir(), 'nested', 'data')
    const first = loadMasterKey({ env: undefined, dataDir })
    expect(first).toHaveLength(32)
    const keyPath = join(dataDir, 'master.key')
    expect(statSync(keyPath).mode & 0o777).toBe(0o600)
    expect(loadMasterKey({ env: undefined, dataDir }).equals(first)).toBe(true)
    expect(readFileSync(keyPath, 'utf8').trim()).toBe(first.toString('hex'))
  })

  test('an empty environment value counts as unset', () => {
    const dataDir = freshDir()
    expect(loadMasterKey({ env: '', dataDir })).toHaveLength(32)
    expect(statSync(join(dataDir, 'master.key')).isFile()).toBe(true)
  })

  test('accepts 64 hex characters or base64 of 32 bytes and does not touch the data dir', () => {
    const dataDir = freshDir()
    const raw = randomBytes(32)
    expect(loadMasterKey({ env: raw.toString('hex'), dataDir }).equals(raw)).toBe(true)
    expect(loadMasterKey({ env: raw.toString('hex').toUpperCase(), dataDir }).equals(raw)).toBe(true)
    expect(loadMasterKey({ env: raw.toString('base64'), dataDir }).equals(raw)).toBe(true)
    expect(loadMasterKey({ env: raw.toString('base64url'), dataDir }).equals(raw)).toBe(true)
    expect(() => statSync(join(dataDir, 'master.key'))).toThrow()
  })

  test('anything else is a clear error', () => {
    const dataDir = freshDir()
    for (const env of ['short', 'z'.repeat(64), randomBytes(16).toString('hex'), randomBytes(31).toString('base64'), randomBytes(33).toString('base64')]) {
      expect(() => loadMasterKey({ env, dataDir })).toThrow('RINGBASE_MASTER_KEY must be 64 hex characters or the base64 of 32 bytes')
    }
  })

  test('a corrupt key file is an error, never silently replaced', () => {
    const dataDir = freshDir()
    writeFileSync(join(dataDir, 'master.key'), 'garbage\n')
    expect(() => loadMasterKey({ env: undefined, dataDir })).toThrow('master.key must be 64 hex characters')
    expect(readFileSync(join(dataDir, 'master.key'), 'utf8')).toBe('garbage\n')
  })
})

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
  ari_endpoint: 'http://pbx.example.com:8088', app_name: 'ringbase', app_password: 'ari-password-1',
  ws_client_name: '', dial_string_template: 'PJSIP/{number}', stasis_app_name: 'ringbase_0123456789ab',
  external_pbx: {
    type: 'vicidial', timeout_seconds: 8,
    agent_api: { url: 'https://dialer/agc/api.php', username: 'agent-user', password: 'agent-password', source: 'ringbase' },
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
    const credentials = { access_token: 'EAAG-token', waba_id: '1029384756', app_secret: 'app-secret', webhook_verify_token: 'a'.repeat(32) }
    const sealed = sealCredentials(key, 'whatsapp', credentials)
    expect(JSON.stringify(sealed)).not.toContain('EAAG-token')
    expect(JSON.stringify(sealed)).not.toContain('app-secret')
    expect(sealed).toMatchObject({ waba_id: '1029384756', webhook_verify_token: 'a'.repeat(32) })
    expect(openCredentials(key, 'whatsapp', sealed)).toEqual(credentials)
  })

  test('opening with another key or a plain stored secret fails', () => {
    const sealed = sealCredentials(key, 'twilio', { account_sid: 'AC1', auth_token: 'tok' })
    expect(() => openCredentials(randomBytes(32), 'twilio', sealed)).toThrow()
    expect(() => openCredentials(key, 'twilio', { account_sid: 'AC1', auth_token: 'tok' })).toThrow('not in the v1 sealed format')
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
    expect(maskCredentials('whatsapp', { access_token: 'EAAG-token', waba_id: '42', app_secret: 'app-secret', webhook_verify_token: 'tok-1234567' }))
      .toEqual({ access_token: '******oken', waba_id: '42', app_secret: '******cret', webhook_verify_token: 'tok-1234567' })
    expect(maskCredentials('telnyx', { api_key: 'KEY0123456789', connection_id: 'c1', webhook_public_key: 'pubkey==' }))
      .toEqual({ api_key: '*********6789', connection_id: 'c1', webhook_public_key: 'pubkey==' })
  })

  test('hidden server-managed fields are left out', () => {
    expect(maskCredentials('cloudonix', {
      bearer_token: 'XI-token-1234', domain_id: 'acme.cloudonix.net', application_name: 'app',
      domain_uuid: 'u1', application_id: 'a1', application_uuid: 'a2',
    })).toEqual({ bearer_token: '*********1234', domain_id: 'acme.cloudonix.net', application_name: 'app' })
  })
})

describe('preserveMasked', () => {
  const stored = { account_sid: 'AC0123456789', auth_token: 'twilio-token' }

  test('the exact mask of the stored value keeps the stored value', () => {
    expect(preserveMasked('twilio', { account_sid: '********6789', auth_token: '********oken' }, stored)).toEqual(stored)
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
    expect(preserveMasked('vonage', { signature_secret: '***' }, { signature_secret: 'abc' })).toEqual({ signature_secret: 'abc' })
  })

  test('does not modify its input', () => {
    const incoming = { auth_token: '********oken' }
    preserveMasked('twilio', incoming, stored)
    expect(incoming).toEqual({ auth_token: '********oken' })
  })
})
