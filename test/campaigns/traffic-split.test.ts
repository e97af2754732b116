import { describe, expect, test } from 'bun:test'
import {
  assignVariant,
  isSameSplit,
  mintVariantId,
  reconcileVariantIds,
  validateSplit,
  type TrafficVariant,
} from '../../src/campaigns/traffic-split'

const variant = (id: string, weight: number, workflowId = 1, definitionId: number | null = null): TrafficVariant => ({
  id,
  workflow_id: workflowId,
  workflow_definition_id: definitionId,
  weight,
})

const SEED = '9f1c2a7e4b3d8c6f0a1b2c3d4e5f6a7b'
const contactKeys = (count: number) => Array.from({ length: count }, (_, i) => `csv_ab12cd34_row_${i + 2}`)

const allocate = (keys: string[], variants: TrafficVariant[], seed = SEED) =>
  keys.map((key) => assignVariant(key, seed, variants).id)

/** How many contacts went from which variant to which ("A>B" → count). */
function flows(before: string[], after: string[]): Record<string, number> {
  const moved: Record<string, number> = {}
  before.forEach((from, i) => {
    if (from !== after[i]) moved[`${from}>${after[i]}`] = (moved[`${from}>${after[i]}`] ?? 0) + 1
  })
  return moved
}

const movedCount = (movedFlows: Record<string, number>) => Object.values(movedFlows).reduce((a, b) => a + b, 0)

describe('assignVariant', () => {
  test('is a fixed function of its inputs: known answers that must survive restarts and upgrades', () => {
    const variants = [variant('w1-latest', 50), variant('w2-d7', 30, 2, 7), variant('w3-latest', 20, 3)]
    const ids = Array.from(
      { length: 12 },
      (_, i) => assignVariant(`contact-${i}`, 'seed-0123456789abcdef', variants).id,
    )
    expect(ids).toEqual([
      'w3-latest',
      'w3-latest',
      'w3-latest',
      'w1-latest',
      'w3-latest',
      'w2-d7',
      'w1-latest',
      'w1-latest',
      'w2-d7',
      'w3-latest',
      'w1-latest',
      'w2-d7',
    ])
  })

  test('same inputs give the same variant', () => {
    const variants = [variant('a', 30), variant('b', 70)]
    const keys = contactKeys(500)
    expect(allocate(keys, variants)).toEqual(
      allocate(
        keys,
        variants.map((v) => ({ ...v })),
      ),
    )
  })

  test('reordering the variants changes nothing', () => {
    const variants = [variant('a', 10), variant('b', 20), variant('c', 30), variant('d', 40)]
    const keys = contactKeys(2000)
    const baseline = allocate(keys, variants)
    for (const order of [
      [3, 2, 1, 0],
      [1, 3, 0, 2],
      [2, 0, 3, 1],
    ]) {
      expect(
        allocate(
          keys,
          order.map((i) => variants[i]),
        ),
      ).toEqual(baseline)
    }
  })

  test('the seed matters: another campaign allocates the same contacts differently', () => {
    const variants = [variant('a', 50), variant('b', 50)]
    const keys = contactKeys(1000)
    const same = allocate(keys, variants).filter(
      (id, i) => id === allocate([keys[i]], variants, 'other-seed')[0],
    ).length
    expect(same).toBeGreaterThan(400)
    expect(same).toBeLessThan(600)
  })

  test.each([
    [[100]],
    [[50, 50]],
    [[70, 30]],
    [[1, 99]],
    [[34, 33, 33]],
    [[10, 20, 30, 40]],
    [[20, 20, 20, 20, 20]],
    [[1, 1, 1, 1, 96]],
  ])('shares on 10,000 contacts are within 2 points of weights %p', (weights) => {
    const variants = weights.map((w, i) => variant(`v${i}`, w, i + 1))
    const counts = new Map<string, number>()
    for (const id of allocate(contactKeys(10_000), variants)) counts.set(id, (counts.get(id) ?? 0) + 1)
    variants.forEach((v) => {
      expect(Math.abs(((counts.get(v.id) ?? 0) / 10_000) * 100 - v.weight)).toBeLessThanOrEqual(2)
    })
  })

  test('removing a variant moves only its contacts (ratio of the others kept)', () => {
    const keys = contactKeys(10_000)
    const before = allocate(keys, [variant('A', 40), variant('B', 20), variant('C', 40)])
    const after = allocate(keys, [variant('A', 50), variant('C', 50)])
    const moved = flows(before, after)
    expect(Object.keys(moved).sort()).toEqual(['B>A', 'B>C'])
    expect(movedCount(moved)).toBe(before.filter((id) => id === 'B').length)
  })

  test('removing a variant when whole weights shift the ratio slightly moves almost nobody else', () => {
    const keys = contactKeys(10_000)
    const before = allocate(keys, [variant('A', 50), variant('B', 25), variant('C', 25)])
    const after = allocate(keys, [variant('A', 67), variant('C', 33)])
    const moved = flows(before, after)
    const ofRemoved = (moved['B>A'] ?? 0) + (moved['B>C'] ?? 0)
    expect(ofRemoved).toBe(before.filter((id) => id === 'B').length)
    expect(movedCount(moved) - ofRemoved).toBeLessThan(100) // < 1% of contacts, all C>A (A's share grew)
    expect(moved['A>C']).toBeUndefined()
  })

  test('shifting weight between two variants moves only the needed contacts, one way', () => {
    const keys = contactKeys(10_000)
    const before = allocate(keys, [variant('A', 50), variant('B', 50)])
    const after = allocate(keys, [variant('A', 60), variant('B', 40)])
    const moved = flows(before, after)
    expect(Object.keys(moved)).toEqual(['B>A'])
    expect(Math.abs(movedCount(moved) / 100 - 10)).toBeLessThanOrEqual(2)
  })

  test('a grown variant keeps all its contacts; contacts only flow towards grown variants', () => {
    const keys = contactKeys(10_000)
    const before = allocate(keys, [variant('A', 40), variant('B', 30), variant('C', 30)])
    const after = allocate(keys, [variant('A', 50), variant('B', 20), variant('C', 30)])
    const moved = flows(before, after)
    expect(Object.keys(moved).filter((flow) => flow.startsWith('A>'))).toEqual([])
    expect(Object.keys(moved).filter((flow) => flow.endsWith('>B'))).toEqual([])
    // The minimum is 10%; an unchanged third variant may swap a few contacts, its share staying the same.
    expect(movedCount(moved)).toBeLessThan(1500)
  })

  test('adding a variant only pulls contacts into it', () => {
    const keys = contactKeys(10_000)
    const before = allocate(keys, [variant('A', 50), variant('B', 50)])
    const after = allocate(keys, [variant('A', 40), variant('B', 40), variant('C', 20)])
    const moved = flows(before, after)
    expect(Object.keys(moved).sort()).toEqual(['A>C', 'B>C'])
    expect(Math.abs(movedCount(moved) / 100 - 20)).toBeLessThanOrEqual(2)
  })

  test('a single variant gets everyone; no variant is an error', () => {
    expect(new Set(allocate(contactKeys(200), [variant('only', 100)]))).toEqual(new Set(['only']))
    expect(() => assignVariant('c', SEED, [])).toThrow()
  })
})

describe('variant ids', () => {
  test('mintVariantId derives the id from the pair and avoids taken ids', () => {
    expect(mintVariantId(12, 34, [])).toBe('w12-d34')
    expect(mintVariantId(12, null, [])).toBe('w12-latest')
    expect(mintVariantId(12, null, ['w12-latest'])).toBe('w12-latest-2')
    expect(mintVariantId(12, null, ['w12-latest', 'w12-latest-2'])).toBe('w12-latest-3')
  })

  test('reconcileVariantIds keeps ids per pair, mints new ones, ignores client ids', () => {
    const previous = [
      { id: 'alpha', workflow_id: 1, workflow_definition_id: null, weight: 50 },
      { id: 'beta', workflow_id: 2, workflow_definition_id: 9, weight: 50 },
    ]
    const next = reconcileVariantIds(previous, [
      { workflow_id: 2, workflow_definition_id: 9, weight: 30, id: 'alpha' }, // wrong id sent back: ignored
      { workflow_id: 1, weight: 40 }, // definition omitted = null = same pair as 'alpha'
      { workflow_id: 1, workflow_definition_id: 5, weight: 30 },
    ])
    expect(next).toEqual([
      { id: 'beta', workflow_id: 2, workflow_definition_id: 9, weight: 30 },
      { id: 'alpha', workflow_id: 1, workflow_definition_id: null, weight: 40 },
      { id: 'w1-d5', workflow_id: 1, workflow_definition_id: 5, weight: 30 },
    ])
  })

  test('a removed pair that comes back gets its old id, so its contacts come back too', () => {
    const first = reconcileVariantIds(
      [],
      [
        { workflow_id: 1, weight: 50 },
        { workflow_id: 2, weight: 50 },
      ],
    )
    const without = reconcileVariantIds(first, [{ workflow_id: 1, weight: 100 }])
    const again = reconcileVariantIds(without, [
      { workflow_id: 1, weight: 50 },
      { workflow_id: 2, weight: 50 },
    ])
    expect(again).toEqual(first)
    expect(allocate(contactKeys(300), again)).toEqual(allocate(contactKeys(300), first))
  })

  test('a minted id never collides with an id already used for another pair', () => {
    const previous = [{ id: 'w3-latest', workflow_id: 7, workflow_definition_id: null, weight: 100 }]
    const next = reconcileVariantIds(previous, [
      { workflow_id: 7, weight: 50 },
      { workflow_id: 3, weight: 50 },
    ])
    expect(next.map((v) => v.id)).toEqual(['w3-latest', 'w3-latest-2'])
  })

  test('isSameSplit ignores order and notices weight or membership changes', () => {
    const split = [variant('a', 40), variant('b', 60)]
    expect(isSameSplit(split, [variant('b', 60), variant('a', 40)])).toBe(true)
    expect(isSameSplit(split, [variant('a', 50), variant('b', 50)])).toBe(false)
    expect(isSameSplit(split, [variant('a', 40), variant('c', 60)])).toBe(false)
    expect(isSameSplit(split, [variant('a', 100)])).toBe(false)
  })
})

describe('validateSplit', () => {
  const input = (workflowId: number, weight: number, definitionId?: number | null) => ({
    workflow_id: workflowId,
    weight,
    workflow_definition_id: definitionId,
  })

  test('a valid split has no problems', () => {
    expect(validateSplit([input(1, 100)])).toEqual([])
    expect(validateSplit([input(1, 50), input(1, 25, 3), input(2, 25)])).toEqual([])
    expect(validateSplit([1, 2, 3, 4, 5].map((id) => input(id, 20)))).toEqual([])
  })

  test('counts 1 to 5', () => {
    expect(validateSplit([])).toEqual([
      { path: ['variants'], message: 'traffic_split must have 1 to 5 variants, got 0' },
    ])
    expect(validateSplit([20, 20, 20, 20, 10, 10].map((weight, i) => input(i + 1, weight)))).toEqual([
      { path: ['variants'], message: 'traffic_split must have 1 to 5 variants, got 6' },
    ])
  })

  test('weights are whole numbers 1..100 totalling exactly 100', () => {
    expect(validateSplit([input(1, 0), input(2, 100)])).toEqual([
      { path: ['variants', 0, 'weight'], message: 'weight must be a whole number from 1 to 100, got 0' },
    ])
    expect(validateSplit([input(1, 50.5), input(2, 49.5)])).toEqual([
      { path: ['variants', 0, 'weight'], message: 'weight must be a whole number from 1 to 100, got 50.5' },
      { path: ['variants', 1, 'weight'], message: 'weight must be a whole number from 1 to 100, got 49.5' },
    ])
    expect(validateSplit([input(1, 101)])).toContainEqual({
      path: ['variants', 0, 'weight'],
      message: 'weight must be a whole number from 1 to 100, got 101',
    })
    expect(validateSplit([input(1, 60), input(2, 30)])).toEqual([
      { path: ['variants'], message: 'traffic_split weights must total 100, got 90' },
    ])
  })

  test('pairs are unique; null and omitted definition are the same pair', () => {
    expect(validateSplit([input(1, 50), input(1, 50, null)])).toEqual([
      { path: ['variants', 1], message: 'repeats the workflow_id and workflow_definition_id of variants[0]' },
    ])
    expect(validateSplit([input(1, 50, 4), input(1, 50, 4)])).toHaveLength(1)
    expect(validateSplit([input(1, 50, 4), input(1, 50, 5)])).toEqual([])
  })

  test('workflow_id must be a positive integer', () => {
    expect(validateSplit([input(0, 100)])).toEqual([
      { path: ['variants', 0, 'workflow_id'], message: 'workflow_id must be a positive integer' },
    ])
  })
})
