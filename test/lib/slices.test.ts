import { describe, expect, test } from 'bun:test'
import { inSlice } from '../../src/lib/slices'

const busy = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // the work of a job
  }
}

describe('work in slices', () => {
  test('jobs run in order, and a timer due meanwhile runs between slices, not after the whole backlog', async () => {
    const order: string[] = []
    const jobs = Array.from({ length: 40 }, (_, index) =>
      inSlice(() => {
        busy(2)
        order.push(`job ${index}`)
        return index
      }),
    )
    setTimeout(() => order.push('timer'), 0)
    expect(await Promise.all(jobs)).toEqual(Array.from({ length: 40 }, (_, index) => index))
    const jobOrder = order.filter((entry) => entry !== 'timer')
    expect(jobOrder).toEqual(Array.from({ length: 40 }, (_, index) => `job ${index}`))
    // 80 ms of work in slices of a few ms: the timer got its turn early on
    expect(order.indexOf('timer')).toBeGreaterThan(0)
    expect(order.indexOf('timer')).toBeLessThan(10)
  })

  test('a job due soon goes first and runs whatever the budget; the backlog waits', async () => {
    const order: string[] = []
    const backlog = Array.from({ length: 20 }, (_, index) =>
      inSlice(() => {
        busy(2)
        order.push(`backlog ${index}`)
      }),
    )
    const dueAt = performance.now() + 100
    const urgent = Array.from({ length: 6 }, (_, index) =>
      inSlice(() => {
        busy(2)
        order.push(`due ${index}`)
      }, dueAt),
    )
    setTimeout(() => order.push('timer'), 0)
    await Promise.all([...backlog, ...urgent])
    // the six due jobs (12 ms, past one slice's budget) ran first and together, before the timer's turn
    expect(order.slice(0, 6)).toEqual(Array.from({ length: 6 }, (_, index) => `due ${index}`))
    expect(order.indexOf('timer')).toBeGreaterThan(5)
    expect(order.filter((entry) => entry.startsWith('backlog'))).toEqual(
      Array.from({ length: 20 }, (_, index) => `backlog ${index}`),
    )
  })

  test('a job that throws rejects its own promise only; the queue goes on', async () => {
    const failing = inSlice(() => {
      throw new Error('broken job')
    })
    const next = inSlice(() => 'done')
    await expect(failing).rejects.toThrow('broken job')
    expect(await next).toBe('done')
  })
})
