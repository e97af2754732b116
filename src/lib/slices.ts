/**
 * Work that may wait a little runs in slices between the event loop's turns: one queue for the whole process, at most
 * SLICE_MS of it per turn, soonest due first. Between two slices the loop reads its sockets, so whatever arrives
 * meanwhile (another call's model answer, its first audio) waits behind one slice, never behind everybody's backlog.
 * A job due within DUE_SOON_MS (a call's line about to run out of audio) runs in the next slice whatever its budget:
 * the backlog waits, a caller's speech does not stutter.
 *
 * Why: when 100 callers stop speaking at the same instant, their replies (≈ 8 s of speech each) arrive within a second.
 * Converted as fast as possible, that held the loop for 0.2–0.4 s per turn, and the calls whose answers came last
 * waited for it before their first audio.
 */
const SLICE_MS = 4
const DUE_SOON_MS = 1_000

type Job = { run: () => void; dueAtMs: number }

const queue: Job[] = []
let scheduled = false

/** Runs `job` in a later slice, by `dueAtMs` (performance.now() time; default: whenever); settles with its result. */
export function inSlice<T>(job: () => T, dueAtMs = Number.POSITIVE_INFINITY): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const run = () => {
      try {
        resolve(job())
      } catch (error) {
        reject(error)
      }
    }
    // kept in due order (stable): the queue holds at most a job or two per call
    let at = queue.length
    while (at > 0 && queue[at - 1].dueAtMs > dueAtMs) at--
    queue.splice(at, 0, { run, dueAtMs })
    if (!scheduled) {
      scheduled = true
      setImmediate(runSlice)
    }
  })
}

function runSlice(): void {
  const until = performance.now() + SLICE_MS
  let ran = 0
  for (let now = performance.now(); queue.length > 0; now = performance.now()) {
    if (ran > 0 && now >= until && queue[0].dueAtMs >= now + DUE_SOON_MS) break
    queue.shift()!.run()
    ran++
  }
  if (queue.length > 0) setImmediate(runSlice)
  else scheduled = false
}
