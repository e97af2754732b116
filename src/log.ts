import { writeSync } from 'node:fs'
import type { Logger as CronLogger } from 'node-cron'
import pino from 'pino'
import type { LogLevel } from './config'

export type Logger = pino.Logger

/**
 * Keys (compared in lower case) whose values never reach a log line, at any depth. Checked by our own walk rather than
 * pino's `redact` paths: with wildcard paths, @pinojs/redact re-parses every path for every value of every line, which
 * was half of what serving `GET /health` cost.
 */
const SECRET_KEYS = new Set([
  'api_key',
  'apikey',
  'key',
  'password',
  'app_password',
  'auth_token',
  'bearer_token',
  'api_secret',
  'api_token',
  'private_key',
  'access_token',
  'app_secret',
  'signature_secret',
  'credentials',
  'x-api-key',
  'authorization',
])

const REDACTED = '[redacted]'
/** Deeper than anything we log; it also bounds the walk over cyclic values. */
const REDACTION_DEPTH = 8

/** A copy to censor: an error stays an error (type, message, stack and cause still logged), any other object is plain. */
function copyOf(source: object): Record<string, unknown> {
  if (!(source instanceof Error)) return { ...source }
  const descriptors = Object.getOwnPropertyDescriptors(source)
  for (const descriptor of Object.values(descriptors)) descriptor.configurable = true
  return Object.create(Object.getPrototypeOf(source), descriptors)
}

const censor = (copy: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true })

/**
 * The value with every secret key's value replaced by `[redacted]`. Objects are copied only along the way to a secret;
 * a copy holds the object's own enumerable properties, which is what JSON shows of it.
 */
export function redactSecrets<T>(value: T, depth = 0): T {
  if (typeof value !== 'object' || value === null || depth >= REDACTION_DEPTH) return value
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null
    value.forEach((item, index) => {
      const redacted = redactSecrets(item, depth + 1)
      if (redacted !== item) (copy ??= [...value])[index] = redacted
    })
    return (copy ?? value) as T
  }
  const source = value as Record<string, unknown>
  let copy: Record<string, unknown> | null = null
  for (const key in source) {
    if (!Object.hasOwn(source, key)) continue
    const item = source[key]
    const redacted =
      SECRET_KEYS.has(key.toLowerCase()) && item !== undefined ? REDACTED : redactSecrets(item, depth + 1)
    if (redacted !== item) censor((copy ??= copyOf(source)), key, redacted)
  }
  return (copy ?? value) as T
}

/** JSON lines to stdout (or a given stream); pino transports are avoided because they break compiled binaries. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  const logger = pino(
    {
      level,
      base: undefined,
      formatters: { log: redactSecrets },
      // Serializers run after `formatters.log`: what the error serializer reads off an error (an aggregate's errors)
      // is checked too.
      serializers: { err: (error) => redactSecrets(pino.stdSerializers.err(error)) },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? new StdoutLog(),
  )
  // Pino formats no child's bindings; every child (and its children) inherits this method from the root.
  const child = logger.child
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, redactSecrets(bindings), options)
  } as typeof child
  return logger
}

/** Fields of a line that nests nothing. */
export type FlatFields = Record<string, string | number | boolean | null | undefined>

const INFO = pino.levels.values.info

/**
 * An info line of flat fields, exactly as pino writes one (level, time, the logger's bindings, the fields, msg), built
 * by one JSON.stringify. For the line every request writes: pino's own path (its per-line formatting, its diagnostics
 * channel, the redaction walk over the merged object) cost ~6 µs of the ~15 µs a request to `GET /health` took.
 * Secret keys are redacted as in every other line.
 */
export function logFlatInfo(log: Logger, fields: FlatFields, msg: string): void {
  if (!log.isLevelEnabled('info')) return
  const symbols = log as unknown as Record<symbol, unknown>
  const bindings = symbols[pino.symbols.chindingsSym] as string
  const json = JSON.stringify(redactSecrets(fields))
  const fieldsText = json.length > 2 ? `,${json.slice(1, -1)}` : ''
  const line = `{"level":${INFO},"time":"${new Date().toISOString()}"${bindings}${fieldsText},"msg":${JSON.stringify(msg)}}\n`
  ;(symbols[pino.symbols.streamSym] as pino.DestinationStream).write(line)
}

const writeNow = (line: string) => {
  try {
    writeSync(1, line)
  } catch {
    // stdout is gone: nowhere left to say it.
  }
}

const openStdoutLogs = new Set<StdoutLog>()
process.once('exit', () => openStdoutLogs.forEach((log) => log.handOverAtExit()))

/**
 * Standard output, written asynchronously. The lines of one turn of the event loop go to the stream as one string:
 * sonic-boom measures the bytes of its pending buffer on every write, which per line under load (a write in flight
 * while dozens of requests finish) cost more than everything else a request to `GET /health` did.
 * `close` ends the stream once every buffered line is out, the line an asynchronous write still holds included (pino's
 * flushSync skips that one: a stop's last lines were sometimes lost). A line logged while or after it closes is
 * written synchronously after those, not dropped and not thrown on.
 */
class StdoutLog implements pino.DestinationStream {
  readonly #stream = pino.destination({ fd: 1, sync: false })
  /** Lines of this turn of the event loop, not yet handed to the stream. */
  #batch = ''
  /** Lines logged while the stream drains; null when it is not closing. */
  #held: string[] | null = null
  /** What becomes of a line once closed: written, or dropped when stdout stopped draining. Null while open. */
  #afterClose: 'write' | 'drop' | null = null

  /** Bytes handed to the stream that it has not reported written: a write in flight (or queued behind one). */
  #unwrittenBytes = 0

  constructor() {
    openStdoutLogs.add(this)
    this.#stream.on('write', (bytes: number) => {
      this.#unwrittenBytes -= bytes
    })
  }

  /**
   * A process that exits (an uncaught error, process.exit) runs no more turns. With nothing in flight the batch is
   * written here, synchronously: handed to the stream it would become an asynchronous write that pino's exit flush
   * skips, and the process would end before the write ran (a busy machine lost every line that way). With a write in
   * flight the batch must follow it: it goes to the stream, which pino's own exit handler (registered after this one)
   * writes out synchronously.
   */
  handOverAtExit(): void {
    if (this.#unwrittenBytes > 0) return this.#handOver()
    if (this.#batch !== '') writeNow(this.#batch)
    this.#batch = ''
  }

  write(line: string): void {
    if (this.#held) this.#held.push(line)
    else if (this.#afterClose === 'write') writeNow(line)
    else if (this.#afterClose === null) {
      if (this.#batch === '') setImmediate(this.#handOver)
      this.#batch += line
    }
  }

  readonly #handOver = () => {
    if (this.#batch === '') return
    this.#unwrittenBytes += Buffer.byteLength(this.#batch)
    this.#stream.write(this.#batch)
    this.#batch = ''
  }

  flush(callback?: (error?: Error) => void): void {
    if (this.#held || this.#afterClose) return callback?.()
    this.#handOver()
    this.#stream.flush(callback)
  }

  /** Gives up after `timeoutMs` and drops the rest, so a stdout nobody reads cannot hold up a stop. */
  close(timeoutMs: number): Promise<void> {
    if (this.#held || this.#afterClose) return Promise.resolve()
    this.#handOver()
    openStdoutLogs.delete(this)
    const held: string[] = []
    this.#held = held
    return new Promise((resolve) => {
      const finish = (drained: boolean) => {
        clearTimeout(timer)
        this.#held = null
        this.#afterClose = drained ? 'write' : 'drop'
        if (drained) held.forEach(writeNow)
        resolve()
      }
      const timer = setTimeout(() => finish(false), timeoutMs)
      this.#stream.once('close', () => finish(true))
      this.#stream.end()
    })
  }
}

/** node-cron's messages (e.g. a run missed while the process was busy) as our JSON lines, not its coloured text. */
export function cronLogger(log: Logger): CronLogger {
  const cron = log.child({ component: 'cron' })
  const entry = (message: string | Error, err?: Error) =>
    [
      { err: err ?? (message instanceof Error ? message : undefined) },
      message instanceof Error ? message.message : message,
    ] as const
  return {
    info: (message) => cron.info(message),
    warn: (message) => cron.warn(message),
    error: (message, err) => cron.error(...entry(message, err)),
    debug: (message, err) => cron.debug(...entry(message, err)),
  }
}

/** Closes the log's stdout stream (see StdoutLog); other destinations are left as they are. */
export function closeLog(log: Logger, timeoutMs = 2000): Promise<void> {
  const destination = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym]
  return destination instanceof StdoutLog ? destination.close(timeoutMs) : Promise.resolve()
}
