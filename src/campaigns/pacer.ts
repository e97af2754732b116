/**
 * Dial pacing for `rate_limit_per_second` N: at most N dial starts in any sliding 1-second window, spread evenly
 * 1000/N ms apart, never a burst, not even a catch-up burst after an idle period.
 *
 * Two rules combine:
 * - a rhythm of ideal start times 1000/N ms apart. A start less than half an interval (and at least 5 ms, a timer's
 *   usual lateness) late keeps the rhythm, so a caller polling on whole milliseconds still reaches N per second; a later
 *   start restarts the rhythm from itself, so missed slots are never made up after a pause;
 * - a hard window: a start is allowed only when the N-th previous start is at least 1000 ms earlier.
 *
 * In-memory and per campaign; time is always passed in (ms).
 */
export type Pacer = {
  /** The earliest time >= now at which a dial may start. */
  nextSlot(now: number): number
  /** Starts a dial at `now` if allowed (and records it); false when the caller must wait for `nextSlot(now)`. */
  take(now: number): boolean
  /** Records a dial that started at `now` without asking (e.g. one placed by another path). */
  record(now: number): void
  setRate(ratePerSecond: number): void
}

const WINDOW_MS = 1000
/** How late a start may be and still keep the rhythm, at least. */
const TIMER_SLACK_MS = 5

function checkRate(ratePerSecond: number) {
  if (!Number.isInteger(ratePerSecond) || ratePerSecond < 1) {
    throw new RangeError(`ratePerSecond must be a whole number >= 1, got ${ratePerSecond}`)
  }
}

export function createPacer(ratePerSecond: number): Pacer {
  checkRate(ratePerSecond)
  let rate = ratePerSecond
  /** The last `rate` start times, oldest first. */
  let recentStarts: number[] = []
  // The rhythm: its first start and how many starts followed it. Ideal times are computed, not accumulated, so
  // they stay exact (e.g. every third start at N=300 falls on a whole millisecond).
  let rhythmStart: number | null = null
  let startsInRhythm = 0

  const interval = () => WINDOW_MS / rate
  // Timers fire a few ms late; at high rates a slot missed by that little is still made up, or N/s is never reached.
  const lateness = () => Math.max(interval() / 2, TIMER_SLACK_MS)
  const nextIdeal = () => (rhythmStart === null ? null : rhythmStart + (startsInRhythm * WINDOW_MS) / rate)

  function nextSlot(now: number): number {
    let slot = Math.max(now, nextIdeal() ?? now)
    if (recentStarts.length === rate) slot = Math.max(slot, recentStarts[0] + WINDOW_MS)
    return slot
  }

  function record(now: number) {
    const ideal = nextIdeal()
    if (ideal !== null && now < ideal + lateness()) {
      startsInRhythm++
    } else {
      rhythmStart = now
      startsInRhythm = 1
    }
    recentStarts.push(now)
    if (recentStarts.length > rate) recentStarts.shift()
  }

  return {
    nextSlot,
    take(now) {
      if (nextSlot(now) > now) return false
      record(now)
      return true
    },
    record,
    setRate(newRate) {
      checkRate(newRate)
      rate = newRate
      recentStarts = recentStarts.slice(-rate)
      rhythmStart = recentStarts.at(-1) ?? null
      startsInRhythm = rhythmStart === null ? 0 : 1
    },
  }
}
