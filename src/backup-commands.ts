import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig, type Config, type Flags } from './config'
import { objectStoreFor, VERSION } from './boot'
import { BackupError, createBackup, restoreBackup } from './storage/backup'
import { InvalidObjectKeyError } from './storage/object-store'

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

/**
 * `ringbase backup --out FILE [--dir DATA_DIR]`: safe while a server runs on the data dir. With `--to-object-store`
 * instead of `--out`, the archive goes into the configured object store (an S3 bucket: off the machine) under
 * `backups/`, by way of a temporary file.
 */
export async function backupCommand(flags: Flags): Promise<void> {
  const config = loadConfig(flags)
  if (config.databaseUrl !== null) throw new ConfigError(POSTGRES_BACKUP)
  if (flags['to-object-store'] === true) return backupToObjectStore(config)
  const out = requiredPath(flags, 'out')
  const summary = asConfigError(() => createBackup(config.dataDir, out, VERSION))
  process.stdout.write(
    `backup of ${config.dataDir} written to ${out} (${summary.files} files, ${summary.bytes} bytes)\n`,
  )
}

async function backupToObjectStore(config: Config): Promise<void> {
  const store = objectStoreFor(config)
  const key = `backups/ringbase-${new Date().toISOString().replace(/[:.]/g, '-')}.tar`
  await withTemporaryArchive(async (archive) => {
    const summary = asConfigError(() => createBackup(config.dataDir, archive, VERSION))
    await store.put(key, Bun.file(archive))
    process.stdout.write(
      `backup of ${config.dataDir} written to ${store.location}/${key} (${summary.files} files, ${summary.bytes} bytes)\n`,
    )
  })
}

/** A path for an archive in a private temporary folder (outside the data dir it may copy), removed afterwards. */
async function withTemporaryArchive(work: (archive: string) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'ringbase-backup-'))
  try {
    await work(join(folder, 'backup.tar'))
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

/**
 * `ringbase restore --from FILE [--dir DATA_DIR]`: into an empty (or missing) data dir only. `--from-object-store KEY`
 * takes the archive from the configured object store (a key `ringbase backup --to-object-store` printed).
 */
export async function restoreCommand(flags: Flags): Promise<void> {
  const config = loadConfig(flags)
  if (config.databaseUrl !== null) throw new ConfigError(POSTGRES_BACKUP)
  const key = flags['from-object-store']
  if (typeof key === 'string' && key !== '') return restoreFromObjectStore(config, key)
  const from = requiredPath(flags, 'from')
  const summary = asConfigError(() => restoreBackup(config.dataDir, from))
  process.stdout.write(`restored ${summary.files} files from ${from} into ${config.dataDir}\n`)
}

async function restoreFromObjectStore(config: Config, key: string): Promise<void> {
  const store = objectStoreFor(config)
  const stored = await store.get(key).catch((error) => {
    throw error instanceof InvalidObjectKeyError ? new ConfigError(`--from-object-store: ${error.message}`) : error
  })
  if (!stored) throw new ConfigError(`no backup ${key} in ${store.location}`)
  await withTemporaryArchive(async (archive) => {
    await Bun.write(archive, new Response(stored.stream()))
    const summary = asConfigError(() => restoreBackup(config.dataDir, archive))
    process.stdout.write(`restored ${summary.files} files from ${store.location}/${key} into ${config.dataDir}\n`)
  })
}
