// Runs SQLite WAL checkpoints on its own thread and connection, so their fsyncs never stall the event loop that
// serves HTTP, ARI events and the dialer. Started by src/db/checkpointer.ts.
import { Database } from 'bun:sqlite'

declare const self: Worker

type Start = { path: string; intervalMs: number }

let timer: ReturnType<typeof setInterval> | null = null
let db: Database | null = null

self.onmessage = (event: MessageEvent<Start | 'stop'>) => {
  if (event.data === 'stop') {
    if (timer) clearInterval(timer)
    db?.close()
    self.postMessage('stopped')
    return
  }
  db = new Database(event.data.path)
  db.run('PRAGMA busy_timeout = 5000')
  // PASSIVE never waits for readers or writers: it copies what it can and tries again next time.
  timer = setInterval(() => db!.run('PRAGMA wal_checkpoint(PASSIVE)'), event.data.intervalMs)
}
