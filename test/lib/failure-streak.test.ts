import { describe, expect, test } from 'bun:test'
import { Writable } from 'node:stream'
import { createLogger } from '../../src/log'
import { failureStreak } from '../../src/lib/failure-streak'

function capturedLog() {
  const lines: any[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  return { log: createLogger('info', destination), lines }
}

describe('failureStreak', () => {
  test('a streak of failures is one error line, and the pass that works again one line with how many failed', () => {
    const { log, lines } = capturedLog()
    const loop = failureStreak(log, { failed: 'claim failed', recovered: 'claims work again' })
    loop.succeeded()
    for (const attempt of [1, 2, 3]) loop.failed(new Error(`database down (${attempt})`))
    loop.succeeded()
    loop.succeeded()
    loop.failed(new Error('down again'))
    expect(lines.map((line) => line.msg)).toEqual(['claim failed', 'claims work again', 'claim failed'])
    expect(lines[0].err.message).toBe('database down (1)')
    expect(lines[1].failedPasses).toBe(3)
    expect(lines[1].failingForMs).toBeGreaterThanOrEqual(0)
    expect(lines[2].err.message).toBe('down again')
  })
})
