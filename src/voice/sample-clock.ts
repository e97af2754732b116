/**
 * Caller audio timed by its own samples. A transport stamps each frame with its arrival time, but arrival is not when
 * the audio was spoken: after the event loop was blocked (a busy machine), every frame the far end sent meanwhile is
 * read at once, with one arrival time. Taken as arrival times, those frames would be a few milliseconds of audio — too
 * short to start an utterance — and would pile onto one spot of the recording. On this clock a frame ends no earlier
 * than the one before it plus its own length, so a burst keeps its true spacing; a frame arriving after a real gap
 * (Asterisk sends nothing while the line is silent) starts again at its arrival time, so silence stays measured by the
 * wall clock. After a burst the clock runs ahead of the wall clock by up to the stall; the next silence absorbs it.
 */
export type SampleClock = {
  /** When a frame of `durationMs` that arrived at `arrivalMs` ends on the sample clock. */
  frameEnd(arrivalMs: number, durationMs: number): number
}

export function createSampleClock(): SampleClock {
  let lastEndMs = -Infinity
  return {
    frameEnd(arrivalMs, durationMs) {
      lastEndMs = Math.max(arrivalMs, lastEndMs + durationMs)
      return lastEndMs
    },
  }
}
