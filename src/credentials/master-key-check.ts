import { createHmac } from 'node:crypto'
import type { SqlDatabase } from '../db/open'
import { transaction } from '../db/transaction'
import { recordInstallationFact } from './queries'

/**
 * Every instance must seal and open secrets with the same master key. Each has a data dir of its own, and so a key file
 * of its own unless RINGBASE_MASTER_KEY is given: an instance started with another key would fail every stored secret,
 * and the secrets it wrote would fail on every other instance. The first start records a check value of the key (an
 * HMAC, which tells nothing of the key); a start with another key is refused before anything is served.
 */

const CHECK_NAME = 'master_key_check'

export class MasterKeyMismatch extends Error {}

const checkValue = (key: Buffer) => createHmac('sha256', key).update('ringbase master key check v1').digest('hex')

export function verifyMasterKey(owner: { sqlite: SqlDatabase }, key: Buffer): void {
  const expected = checkValue(key)
  const recorded = transaction(owner, () => recordInstallationFact(owner.sqlite, CHECK_NAME, expected))
  if (recorded !== expected)
    throw new MasterKeyMismatch(
      'this master key is not the one the stored secrets are sealed with: give every instance the same key (RINGBASE_MASTER_KEY, or the same master.key file)',
    )
}
