import { closeSync, existsSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join, resolve, sep } from 'node:path'
import { DATABASE_FILES, snapshotDatabase } from '../db/backup'
import { DATABASE_FILE } from '../db/open'
import { databaseProblems } from '../db/integrity'
import { readTar, tarWriter } from '../lib/tar'
import { PARTIAL_DIR } from './object-store'

/**
 * A backup is one tar archive of a data dir: a manifest first, then a consistent snapshot of the database, then every
 * other file (the object store, the master key…) except uploads still in progress. Restoring needs an empty data dir.
 */

export const MANIFEST_FILE = 'ringbase-backup.json'
const FORMAT = 1

export class BackupError extends Error {}

export type BackupSummary = { files: number; bytes: number }

/** Every file of the data dir a backup copies as it is, relative paths with `/`. */
function dataFiles(dataDir: string): { path: string; size: number }[] {
  const files: { path: string; size: number }[] = []
  const walk = (relative: string) => {
    for (const entry of readdirSync(join(dataDir, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (entry.name !== PARTIAL_DIR) walk(path)
      } else if (entry.isFile() && !(relative === '' && DATABASE_FILES.includes(entry.name))) {
        files.push({ path, size: statSync(join(dataDir, path)).size })
      }
    }
  }
  walk('')
  return files.sort((a, b) => a.path.localeCompare(b.path))
}

/**
 * Writes the backup of `dataDir` to `outFile` while a server may be running on it. The database snapshot is taken
 * first, so every object it refers to was already stored; the archive appears under its name only once complete.
 */
export function createBackup(dataDir: string, outFile: string, version: string): BackupSummary {
  if (!existsSync(join(dataDir, DATABASE_FILE))) throw new BackupError(`no Ringbase database in ${dataDir}`)
  const partial = `${outFile}.partial`
  const snapshot = `${outFile}.db-snapshot`
  rmSync(snapshot, { force: true })
  try {
    snapshotDatabase(dataDir, snapshot)
    const files = dataFiles(dataDir)
    const archive = tarWriter(openSync(partial, 'w', 0o600))
    const manifest = { format: FORMAT, version, created_at: new Date().toISOString() }
    archive.addBytes(MANIFEST_FILE, new TextEncoder().encode(`${JSON.stringify(manifest)}\n`))
    const snapshotSize = statSync(snapshot).size
    archive.addFile(DATABASE_FILE, snapshot, snapshotSize)
    for (const file of files) archive.addFile(file.path, join(dataDir, file.path), file.size)
    archive.finish()
    renameSync(partial, outFile)
    return { files: files.length + 1, bytes: statSync(outFile).size }
  } finally {
    rmSync(snapshot, { force: true })
    rmSync(partial, { force: true })
  }
}

/** A path from an archive, as a path under `root`; anything that would land elsewhere is refused. */
function targetPath(root: string, path: string): string {
  const target = resolve(root, path)
  if (path.includes('\\') || !target.startsWith(root + sep)) throw new BackupError(`unsafe path in the backup: ${path}`)
  return target
}

/**
 * Unpacks a backup into `dataDir`, which must be empty or missing (created 0700, files 0600). The restored database
 * is checked by SQLite before the restore counts as done; on any failure what was written is removed again.
 */
export function restoreBackup(dataDir: string, fromFile: string): BackupSummary {
  const root = resolve(dataDir)
  if (existsSync(root) && readdirSync(root).length > 0)
    throw new BackupError(`${root} is not empty: restore only into an empty data dir`)
  const source = openSync(fromFile, 'r')
  const createdRoot = !existsSync(root)
  mkdirSync(root, { recursive: true, mode: 0o700 })
  let files = 0
  try {
    readTar(source, (entry, contents) => {
      if (files === 0) {
        if (entry.path !== MANIFEST_FILE) throw new BackupError(`${fromFile} is not a Ringbase backup`)
        const manifest = JSON.parse(contents.bytes().toString('utf8')) as { format?: number }
        if (manifest.format !== FORMAT) throw new BackupError(`unsupported backup format ${manifest.format}`)
      } else {
        const target = targetPath(root, entry.path)
        mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
        const fd = openSync(target, 'wx', 0o600)
        try {
          contents.copyTo(fd)
        } finally {
          closeSync(fd)
        }
      }
      files++
    })
    if (!existsSync(join(root, DATABASE_FILE))) throw new BackupError(`${fromFile} holds no database`)
    const problems = databaseProblems(root)
    if (problems.length > 0)
      throw new BackupError(`the restored database is damaged: ${problems.slice(0, 5).join('; ')}`)
    return { files: files - 1, bytes: statSync(fromFile).size }
  } catch (error) {
    for (const entry of readdirSync(root)) rmSync(join(root, entry), { recursive: true, force: true })
    if (createdRoot) rmSync(root, { recursive: true, force: true })
    throw error
  } finally {
    closeSync(source)
  }
}
