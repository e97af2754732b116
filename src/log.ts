import { writeSync } from 'node:fs'
import type { Logger as CronLogger } from 'node-cron'
import pino from 'pino'
import type { LogLevel } from './config'

export type Logger = pino.Logger

/** Field paths whose values never reach a log line, wherever they appear. */
const REDACTED_PATHS = [
  'api_key', '*.api_key', 'apiKey', '*.apiKey', 'key', '*.key',
  'password', '*.password', '*.*.password', 'app_password', '*.app_password', '*.*.app_password',
  'auth_token', '*.auth_token', 'bearer_token', '*.bearer_token', 'api_secret', '*.api_secret',
  'api_token', '*.api_token', 'private_key', '*.private_key', 'access_token', '*.access_token',
  'app_secret', '*.app_secret', 'signature_secret', '*.signature_secret', 'credentials', '*.credentials',
  'headers["x-api-key"]', 'headers.authorization', 'req.headers["x-api-key"]', 'req.headers.authorization',
]

/** JSON lines to stdout (or a given stream); pino transports are avoided because they break compiled binaries. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    { level, base: undefined, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination ?? new StdoutLog(),
  )
}

const writeNow = (line: string) => {
  try {
    writeSync(1, line)
  } catch {
    // stdout is gone: nowhere left to say it.
  }
}

/**
 * Standard output, written asynchronously. `close` ends the stream once every buffered line is out, the line an
 * asynchronous write still holds included (pino's flushSync skips that one: a stop's last lines were sometimes lost).
 * A line logged while or after it closes is written synchronously after those, not dropped and not thrown on.
 */
class StdoutLog implements pino.DestinationStream {
  readonly #stream = pino.destination({ fd: 1, sync: false })
  /** Lines logged while the stream drains; null when it is not closing. */
  #held: string[] | null = null
  /** What becomes of a line once closed: written, or dropped when stdout stopped draining. Null while open. */
  #afterClose: 'write' | 'drop' | null = null

  write(line: string): void {
    if (this.#held) this.#held.push(line)
    else if (this.#afterClose === 'write') writeNow(line)
    else if (this.#afterClose === null) this.#stream.write(line)
  }

  flush(callback?: (error?: Error) => void): void {
    if (this.#held || this.#afterClose) callback?.()
    else this.#stream.flush(callback)
  }

  /** Gives up after `timeoutMs` and drops the rest, so a stdout nobody reads cannot hold up a stop. */
  close(timeoutMs: number): Promise<void> {
    if (this.#held || this.#afterClose) return Promise.resolve()
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
    [{ err: err ?? (message instanceof Error ? message : undefined) }, message instanceof Error ? message.message : message] as const
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
