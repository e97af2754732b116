/**
 * Caller audio timed by its own samples. A transport stamps each frame with its arrival time, but arrival is not when
 * the audio was spoken: after the event loop was blocked (a busy machine), every frame the far end sent meanwhile is
 * read at once, with one arrival time. Taken as arrival times, those frames would be a few milliseconds of audio — too
 * short to start an utterance — and the stall before them would look like the caller's silence, ending the turn.
 *
 * On this clock a frame follows the one before it by its own length, unless the loop was free for a while after that
 * one and nothing came: that is a real gap (Asterisk sends nothing while the line is silent), and the frame starts
 * again where it arrived. A frame never ends after its arrival (times stay comparable with the transport's clock).
 * Silence after the last frame is measured from it (`heardUpToMs`), and only as far as the loop has read the
 * socket: a stall is never taken for the caller's silence.
 */

/** Gaps shorter than this between frames are arrival jitter, not silence (as in turns.ts). */
const GAP_MS = 60
/** How often the loop watch runs. */
const WATCH_INTERVAL_MS = 20
/** `readUpToMs` trails the clock by one to two watch intervals while the loop keeps up; more shows a stall. */
const KEEPING_UP_MS = 3 * WATCH_INTERVAL_MS

/** How far the caller's audio has surely been read, on the transport's clock. */
export type LoopWatch = {
  /**
   * Frames that reached the socket before this time have been read: the watch ran then, and has run again since, so
   * the loop went through its I/O in between. After a stall it stays at the stall's start until the loop catches up.
   */
  readonly readUpToMs: number
  /** Now while the loop keeps up, else `readUpToMs`. */
  heardUpToMs(): number
  stop(): void
}

export function watchEventLoop(now: () => number): LoopWatch {
  let lastRunMs = now()
  let readUpToMs = lastRunMs
  const timer = setInterval(() => {
    readUpToMs = lastRunMs
    lastRunMs = now()
  }, WATCH_INTERVAL_MS)
  return {
    get readUpToMs() {
      return readUpToMs
    },
    heardUpToMs() {
      const atMs = now()
      return atMs - readUpToMs <= KEEPING_UP_MS ? atMs : readUpToMs
    },
    stop: () => clearInterval(timer),
  }
}

export type SampleClock = {
  /** When a frame of `durationMs` that arrived at `arrivalMs` ends on the sample clock. */
  frameEnd(arrivalMs: number, durationMs: number): number
  /** The moment on the sample clock the caller has been heard up to, given it on the transport's clock. */
  heardUpToMs(transportMs: number): number
}

export function createSampleClock(loop: Pick<LoopWatch, 'readUpToMs'>): SampleClock {
  let lastEndMs = -Infinity
  let lastArrivalMs = -Infinity
  return {
    frameEnd(arrivalMs, durationMs) {
      const followingMs = lastEndMs + durationMs
      const { readUpToMs } = loop
      const gapHeard = readUpToMs - lastArrivalMs > GAP_MS
      lastArrivalMs = arrivalMs
      // After a gap the frame reached the socket after the loop last surely read it: at its arrival while the loop
      // keeps up; after a stall, as early as that allows, so the frames read with it fit before their arrival.
      const restartMs = arrivalMs - readUpToMs <= KEEPING_UP_MS ? arrivalMs : readUpToMs + durationMs
      lastEndMs = Math.min(arrivalMs, gapHeard ? Math.max(restartMs, followingMs) : followingMs)
      return lastEndMs
    },
    heardUpToMs(transportMs) {
      return lastArrivalMs === -Infinity ? transportMs : lastEndMs + Math.max(0, transportMs - lastArrivalMs)
    },
  }
}
