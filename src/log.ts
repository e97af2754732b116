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
    destination ?? pino.destination({ fd: 1, sync: false }),
  )
}

type EndableStream = { end?: () => void; once?: (event: 'close', listener: () => void) => void }

/**
 * Ends the log stream once every buffered line is out, the line an asynchronous write still holds included (pino's
 * flushSync skips that one: a stop's last lines were sometimes lost at exit). Gives up after `timeoutMs`, so a stdout
 * nobody reads cannot hold up a stop.
 */
export function closeLog(log: Logger, timeoutMs = 2000): Promise<void> {
  const stream = (log as unknown as Record<symbol, EndableStream>)[pino.symbols.streamSym]
  if (!stream?.end || !stream.once) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs)
    stream.once!('close', () => {
      clearTimeout(timer)
      resolve()
    })
    stream.end!()
  })
}
