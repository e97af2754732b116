import { expect, test } from 'bun:test'
import { join } from 'node:path'

// The stdout log of a process that stops: run in a child process, since the log is its stdout.
const script = `
import { closeLog, createLogger } from ${JSON.stringify(join(import.meta.dir, '..', 'src', 'log.ts'))}
const log = createLogger('info')
for (let index = 0; index < 200; index++) log.info({ index }, 'before')
const closed = closeLog(log)
log.info('while closing')
await closed
log.info('after closing')
await closeLog(log)
process.exit(0)
`

test('closing the log writes every line, including lines logged while and after it closes, in order, and never throws', () => {
  const child = Bun.spawnSync([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' })
  expect(child.stderr.toString()).toBe('')
  expect(child.exitCode).toBe(0)
  const messages = child.stdout.toString().trim().split('\n').map((line) => JSON.parse(line) as { msg: string; index?: number })
  expect(messages).toHaveLength(202)
  expect(messages.slice(0, 200).map((message) => message.index)).toEqual(Array.from({ length: 200 }, (_, index) => index))
  expect(messages.slice(200).map((message) => message.msg)).toEqual(['while closing', 'after closing'])
})
