/**
 * Polls `condition` every `intervalMs` (2 ms; more for a costly condition) until it holds; fails naming `what` after
 * `timeoutMs`. Never a fixed sleep.
 */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 2_000,
  intervalMs = 2,
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await Bun.sleep(intervalMs)
  }
}
