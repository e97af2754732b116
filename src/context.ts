import type { Database } from 'bun:sqlite'
import type { Config } from './config'
import type { Db } from './db/open'
import type { Clock } from './lib/clock'
import type { Logger } from './log'
import { openDatabase } from './db/open'
import { systemClock } from './lib/clock'
import { createLogger } from './log'
import packageJson from '../package.json'

/** Everything a request or a background loop needs, built once in main.ts (or a test) and passed down. */
export type AppContext = {
  config: Config
  db: Db
  sqlite: Database
  log: Logger
  clock: Clock
  version: string
}
export const VERSION: string = packageJson.version

/** Opens the data dir (database, migrations) and assembles the context. The caller closes `ctx.sqlite`. */
export function buildContext(config: Config, overrides: { log?: Logger; clock?: Clock } = {}): AppContext {
  const log = overrides.log ?? createLogger(config.logLevel)
  const { db, sqlite, applied } = openDatabase(config.dataDir)
  if (applied.length > 0) log.info({ migrations: applied }, 'database migrated')
  return { config, db, sqlite, log, clock: overrides.clock ?? systemClock, version: VERSION }
}
