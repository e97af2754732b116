// The console's time to usable: `bun scripts/bench/console.ts [runs]` (default 20). Builds the binary, serves it on
// 127.0.0.1 (the LAN at its best: what remains is the server and the browser), signs Debian's chromium
// in (a fresh installation: no run yet), and times from navigation start to the overview showing its first data (the live calls' state and today's
// outcomes, both drawn), read in the page (performance.now() when a MutationObserver first sees both), and the
// moments it went through (script loaded and run, session, shell, summary, event stream: p50 of each). Cold: a new browser
// context each run (nothing cached); warm: a reload with the hashed assets cached. Prints p50/p95 of each.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
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
    const now = performance.now()
    window.__phases ??= {}
    if (document.querySelector('.topbar')) window.__phases.shell ??= now
    if (drawn(live)) window.__phases.live ??= now
    if (drawn(today)) window.__phases.today ??= now
    if (drawn(live) && drawn(today)) {
      window.__usableAt = now
      observer.disconnect()
    }
  }).observe(document, { childList: true, subtree: true })
`

const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
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

/** What a load's time went on, read in the page: each moment in milliseconds from navigation start. */
const PHASES_READ = `(() => {
  const resources = performance.getEntriesByType('resource')
  const entry = (part) => resources.find((resource) => resource.name.includes(part))
  const end = (part) => entry(part)?.responseEnd
  const navigation = performance.getEntriesByType('navigation')[0]
  return {
    'html answered': navigation.responseEnd,
    'script asked': entry('/assets/index-')?.requestStart,
    'script first byte': entry('/assets/index-')?.responseStart,
    'script loaded': end('/assets/index-'),
    'script run (DOMContentLoaded)': navigation.domContentLoadedEventEnd,
    'session answered': end('/api/v1/auth/session'),
    'shell drawn': window.__phases.shell,
    "today's summary answered": end('/usage/summary'),
    'live calls drawn (event stream)': window.__phases.live,
    "today's outcomes drawn": window.__phases.today,
    usable: window.__usableAt,
  }
})()`

type Phases = Record<string, number | undefined>

/** The moments of a load of the page, once the overview shows its first data. */
async function usableAfter(load: () => Promise<unknown>, page: import('playwright-core').Page): Promise<Phases> {
  await load()
  // Polled over CDP (the page's CSP forbids a string predicate); the time itself was taken in the page.
  for (let waited = 0; waited < 10_000; waited += 20) {
    const usableAt = (await page.evaluate('window.__usableAt')) as number | undefined
    if (usableAt !== undefined) return (await page.evaluate(PHASES_READ)) as Phases
    await Bun.sleep(20)
  }
  throw new Error('the overview showed no data within 10 s')
}

const cold: Phases[] = []
const warm: Phases[] = []
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
const p = (samples: number[], rank: number) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    rank,
  ).toFixed(0)
const report = (name: string, loads: Phases[]) => {
  const usable = loads.map((phases) => phases.usable!)
  console.log(`${name}: p50 ${p(usable, 50)} ms, p95 ${p(usable, 95)} ms (${loads.length} loads)`)
  for (const phase of Object.keys(loads[0]).filter((key) => key !== 'usable')) {
    const moments = loads.map((phases) => phases[phase]).filter((value) => value !== undefined) as number[]
    if (moments.length) console.log(`  ${phase.padEnd(32)} p50 ${p(moments, 50).padStart(5)} ms`)
  }
}
console.log(
  `load average before: ${loadBefore}, after: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
)
report('overview usable, cold (nothing cached)', cold)
report('overview usable, warm (assets cached) ', warm)
