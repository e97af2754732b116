import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { modesUnder, notPrivate } from './support/file-modes'
import { callApi, SOURCE_COMMAND, startServe } from './support/serve-process'

// Everything under the data dir is its user's alone: folders 0700, files 0600 (database, WAL, SHM, key, objects).

const KEY = 'rb_file_modes_bootstrap_key_0123456789ab'
let home: string
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'ringbase-modes-'))
})
afterAll(() => rmSync(home, { recursive: true, force: true }))

test('serve creates a private data dir and keeps the database, its WAL/SHM, the key and uploads private', async () => {
  const dataDir = join(home, 'serve')
  const { server, url } = await startServe(SOURCE_COMMAND, ['--dir', dataDir], { RINGBASE_BOOTSTRAP_API_KEY: KEY })
  try {
    const csv = 'phone_number\n+14155550100\n'
    const grant = await callApi(url, KEY, 'POST', '/api/v1/s3/presigned-upload-url', {
      file_name: 'c.csv',
      file_size: csv.length,
    })
    const put = await fetch(grant.upload_url.replace(/^https?:\/\/[^/]+/, url), {
      method: 'PUT',
      body: csv,
      headers: { 'content-type': 'text/csv' },
    })
    expect(put.status).toBe(200)
    const modes = modesUnder(dataDir)
    expect(modes.join('\n')).toMatch(
      /ringbase\.db-wal 600[^]*ringbase\.db-shm 600|ringbase\.db-shm 600[^]*ringbase\.db-wal 600/,
    )
    expect(modes.some((line) => line.startsWith('master.key '))).toBe(true)
    expect(modes.some((line) => line.startsWith(`objects/${grant.file_key} `))).toBe(true)
    expect(notPrivate(dataDir)).toEqual([])
  } finally {
    server.kill('SIGKILL')
    await server.exited
  }
})

test('migrate and keys create make the same private files; an existing open data dir is closed', () => {
  const dataDir = join(home, 'cli')
  mkdirSync(dataDir, { mode: 0o755 })
  for (const args of [['migrate'], ['keys', 'create', '--org', 'acme']]) {
    const run = Bun.spawnSync([...SOURCE_COMMAND, ...args, '--dir', dataDir])
    expect(run.exitCode).toBe(0)
  }
  const modes = modesUnder(dataDir)
  expect(modes).toContain('. 700')
  expect(modes.some((line) => line.startsWith('ringbase.db '))).toBe(true)
  expect(notPrivate(dataDir)).toEqual([])
})
