import { expect, test } from 'bun:test'
import cron from 'node-cron'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { createLogger, cronLogger } from '../src/log'
import { outputOf, SOURCE_COMMAND, startServe } from './support/serve-process'
import { waitFor } from './support/wait'

// Every line the server writes is JSON: the chatter of node-cron and of Bun.serve goes through our logger or is not
// produced at all.

const nonJsonLines = (text: string) =>
  text.split('\n').filter((line) => {
    if (line === '') return false
    try {
      JSON.parse(line)
      return false
    } catch {
      return true
    }
  })

test("node-cron's missed-execution warning is a JSON line of our log", async () => {
  const lines: string[] = []
  const log = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    }),
  )
  const task = cron.schedule('* * * * * *', () => undefined, { logger: cronLogger(log) })
  try {
    // Block the event loop across a whole second: the run of that second is missed.
    const until = Date.now() + 2_200
    while (Date.now() < until);
    await waitFor('the missed run reported', () => lines.some((line) => line.includes('missed execution')), 3_000)
  } finally {
    await task.destroy()
  }
  expect(nonJsonLines(lines.join(''))).toEqual([])
  expect(JSON.parse(lines.find((line) => line.includes('missed execution'))!)).toMatchObject({
    level: 40,
    component: 'cron',
  })
}, 10_000)

test('a request whose client stalls is timed out without a plain-text warning', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-idle-'))
  const { server, output, url } = await startServe(SOURCE_COMMAND, ['--dir', dataDir, '--http-idle-timeout', '1'])
  const errors = outputOf(server.stderr)
  try {
    const { port } = new URL(url)
    // Headers and half the body, then nothing: the handler waits on the body until the idle timeout closes it. (The run
    // trigger reads its body before the key, which it checks together with the body, as the reference does.)
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        'POST /api/v1/public/agent/any-trigger HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
      )
    })
    socket.on('error', () => undefined)
    await new Promise((resolve) => socket.on('close', resolve))
  } finally {
    server.kill('SIGTERM')
    await server.exited
    rmSync(dataDir, { recursive: true, force: true })
  }
  expect(nonJsonLines(await output.all())).toEqual([])
  // stderr holds only the one-time key banner of a first start (not the log: stdout is).
  expect((await errors.all()).replace(/^\n=== RINGBASE BOOTSTRAP ADMIN API KEY [^\n]* ===\n\n/, '')).toBe('')
}, 30_000)
