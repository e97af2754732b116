/** A JSON-style object: not null, not an array. */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** `1 row`, `2 rows`. */
export const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`

/**
 * A deep copy of a JSON value (what JSON.parse makes: objects, arrays, strings, numbers, booleans, null). ~15 times
 * cheaper than structuredClone on a small workflow definition. A `__proto__` key stays an own property, as in the input.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map(cloneJson) as T
  const copy: Record<string, unknown> = {}
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    const item = cloneJson((value as Record<string, unknown>)[key])
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true })
    else copy[key] = item
  }
  return copy as T
}
