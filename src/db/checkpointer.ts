import type { Database } from 'bun:sqlite'

export type Checkpointer = { stop(): Promise<void> }

export type CheckpointerOptions = {
  intervalMs: number
  /** A WAL longer than this after a passive checkpoint is restarted (16,384 frames of 4 kB: 64 MB). */
  restartAboveFrames: number
}

const DEFAULT_OPTIONS: CheckpointerOptions = { intervalMs: 1000, restartAboveFrames: 16_384 }

// The worker's whole program. It is kept as source text and started from a Blob so the single executable needs no
// second entry point. PASSIVE never waits for readers or writers: it copies what it can and tries again next time.
// But the WAL only starts over when a write begins after a checkpoint copied all of it, which never happens while
// writes never pause: it grew by ~250 MB/s creating agents (and every read searched its growing index). Past
// restartAboveFrames, RESTART waits for the writer to finish, copies the little PASSIVE left and makes the next write
// start the WAL over; writes wait for it (a few ms, once per restartAboveFrames frames).
const WORKER_SOURCE = `
import { Database } from 'bun:sqlite'
let timer = null
let db = null
self.onmessage = (event) => {
  if (event.data === 'stop') {
    if (timer) clearInterval(timer)
    db?.close()
    self.postMessage('stopped')
    return
  }
  db = new Database(event.data.path)
  db.run('PRAGMA busy_timeout = 5000')
  timer = setInterval(() => {
    const { log } = db.query('PRAGMA wal_checkpoint(PASSIVE)').get()
    if (log > event.data.restartAboveFrames) db.run('PRAGMA wal_checkpoint(RESTART)')
  }, event.data.intervalMs)
  self.postMessage('started')
}
`

/**
 * Moves WAL checkpoints to a worker thread with its own connection: SQLite's automatic checkpoint runs inside whichever
 * commit crosses the threshold and fsyncs the database there, stalling everything for tens of milliseconds (measured:
 * the dialer missed ~12 % of its slots at 500 calls/s). `stop` checkpoints once more on the main connection.
 */
export async function startCheckpointer(
  sqlite: Database,
  path: string,
  options: CheckpointerOptions = DEFAULT_OPTIONS,
): Promise<Checkpointer> {
  const worker = new Worker(URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'application/javascript' })))
  const nextMessage = () =>
    new Promise<void>((resolve, reject) => {
      worker.addEventListener('message', () => resolve(), { once: true })
      worker.addEventListener('error', (event) => reject(new Error(`checkpoint worker: ${event.message}`)), {
        once: true,
      })
    })
  const started = nextMessage()
  worker.postMessage({ path, ...options })
  await started
  // Only once the worker is known to run: otherwise the WAL would grow without bound.
  sqlite.run('PRAGMA wal_autocheckpoint = 0')
  // When a write starts the WAL over, a file grown past this (by a burst within one interval) is cut back to it.
  sqlite.run(`PRAGMA journal_size_limit = ${options.restartAboveFrames * 4096}`)
  return {
    async stop() {
      const stopped = nextMessage()
      worker.postMessage('stop')
      await stopped
      worker.terminate()
      sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
      sqlite.run('PRAGMA wal_autocheckpoint = 1000')
    },
  }
}
