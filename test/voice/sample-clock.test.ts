import { describe, expect, test } from 'bun:test'
import { createSampleClock } from '../../src/voice/sample-clock.ts'

describe('sample clock (caller frames timed by their samples)', () => {
  test('frames read at one moment after a stall are laid end to end, not on top of each other', () => {
    const clock = createSampleClock()
    expect(clock.frameEnd(1_000, 20)).toBe(1_000)
    const burst = Array.from({ length: 5 }, () => clock.frameEnd(2_000, 20))
    expect(burst).toEqual([2_000, 2_020, 2_040, 2_060, 2_080])
  })

  test('on-time and jittered frames keep their arrival time; a gap (silence on the line) starts again at the arrival', () => {
    const clock = createSampleClock()
    expect([20, 40, 61, 80].map((arrival) => clock.frameEnd(arrival, 20))).toEqual([20, 40, 61, 81])
    expect(clock.frameEnd(900, 20)).toBe(900)
  })
})
