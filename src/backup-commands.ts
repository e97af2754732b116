import { ConfigError, loadConfig, type Flags } from './config'
import { VERSION } from './boot'
import { BackupError, createBackup, restoreBackup } from './storage/backup'

function requiredPath(flags: Flags, name: string): string {
  const value = flags[name]
  if (typeof value !== 'string' || value === '') throw new ConfigError(`--${name} FILE is required`)
  return value
}

/** Errors an operator can act on are shown as they are (exit 2), like a bad flag. */
function asConfigError<T>(run: () => T): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof BackupError) throw new ConfigError(error.message)
    throw error
  }
}

const POSTGRES_BACKUP =
  'backup and restore copy the SQLite database of a data dir; with --database-url, back up PostgreSQL with pg_dump (docs/scale-out.md) and keep the master key'

/** `ringbase backup --out FILE [--dir DATA_DIR]`: safe while a server runs on the data dir. */
export function backupCommand(flags: Flags): void {
  const out = requiredPath(flags, 'out')
  const { dataDir, databaseUrl } = loadConfig(flags)
  if (databaseUrl !== null) throw new ConfigError(POSTGRES_BACKUP)
  const summary = asConfigError(() => createBackup(dataDir, out, VERSION))
  process.stdout.write(`backup of ${dataDir} written to ${out} (${summary.files} files, ${summary.bytes} bytes)\n`)
}

/** `ringbase restore --from FILE [--dir DATA_DIR]`: into an empty (or missing) data dir only. */
export function restoreCommand(flags: Flags): void {
  const from = requiredPath(flags, 'from')
  const { dataDir, databaseUrl } = loadConfig(flags)
  if (databaseUrl !== null) throw new ConfigError(POSTGRES_BACKUP)
  const summary = asConfigError(() => restoreBackup(dataDir, from))
  process.stdout.write(`restored ${summary.files} files from ${from} into ${dataDir}\n`)
}
