import { describe, expect, test } from 'bun:test'
import { nextDialSlot, rhythmAfterDial, type DialRhythm } from '../../src/campaigns/pacer'

/**
 * A campaign's pacing as the scheduler keeps it: the stored rhythm, and every start (the campaign's runs, whose N-th
 * latest is the window's).
 */
function createPacer(initialRate: number) {
  let rate = initialRate
  let rhythm: DialRhythm | null = null
  const starts: number[] = []
  const nextSlot = (now: number) => nextDialSlot(rhythm, rate, starts.at(-rate) ?? null, now)
  const record = (now: number) => {
    rhythm = rhythmAfterDial(rhythm, rate, now)
    starts.push(now)
  }
  return {
    nextSlot,
    record,
    take(now: number) {
      if (nextSlot(now) > now) return false
      record(now)
      return true
    },
    setRate(newRate: number) {
      rate = newRate
    },
  }
}

/** Start times when a caller asks at every instant of `pollTimes`. */
function simulate(rate: number, pollTimes: Iterable<number>): number[] {
  const pacer = createPacer(rate)
  const starts: number[] = []
  for (const now of pollTimes) if (pacer.take(now)) starts.push(now)
  return starts
}

function* everyMillisecond(fromMs: number, toMs: number) {
  for (let t = fromMs; t < toMs; t++) yield t
}

/** The most starts in any window [t, t + 1000). */
function busiestSecond(starts: number[]): number {
  let most = 0
  let first = 0
  for (let last = 0; last < starts.length; last++) {
    while (starts[last] - starts[first] >= 1000) first++
    most = Math.max(most, last - first + 1)
  }
  return most
}

const gaps = (starts: number[]) => starts.slice(1).map((s, i) => s - starts[i])

describe('pacing over 10 simulated seconds, polled every millisecond', () => {
  test.each([1, 3, 7, 50, 300, 500])(
    'N=%p: never more than N in any second, total within 2 percent of 10N, evenly spaced',
    (rate) => {
      const starts = simulate(rate, everyMillisecond(0, 10_000))
      expect(busiestSecond(starts)).toBeLessThanOrEqual(rate)
      expect(Math.abs(starts.length - rate * 10)).toBeLessThanOrEqual(rate * 10 * 0.02)
      const interval = 1000 / rate
      for (const gap of gaps(starts)) {
        expect(gap).toBeGreaterThanOrEqual(interval / 2)
        expect(gap).toBeLessThanOrEqual(Math.ceil(interval) + 1)
      }
    },
  )
})

test('busiestSecond counts a sliding window (checks the checker)', () => {
  expect(busiestSecond([0, 999, 1000, 2000])).toBe(2)
  expect(busiestSecond([0, 500, 999])).toBe(3)
})

test('no catch-up burst after an idle period', () => {
  const pacer = createPacer(10)
  expect(pacer.take(0)).toBe(true)
  const starts: number[] = []
  for (const now of everyMillisecond(5000, 5500)) if (pacer.take(now)) starts.push(now)
  expect(starts).toEqual([5000, 5100, 5200, 5300, 5400])
})

test('nextSlot tells the earliest start; take refuses earlier', () => {
  const pacer = createPacer(4)
  expect(pacer.nextSlot(0)).toBe(0)
  expect(pacer.take(0)).toBe(true)
  expect(pacer.nextSlot(0)).toBe(250)
  expect(pacer.nextSlot(100)).toBe(250)
  expect(pacer.take(249)).toBe(false)
  expect(pacer.take(250)).toBe(true)
  expect(pacer.nextSlot(900)).toBe(900) // past its slot: now
})

test('the sliding window binds when starts run late', () => {
  const pacer = createPacer(2)
  expect(pacer.take(0)).toBe(true)
  expect(pacer.take(740)).toBe(true) // late, but less than half an interval: the 500 ms rhythm continues
  expect(pacer.take(1000)).toBe(true)
  // The rhythm alone would allow 1500, but 740 and 1000 are within the last second.
  expect(pacer.nextSlot(1000)).toBe(1740)
  expect(pacer.take(1500)).toBe(false)
  expect(pacer.take(1740)).toBe(true)
})

test('a late start beyond half an interval restarts the rhythm instead of catching up', () => {
  const pacer = createPacer(10)
  pacer.take(0)
  expect(pacer.take(160)).toBe(true) // 60 ms late
  expect(pacer.nextSlot(160)).toBe(260)
})

test('with a jittery poller the window still holds and starts never bunch up', () => {
  let seed = 42
  const jitter = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return 1 + (seed % 7)
  }
  const polls: number[] = []
  for (let t = 0; t < 10_000; t += jitter()) polls.push(t)
  const starts = simulate(100, polls)
  expect(busiestSecond(starts)).toBeLessThanOrEqual(100)
  expect(Math.min(...gaps(starts))).toBeGreaterThanOrEqual(5)
  expect(starts.length).toBeGreaterThan(800)
})

test('a start made without asking counts', () => {
  const pacer = createPacer(5)
  pacer.record(1000)
  expect(pacer.nextSlot(1000)).toBe(1200)
  expect(pacer.take(1100)).toBe(false)
})

test('setRate applies from the last start', () => {
  const faster = createPacer(1)
  faster.take(0)
  expect(faster.nextSlot(0)).toBe(1000)
  faster.setRate(100)
  expect(faster.nextSlot(0)).toBe(10)

  const slower = createPacer(100)
  for (const t of [0, 10, 20]) expect(slower.take(t)).toBe(true)
  slower.setRate(1)
  expect(slower.nextSlot(20)).toBe(1020)
  const starts = [20]
  for (const now of everyMillisecond(21, 5000)) if (slower.take(now)) starts.push(now)
  expect(starts).toEqual([20, 1020, 2020, 3020, 4020])
})
