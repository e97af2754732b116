import { PROVIDERS, sensitivePaths, type Credentials, type ProviderName } from './providers'
import { decryptSecret, encryptSecret } from '../lib/encryption'
import { maskSecret } from '../lib/mask'
import { isPlainObject } from '../lib/values'

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
function mapSensitive(provider: ProviderName, credentials: Credentials, transform: (value: string) => string): Credentials {
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
