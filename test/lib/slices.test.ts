import { describe, expect, test } from 'bun:test'
import { inSlice } from '../../src/lib/slices'

/** `count` jobs of 2 ms of work each, named `${name} ${index}` in `order` when they run. */
function queueJobs(order: string[], name: string, count: number, dueAtMs?: number): Promise<number>[] {
  const names = Array.from({ length: count }, (_, index) => `${name} ${index}`)
  return names.map((jobName, index) =>
    inSlice(() => {
      const until = performance.now() + 2
      while (performance.now() < until) {
        // the work of a job
      }
      order.push(jobName)
      return index
    }, dueAtMs),
  )
}

const named = (name: string, count: number) => Array.from({ length: count }, (_, index) => `${name} ${index}`)

describe('work in slices', () => {
  test('jobs run in order, and a timer due meanwhile runs between slices, not after the whole backlog', async () => {
    const order: string[] = []
    const jobs = queueJobs(order, 'job', 40)
    setTimeout(() => order.push('timer'), 0)
    expect(await Promise.all(jobs)).toEqual(Array.from({ length: 40 }, (_, index) => index))
    expect(order.filter((entry) => entry !== 'timer')).toEqual(named('job', 40))
    // 80 ms of work in slices of a few ms: the timer got its turn early on
    expect(order.indexOf('timer')).toBeGreaterThan(0)
    expect(order.indexOf('timer')).toBeLessThan(10)
  })

  test('a job due soon goes first and runs whatever the budget; the backlog waits', async () => {
    const order: string[] = []
    const backlog = queueJobs(order, 'backlog', 20)
    const urgent = queueJobs(order, 'due', 6, performance.now() + 100)
    setTimeout(() => order.push('timer'), 0)
    await Promise.all([...backlog, ...urgent])
    // the six due jobs (12 ms, past one slice's budget) ran first and together, before the timer's turn
    expect(order.slice(0, 6)).toEqual(named('due', 6))
    expect(order.indexOf('timer')).toBeGreaterThan(5)
    expect(order.filter((entry) => entry.startsWith('backlog'))).toEqual(named('backlog', 20))
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
