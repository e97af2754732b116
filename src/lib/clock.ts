/** The only source of "now" for code whose behaviour depends on time, so tests can move time without sleeping. */
export type Clock = { now(): number }

export const systemClock: Clock = { now: () => Date.now() }

export const isoNow = (clock: Clock) => new Date(clock.now()).toISOString()

/** A clock tests move by hand. */
export function manualClock(startMs: number): Clock & { advance(ms: number): void; set(ms: number): void } {
  let current = startMs
  return {
    now: () => current,
    advance: (ms) => {
      current += ms
    },
    set: (ms) => {
      current = ms
    },
  }
}
