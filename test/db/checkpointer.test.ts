import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCheckpointer } from '../../src/db/checkpointer'
import { databasePath, openDatabase } from '../../src/db/open'

const walBytes = (dir: string) => statSync(`${databasePath(dir)}-wal`, { throwIfNoEntry: false })?.size ?? 0

test('writes that never pause keep the WAL bounded: past the limit it is started over', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-checkpointer-'))
  const { sqlite } = openDatabase(dir)
  try {
    sqlite.run('CREATE TABLE filler (body BLOB NOT NULL)')
    const restartAboveFrames = 64
    const checkpointer = await startCheckpointer(sqlite, databasePath(dir), { intervalMs: 10, restartAboveFrames })
    const insert = sqlite.prepare('INSERT INTO filler (body) VALUES (?)')
    const page = new Uint8Array(3000)
    let largest = 0
    // ~6,000 commits of a page or two each (~30 MB of WAL frames), with the short gaps requests leave between them.
    for (let burst = 0; burst < 300; burst++) {
      for (let commit = 0; commit < 20; commit++) insert.run(page)
      largest = Math.max(largest, walBytes(dir))
      await Bun.sleep(1)
    }
    await checkpointer.stop()
    // The limit plus what a few intervals of these writes add; without restarts the WAL reached ~75 MB here.
    expect(largest).toBeLessThan(16 * 1024 * 1024)
    expect(sqlite.query('SELECT count(*) AS rows FROM filler').get()).toEqual({ rows: 6000 })
    expect(walBytes(dir)).toBe(0)
  } finally {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
