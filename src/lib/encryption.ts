import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** The master key and the sealing of secrets at rest with it (telephony credentials, provider keys, credentials). */

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const SEALED_PREFIX = 'v1:'
const MASTER_KEY_FILE = 'master.key'

/** Accepts 64 hex characters or the base64 (standard or URL-safe, padding optional) of 32 bytes. */
function parseMasterKey(text: string, origin: string): Buffer {
  const value = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex')
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) {
    const decoded = Buffer.from(value, 'base64')
    if (decoded.length === KEY_BYTES) return decoded
  }
  throw new Error(
    `${origin} must be 64 hex characters or the base64 of 32 bytes (generate one with: openssl rand -hex 32)`,
  )
}

/**
 * The key that encrypts secrets at rest: `RINGBASE_MASTER_KEY` when set (`env`, empty counts as unset),
 * otherwise `<dataDir>/master.key`, created with mode 0600 on first use and reused afterwards.
 */
export function loadMasterKey(options: { env: string | undefined; dataDir: string }): Buffer {
  if (options.env !== undefined && options.env.trim() !== '') return parseMasterKey(options.env, 'RINGBASE_MASTER_KEY')

  const keyPath = join(options.dataDir, MASTER_KEY_FILE)
  try {
    return parseMasterKey(readFileSync(keyPath, 'utf8'), keyPath)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }

  // Written under a temporary name and linked into place, so a crash never leaves a half-written key
  // and two processes starting together end up with the same key.
  mkdirSync(options.dataDir, { recursive: true })
  const temporaryPath = `${keyPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  writeFileSync(temporaryPath, `${randomBytes(KEY_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
  try {
    linkSync(temporaryPath, keyPath)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temporaryPath)
  }
  return parseMasterKey(readFileSync(keyPath, 'utf8'), keyPath)
}

/** AES-256-GCM with a random IV: `v1:<iv>:<tag>:<ciphertext>`, each part base64. */
export function encryptSecret(key: Buffer, plain: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return `${SEALED_PREFIX}${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ciphertext.toString('base64')}`
}

/** Inverse of `encryptSecret`; throws when the value is not sealed, was altered, or was sealed with another key. */
export function decryptSecret(key: Buffer, stored: string): string {
  const parts = stored.startsWith(SEALED_PREFIX) ? stored.slice(SEALED_PREFIX.length).split(':') : []
  if (parts.length !== 3) throw new Error('Stored secret is not in the v1 sealed format')
  const [iv, tag, ciphertext] = parts.map((part) => Buffer.from(part, 'base64'))
  // A short tag would be accepted by the decipher and weaken the integrity check.
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES)
    throw new Error('Stored secret is not in the v1 sealed format')
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAuthTag(tag)
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8')
  } catch {
    throw new Error('Stored secret cannot be decrypted: wrong master key or altered data')
  }
}
