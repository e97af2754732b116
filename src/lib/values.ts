/** A JSON-style object: not null, not an array. */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** `1 row`, `2 rows`. */
export const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`
