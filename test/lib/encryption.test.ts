import { afterEach, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decryptSecret, encryptSecret, loadMasterKey } from '../../src/lib/encryption'

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
    for (const plain of ['twilio-token', 'pässwörd ☎', ''])
      expect(decryptSecret(key, encryptSecret(key, plain))).toBe(plain)
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
      [version, iv, tag, flip(ciphertext)],
      [version, iv, flip(tag), ciphertext],
      [version, flip(iv), tag, ciphertext],
    ]) {
      expect(() => decryptSecret(key, altered.join(':'))).toThrow('wrong master key or altered data')
    }
  })

  test('a truncated tag is rejected', () => {
    const [version, iv, tag, ciphertext] = encryptSecret(key, 'secret').split(':')
    const shortTag = Buffer.from(tag, 'base64').subarray(0, 4).toString('base64')
    expect(() => decryptSecret(key, [version, iv, shortTag, ciphertext].join(':'))).toThrow(
      'not in the v1 sealed format',
    )
  })

  test('another key cannot decrypt', () => {
    expect(() => decryptSecret(randomBytes(32), encryptSecret(key, 'secret'))).toThrow(
      'wrong master key or altered data',
    )
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
    for (const env of [
      'short',
      'z'.repeat(64),
      randomBytes(16).toString('hex'),
      randomBytes(31).toString('base64'),
      randomBytes(33).toString('base64'),
    ]) {
      expect(() => loadMasterKey({ env, dataDir })).toThrow(
        'RINGBASE_MASTER_KEY must be 64 hex characters or the base64 of 32 bytes',
      )
    }
  })

  test('a corrupt key file is an error, never silently replaced', () => {
    const dataDir = freshDir()
    writeFileSync(join(dataDir, 'master.key'), 'garbage\n')
    expect(() => loadMasterKey({ env: undefined, dataDir })).toThrow('master.key must be 64 hex characters')
    expect(readFileSync(join(dataDir, 'master.key'), 'utf8')).toBe('garbage\n')
  })
})
