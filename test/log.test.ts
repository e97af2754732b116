import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { createLogger, logFlatInfo } from '../src/log'

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
  const messages = child.stdout
    .toString()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; index?: number })
  expect(messages).toHaveLength(202)
  expect(messages.slice(0, 200).map((message) => message.index)).toEqual(
    Array.from({ length: 200 }, (_, index) => index),
  )
  expect(messages.slice(200).map((message) => message.msg)).toEqual(['while closing', 'after closing'])
})

test('lines logged just before the process exits or crashes are written, in order', () => {
  for (const ending of [
    'process.exit(3)',
    "setTimeout(() => { log.info('before the throw'); throw new Error('boom') }, 5)",
  ]) {
    const script = `
import { createLogger } from ${JSON.stringify(join(import.meta.dir, '..', 'src', 'log.ts'))}
const log = createLogger('info')
for (let index = 0; index < 50; index++) log.info({ index }, 'line')
${ending}
`
    const child = Bun.spawnSync([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' })
    expect(child.exitCode).not.toBe(0)
    const messages = child.stdout
      .toString()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; index?: number })
    expect(messages.slice(0, 50).map((message) => message.index)).toEqual(
      Array.from({ length: 50 }, (_, index) => index),
    )
    expect(messages.slice(50).map((message) => message.msg)).toEqual(
      ending.startsWith('process') ? [] : ['before the throw'],
    )
  }
})

test('secret keys are redacted at any depth, in logged objects, child bindings and errors, without touching the originals', () => {
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
  const SECRET = 'hunter2-very-secret'
  const config = { provider: 'ari', app_password: SECRET, nested: { deeper: { auth_token: SECRET, port: 8088 } } }
  const cause = Object.assign(new Error('socket said no'), { api_token: SECRET })
  const error = Object.assign(new Error('upstream refused', { cause }), { password: SECRET, status: 401 })
  log.info(
    { config, headers: { 'X-API-Key': SECRET, accept: 'json' }, list: [{ apiKey: SECRET }, 'plain'], key: SECRET },
    'saved',
  )
  log.child({ credentials: { token: SECRET }, component: 'ari' }).warn({ err: error, attempt: 2 }, 'failed')
  log.error({ error, when: new Date(0) }, 'plain error object')
  log.error({ err: new AggregateError([cause], 'every attempt failed') }, 'aggregate')
  const text = lines.join('')
  expect(text).not.toContain(SECRET)
  const [saved, failed, plain, aggregate] = lines.map((line) => JSON.parse(line))
  expect(saved).toMatchObject({
    msg: 'saved',
    key: '[redacted]',
    headers: { 'X-API-Key': '[redacted]', accept: 'json' },
    list: [{ apiKey: '[redacted]' }, 'plain'],
    config: {
      provider: 'ari',
      app_password: '[redacted]',
      nested: { deeper: { auth_token: '[redacted]', port: 8088 } },
    },
  })
  expect(failed).toMatchObject({
    component: 'ari',
    credentials: '[redacted]',
    attempt: 2,
    err: { message: 'upstream refused: socket said no', password: '[redacted]', status: 401 },
  })
  expect(failed.err.stack).toContain('upstream refused')
  expect(plain).toMatchObject({ error: { password: '[redacted]', status: 401 }, when: '1970-01-01T00:00:00.000Z' })
  expect(aggregate.err.aggregateErrors).toMatchObject([{ message: 'socket said no', api_token: '[redacted]' }])
  expect(config.app_password).toBe(SECRET)
  expect(config.nested.deeper.auth_token).toBe(SECRET)
  expect(error.password).toBe(SECRET)
})

test('a flat info line is the line pino writes for the same fields, bindings and message, secret keys redacted', () => {
  const lines: string[] = []
  const root = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    }),
  )
  const fields = {
    requestId: 'a"b\n',
    path: '/api/v1/é',
    status: 200,
    durationMs: 1.25,
    orgId: undefined,
    password: 'secret-password',
  }
  for (const log of [root, root.child({ component: 'http' })]) {
    log.info(fields, 'request "done"')
    logFlatInfo(log, fields, 'request "done"')
  }
  logFlatInfo(
    createLogger(
      'warn',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk))
          done()
        },
      }),
    ),
    fields,
    'not at warn',
  )
  const withoutTime = lines.map((line) => line.replace(/"time":"[^"]+"/, '"time":"T"'))
  expect(withoutTime).toHaveLength(4)
  expect(withoutTime[1]).toBe(withoutTime[0])
  expect(withoutTime[3]).toBe(withoutTime[2])
  expect(JSON.parse(lines[3])).toMatchObject({
    level: 30,
    component: 'http',
    password: '[redacted]',
    requestId: 'a"b\n',
    msg: 'request "done"',
  })
  expect(lines.join('')).not.toContain('secret-password')
})
