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
 * Pure functions over the rhythm stored with the campaign: the scheduler reads it and the N-th previous start inside
 * the transaction that claims a contact and writes the rhythm back there, so every instance dialling the campaign
 * shares one pace. Time is always passed in (ms).
 */

/** A campaign's rhythm: the rate it runs at, its first start, how many starts it has had, and the latest start. */
export type DialRhythm = { rate: number; startedAt: number; dials: number; lastAt: number }

/** The sliding window the rate counts dials in. */
export const WINDOW_MS = 1000
/** How late a start may be and still keep the rhythm, at least. */
const TIMER_SLACK_MS = 5

/** The rhythm at `rate`: a new rate (a PATCH while running) takes over from the latest start. */
function rhythmAt(rhythm: DialRhythm | null, rate: number): DialRhythm | null {
  if (!rhythm || rhythm.rate === rate) return rhythm
  return { rate, startedAt: rhythm.lastAt, dials: 1, lastAt: rhythm.lastAt }
}

// Ideal times are computed, not accumulated, so they stay exact (e.g. every third start at N=300 falls on a whole
// millisecond).
const nextIdeal = (rhythm: DialRhythm) => rhythm.startedAt + (rhythm.dials * WINDOW_MS) / rhythm.rate

/**
 * The earliest time >= now at which a dial may start at `rate`; `windowStart`: the start `rate` starts ago (null when
 * there were fewer).
 */
export function nextDialSlot(stored: DialRhythm | null, rate: number, windowStart: number | null, now: number): number {
  const rhythm = rhythmAt(stored, rate)
  let slot = Math.max(now, rhythm ? nextIdeal(rhythm) : now)
  if (windowStart !== null) slot = Math.max(slot, windowStart + WINDOW_MS)
  return slot
}

/** The rhythm once a dial started at `now`. */
export function rhythmAfterDial(stored: DialRhythm | null, rate: number, now: number): DialRhythm {
  const rhythm = rhythmAt(stored, rate)
  // Timers fire a few ms late; at high rates a slot missed by that little is still made up, or N/s is never reached.
  const lateness = Math.max(WINDOW_MS / rate / 2, TIMER_SLACK_MS)
  if (rhythm && now < nextIdeal(rhythm) + lateness) return { ...rhythm, dials: rhythm.dials + 1, lastAt: now }
  return { rate, startedAt: now, dials: 1, lastAt: now }
}
