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

/** Writes out every buffered line before the process exits (pino's async flush may never call back during shutdown). */
export function flushLogSync(log: Logger): void {
  const stream = (log as unknown as Record<symbol, { flushSync?: () => void }>)[pino.symbols.streamSym]
  stream?.flushSync?.()
}
