/**
 * Runs `pass` every `everyMs`, never two at once: a pass still running when the next is due makes that one skip.
 * `stop` clears the timer and waits for the pass under way.
 */
export function everyPass(everyMs: number, pass: () => Promise<void>): { stop(): Promise<void> } {
  let running: Promise<void> | null = null
  const timer = setInterval(() => {
    running ??= pass().finally(() => {
      running = null
    })
  }, everyMs)
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
