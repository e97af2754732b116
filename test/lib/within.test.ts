import { describe, expect, test } from 'bun:test'
import { within } from '../../src/lib/within'

describe('within', () => {
  test('work settling first gives its value or its error, and the late answer is never asked for', async () => {
    let askedLate = 0
    const late = () => {
      askedLate++
      return 'late'
    }
    expect(await within(Promise.resolve('work'), 20, late)).toBe('work')
    await expect(within(Promise.reject(new Error('broken')), 20, late)).rejects.toThrow('broken')
    await Bun.sleep(40)
    expect(askedLate).toBe(0)
  })

  test('work still pending after the time gives what late returns, or rejects with what it throws', async () => {
    const never = new Promise<string>(() => {})
    expect(await within(never, 5, () => 'fallback')).toBe('fallback')
    await expect(
      within(never, 5, () => {
        throw new Error('too slow')
      }),
    ).rejects.toThrow('too slow')
  })
})
