/**
 * Resolves on the event loop's next turn, after the I/O and timers waiting: long work awaits it between slices so calls
 * in progress keep their media and timers (a stream read from a file alone never gives the loop a turn).
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
