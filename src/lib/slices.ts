/**
 * Work that may wait a little runs in slices between the event loop's turns: one queue for the whole process, at most
 * SLICE_MS of it per turn, first come first served. Between two slices the loop reads its sockets, so whatever arrives
 * meanwhile (another call's model answer, its first audio) waits behind one slice, never behind everybody's backlog.
 *
 * Why: when 100 callers stop speaking at the same instant, their replies (≈ 8 s of speech each) arrive within a second.
 * Converted as fast as possible, half a second at a time, that held the loop for 0.2–0.4 s per turn, and the calls
 * whose answers came last waited for it before their first audio.
 */
const SLICE_MS = 4

const queue: (() => void)[] = []
let scheduled = false

/** Runs `job` in a later slice; settles with its result. */
export function inSlice<T>(job: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queue.push(() => {
      try {
        resolve(job())
      } catch (error) {
        reject(error)
      }
    })
    if (!scheduled) {
      scheduled = true
      setImmediate(runSlice)
    }
  })
}

function runSlice(): void {
  const until = performance.now() + SLICE_MS
  let next = 0
  while (next < queue.length && (next === 0 || performance.now() < until)) queue[next++]()
  queue.splice(0, next)
  if (queue.length > 0) setImmediate(runSlice)
  else scheduled = false
}
