// The console's time to usable: `bun scripts/bench/console.ts [runs]` (default 20). Builds the binary, serves it on
// 127.0.0.1 (the LAN at its best: what remains is the server and the browser), signs Debian's chromium
// in (a fresh installation: no run yet), and times from navigation start to the overview showing its first data (the live calls' state and today's
// outcomes, both drawn), read in the page (performance.now() when a MutationObserver first sees both). Cold: a new browser
// context each run (nothing cached); warm: a reload with the hashed assets cached. Prints p50/p95 of each.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { startBinaryTestApp } from '../../test/support/http-app'
import { percentile } from './stats'

const RUNS = Number(process.argv[2] ?? 20)
const ROOT = join(import.meta.dir, '..', '..')

/** Set in the page before its scripts run: the moment both sections of the overview first hold data. */
const READY_PROBE = `
  new MutationObserver((_, observer) => {
    const live = document.querySelector('[aria-labelledby="live-title"]')
    const today = document.querySelector('[aria-labelledby="today-title"]')
    const drawn = (section) => section && section.querySelector('table, .empty, figure')
    if (drawn(live) && drawn(today)) {
      window.__usableAt = performance.now()
      observer.disconnect()
    }
  }).observe(document, { childList: true, subtree: true })
`

const buildDir = mkdtempSync(join(tmpdir(), 'ringbase-bench-'))
const binary = join(buildDir, 'ringbase')
const build = Bun.spawnSync([process.execPath, join(ROOT, 'scripts', 'build.ts'), binary], { stderr: 'pipe' })
if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
const app = await startBinaryTestApp(binary, { waitForLogLines: false, env: { RINGBASE_LOG_LEVEL: 'info' } })
const base = await app.httpUrl()
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] })

async function signedInContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  const response = await context.request.post(`${base}/api/v1/auth/session`, { data: { api_key: app.adminKey } })
  if (response.status() !== 200) throw new Error(`sign-in: ${response.status()} ${await response.text()}`)
  await context.addInitScript(READY_PROBE)
  return context
}

/** Milliseconds from navigation start to the overview's first data, for a load of the page. */
async function usableAfter(load: () => Promise<unknown>, page: import('playwright-core').Page): Promise<number> {
  await load()
  // Polled over CDP (the page's CSP forbids a string predicate); the time itself was taken in the page.
  for (let waited = 0; waited < 10_000; waited += 20) {
    const usableAt = (await page.evaluate('window.__usableAt')) as number | undefined
    if (usableAt !== undefined) return usableAt
    await Bun.sleep(20)
  }
  throw new Error('the overview showed no data within 10 s')
}

const cold: number[] = []
const warm: number[] = []
try {
  for (let run = 0; run < RUNS; run++) {
    const context = await signedInContext()
    const page = await context.newPage()
    cold.push(await usableAfter(() => page.goto(`${base}/`), page))
    warm.push(await usableAfter(() => page.reload(), page))
    await context.close()
  }
} finally {
  await browser.close()
  await app.close()
  rmSync(buildDir, { recursive: true, force: true })
}
const report = (name: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b)
  console.log(
    `${name}: p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms (${samples.length} loads)`,
  )
}
report('overview usable, cold (nothing cached)', cold)
report('overview usable, warm (assets cached) ', warm)
