import { describe, expect, test } from 'bun:test'
import { createSampleClock } from '../../src/voice/sample-clock.ts'

describe('sample clock (caller frames timed by their samples)', () => {
  test('frames read at one moment after a stall in speech follow the frame before it, end to end', () => {
    const loop = { readUpToMs: 990 }
    const clock = createSampleClock(loop)
    expect(clock.frameEnd(1_000, 20)).toBe(1_000)
    // the loop blocked right after that frame was read, until 2 000: no gap was heard
    const burst = Array.from({ length: 5 }, () => clock.frameEnd(2_000, 20))
    expect(burst).toEqual([1_020, 1_040, 1_060, 1_080, 1_100])
    // silence is measured from the last frame, on its clock
    expect(clock.heardUpToMs(2_000)).toBe(1_100)
    expect(clock.heardUpToMs(2_300)).toBe(1_400)
  })

  test('speech that started during a stall is laid from the stall on, never after its arrival', () => {
    const loop = { readUpToMs: 90 }
    const clock = createSampleClock(loop)
    expect(clock.frameEnd(100, 20)).toBe(100)
    loop.readUpToMs = 500 // the line was silent while the loop ran, then it blocked from 500 until 2 000
    const burst = Array.from({ length: 4 }, () => clock.frameEnd(2_000, 20))
    expect(burst).toEqual([520, 540, 560, 580])
  })

  test('a gap the loop was free during (silence on the line) starts again at the arrival; jitter does not', () => {
    const loop = { readUpToMs: 0 }
    const clock = createSampleClock(loop)
    expect(clock.heardUpToMs(10)).toBe(10)
    loop.readUpToMs = 10
    expect(clock.frameEnd(20, 20)).toBe(20)
    loop.readUpToMs = 50
    expect([40, 61, 95].map((arrival) => clock.frameEnd(arrival, 20))).toEqual([40, 60, 80])
    loop.readUpToMs = 880
    expect(clock.frameEnd(900, 20)).toBe(900)
    expect(clock.frameEnd(920, 20)).toBe(920)
    // a frame never ends after it arrived
    expect(clock.frameEnd(925, 20)).toBe(925)
  })
})
