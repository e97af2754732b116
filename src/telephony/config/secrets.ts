import { PROVIDERS, sensitivePaths, type Credentials, type ProviderName } from './providers'
import { decryptSecret, encryptSecret } from '../../lib/encryption'
import { looksMasked, maskSecret } from '../../lib/mask'
import { valueError, type Loc, type ValidationItem } from '../../lib/validation'
import { isPlainObject } from '../../lib/values'

function getPath(source: Record<string, unknown>, dottedPath: string): unknown {
  let current: unknown = source
  for (const segment of dottedPath.split('.')) {
    if (!isPlainObject(current)) return undefined
    current = current[segment]
  }
  return current
}

/** Sets a value whose parent objects already exist; `target` must be a deep copy the caller owns. */
function setPath(target: Record<string, unknown>, dottedPath: string, value: unknown): void {
  const parentSegments = dottedPath.split('.')
  const last = parentSegments.pop()!
  const parent = parentSegments.length === 0 ? target : getPath(target, parentSegments.join('.'))
  if (isPlainObject(parent)) parent[last] = value
}

/** Copies `credentials` and replaces every non-empty string at a sensitive path with `transform(value)`. */
function mapSensitive(
  provider: ProviderName,
  credentials: Credentials,
  transform: (value: string) => string,
): Credentials {
  const copy = structuredClone(credentials)
  for (const path of sensitivePaths(provider)) {
    const value = getPath(copy, path)
    if (typeof value === 'string' && value !== '') setPath(copy, path, transform(value))
  }
  return copy
}

/** Credentials with every sensitive value encrypted, ready to be written to the database. */
export function sealCredentials(key: Buffer, provider: ProviderName, credentials: Credentials): Credentials {
  return mapSensitive(provider, credentials, (value) => encryptSecret(key, value))
}

/** Inverse of `sealCredentials`. */
export function openCredentials(key: Buffer, provider: ProviderName, sealed: Credentials): Credentials {
  return mapSensitive(provider, sealed, (value) => decryptSecret(key, value))
}

/** Decrypted credentials as shown in a response: sensitive values masked, hidden server-managed fields left out. */
export function maskCredentials(provider: ProviderName, credentials: Credentials): Credentials {
  const masked = mapSensitive(provider, credentials, maskSecret)
  for (const field of PROVIDERS[provider].serverManaged) {
    if (!field.shownInResponse) delete masked[field.name]
  }
  return masked
}

/**
 * Lets a client send back what it was shown: an incoming sensitive value that exactly equals the mask of
 * the stored value is replaced by the stored value. Any other value, a mask of another length included,
 * is a new secret.
 */
export function preserveMasked(provider: ProviderName, incoming: Credentials, stored: Credentials): Credentials {
  const resolved = structuredClone(incoming)
  for (const path of sensitivePaths(provider)) {
    const incomingValue = getPath(resolved, path)
    const storedValue = getPath(stored, path)
    if (typeof incomingValue !== 'string' || incomingValue === '' || typeof storedValue !== 'string') continue
    if (incomingValue === maskSecret(storedValue)) setPath(resolved, path, storedValue)
  }
  return resolved
}

const parentOf = (dottedPath: string) => dottedPath.split('.').slice(0, -1).join('.')

/**
 * What a configuration's incoming secrets may not be (`stored` is {} on create; `loc` is where `incoming` sits):
 * - a masked value that is not exactly the mask of the stored secret (a copied or edited mask would store asterisks);
 * - kept from storage (left out, or sent as its mask) while a destination beside it changes: the stored secret would
 *   be sent, as credentials, to a host the request names. It has to come again in clear.
 */
export function secretItems(
  provider: ProviderName,
  incoming: Credentials,
  stored: Credentials,
  loc: Loc,
): ValidationItem[] {
  const items: ValidationItem[] = []
  const at = (path: string) => [...loc, provider, ...path.split('.')]
  const sentInClear = new Set<string>()
  for (const path of sensitivePaths(provider)) {
    const value = getPath(incoming, path)
    if (typeof value !== 'string' || value === '') continue
    const storedValue = getPath(stored, path)
    if (typeof storedValue === 'string' && value === maskSecret(storedValue)) continue
    if (looksMasked(value)) {
      items.push(
        valueError(
          at(path),
          'this is a masked value but not the mask of the stored secret: send the secret itself, or its mask unchanged',
          value,
        ),
      )
    } else {
      sentInClear.add(path)
    }
  }
  for (const destination of PROVIDERS[provider].fields.filter((field) => field.destination)) {
    const next = getPath(incoming, destination.name)
    if (typeof next !== 'string' || next === '' || next === getPath(stored, destination.name)) continue
    for (const path of sensitivePaths(provider)) {
      const storedValue = getPath(stored, path)
      if (
        parentOf(path) !== parentOf(destination.name) ||
        typeof storedValue !== 'string' ||
        storedValue === '' ||
        sentInClear.has(path)
      )
        continue
      items.push(
        valueError(
          at(path),
          `send it again in clear when ${destination.name} changes: the stored one is not sent to a new address`,
          getPath(incoming, path) ?? null,
        ),
      )
    }
  }
  return items
}
