/**
 * Debian's chromium for console tests, driven by playwright-core (no browser download), and the compiled binary they
 * run against.
 */
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
const ROOT = join(import.meta.dir, '..', '..')

/** Headless chromium with nothing running on its own (updates, sync, background requests); `args` go on top. */
export function launchChromium(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  })
}

/** Builds `dist/ringbase`'s equivalent at `binary` (scripts/build.ts), console included. */
export function buildBinary(binary: string): void {
  const build = Bun.spawnSync([process.execPath, join(ROOT, 'scripts', 'build.ts'), binary], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
}
