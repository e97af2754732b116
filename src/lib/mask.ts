/** Every character but the last four becomes `*` (same length); four or fewer are all `*`; null and "" are kept. */
export function maskSecret(value: string): string
export function maskSecret(value: string | null | undefined): string | null | undefined
export function maskSecret(value: string | null | undefined): string | null | undefined {
  if (!value) return value
  const characters = [...value]
  const hiddenCount = characters.length > 4 ? characters.length - 4 : characters.length
  return '*'.repeat(hiddenCount) + characters.slice(hiddenCount).join('')
}

/**
 * Whether a value has the shape `maskSecret` gives (one or more `*`, then at most four characters): sent back when it
 * is not the mask of what is stored, it is a mask copied from elsewhere or edited, never a secret to store.
 */
export const looksMasked = (value: string): boolean => /^\*+.{0,4}$/su.test(value)
