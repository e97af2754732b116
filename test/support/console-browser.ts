/**
 * The console in a real browser: Debian's chromium driven by playwright-core against the compiled binary, under the
 * page's real Content-Security-Policy, with a detector for hostile values that run. Shared by the browser suites of
 * test/console/; each photographs its pages into test-artifacts/console/ (a folder per suite but the first).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { compiledBinary } from './compiled-binary'
import { startFakeModels, type FakeModels } from './fake-models'
import { startBinaryTestApp, type HttpTestApp } from './http-app'
import { configureFakeVoiceModels } from './voice-models'
import { waitFor } from './wait'

const ROOT = join(import.meta.dir, '..', '..')
export const SHOTS = join(ROOT, 'test-artifacts', 'console')
const CHROMIUM = '/usr/bin/chromium'
const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8')

/** What every hostile value is: markup that would run if it were ever parsed as HTML. */
export const hostile = (marker: string) =>
  `<img src=x onerror="window.__xss='${marker}'"><script>window.__xss='${marker}'</script>`

export type ConsoleBrowser = {
  browser: Browser
  context: BrowserContext
  page: Page
  /** Every hostile value that ran: each sets window.__xss, whose setter (installed before any page script) reports here. */
  xssRan: string[]
  cspViolations: string[]
  dialogs: string[]
  /** Where this suite's screenshots go (its old ones removed). */
  shots: string
}

/**
 * Chromium with one page; `folder`: the suite's screenshots under test-artifacts/console/ (none: that folder itself);
 * `args`: more command-line switches (a fake microphone).
 */
export async function launchConsoleBrowser(folder?: string, args: string[] = []): Promise<ConsoleBrowser> {
  const shots = folder ? join(SHOTS, folder) : SHOTS
  mkdirSync(shots, { recursive: true })
  for (const name of readdirSync(shots)) if (name.endsWith('.png')) rmSync(join(shots, name))
  const browser = await chromium.launch({
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
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  const xssRan: string[] = []
  const cspViolations: string[] = []
  const dialogs: string[] = []
  await context.exposeBinding('reportXss', (_source, marker) => {
    xssRan.push(String(marker))
  })
  await context.addInitScript(
    "Object.defineProperty(window, '__xss', { set(value) { window.reportXss(value) }, get() { return undefined } })",
  )
  const page = await context.newPage()
  page.on('console', (message) => {
    if (/Content[- ]Security[- ]Policy/i.test(message.text())) cspViolations.push(message.text())
  })
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  return { browser, context, page, xssRan, cspViolations, dialogs, shots }
}

/** axe-core's serious and critical findings on the page as it is now (evaluated over CDP: the page's CSP stays on). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(`${AXE_SOURCE}\nundefined`)
  const results = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[]
  }
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
}

/** The steps of a walk through the console; `current` and `base` are read when a step runs (after beforeAll). */
export function consoleSteps(current: () => ConsoleBrowser, base: () => string) {
  return {
    /** Checks the page with axe and photographs it. */
    async inspect(name: string) {
      const { page, shots } = current()
      await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
      expect(await seriousViolations(page), `accessibility of ${name}`).toEqual([])
    },
    /** A test; when it fails, the page as it was is photographed beside the others. */
    step(name: string, body: () => Promise<void>, timeoutMs = 60_000) {
      test(
        name,
        async () => {
          try {
            await body()
          } catch (error) {
            const { page, shots } = current()
            await page
              .screenshot({
                path: join(shots, `failed-${name.slice(0, 40).replace(/\W+/g, '-')}.png`),
                fullPage: true,
              })
              .catch(() => undefined)
            throw error
          }
        },
        timeoutMs,
      )
    },
    async go(fragment: string, heading: string) {
      const { page } = current()
      await page.goto(`${base()}/#${fragment}`)
      await page.getByRole('heading', { level: 1, name: heading }).waitFor()
    },
  }
}

/** The bodies of the PUT requests `page` sends until `stop()`. */
export function recordPuts(page: Page) {
  const sent: string[] = []
  const listen = (request: { method(): string; postData(): string | null }) => {
    if (request.method() === 'PUT') sent.push(request.postData() ?? '')
  }
  page.on('request', listen)
  return { sent, stop: () => page.off('request', listen) }
}

/** The question a page with unsaved work asks before it is left (LeaveGuard in web/ui.tsx). */
const leaveDialog = (page: Page) => page.getByRole('dialog', { name: 'Leave without saving?' })

const runsLink = (page: Page) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs', exact: true })

/** With a form's changes not saved, a nav link asks first; staying puts the browser back on the page's address. */
export async function leavingAsksAndStays(page: Page) {
  const hash = await page.evaluate<string>('location.hash')
  await runsLink(page).click()
  const leave = leaveDialog(page)
  await leave.waitFor({ timeout: 5_000 })
  await leave.getByRole('button', { name: 'Stay on this page' }).click()
  await leave.waitFor({ state: 'hidden' })
  await waitFor(`back on ${hash}`, async () => (await page.evaluate('location.hash')) === hash, 10_000)
}

/** With nothing unsaved, a nav link leaves at once: the Runs page shows, nothing asked. */
export async function leavingDoesNotAsk(page: Page) {
  await runsLink(page).click()
  await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor({ timeout: 5_000 })
}

export type ConsoleOnBinary = {
  t: HttpTestApp
  models: FakeModels
  consoleBrowser: ConsoleBrowser
  page: Page
  base: string
  close(): Promise<void>
}

/**
 * The compiled binary with the fake model server configured as its voice models, and a browser signed in to its
 * console (the session cookie in the browser's context) with the admin key, or with a trigger key of the admin's
 * organization (`scope: 'trigger'`; `t` still requests as the admin); `folder` as for launchConsoleBrowser.
 */
async function startConsoleOnBinary(
  folder: string,
  { scope = 'admin' }: { scope?: 'admin' | 'trigger' } = {},
): Promise<ConsoleOnBinary> {
  const models = startFakeModels()
  const t = await startBinaryTestApp(compiledBinary(), { waitForLogLines: false })
  const base = await t.httpUrl()
  await configureFakeVoiceModels(t, models)
  const consoleBrowser = await launchConsoleBrowser(folder)
  // the bootstrap admin key's organization is 'default'
  const key = scope === 'admin' ? t.adminKey : t.newOrg('default', 'trigger').key
  const signIn = await consoleBrowser.context.request.post(`${base}/api/v1/auth/session`, { data: { api_key: key } })
  expect(signIn.status()).toBe(200)
  return {
    t,
    models,
    consoleBrowser,
    page: consoleBrowser.page,
    base,
    async close() {
      await consoleBrowser.browser.close()
      await t.close()
      models.stop()
    },
  }
}

/**
 * A browser suite on the compiled binary: the console started before its tests, `then` given it (to keep what the
 * suite uses, and to set up what all its tests share), and closed after them; returns the suite's steps.
 */
export function consoleOnBinarySuite(
  folder: string,
  then: (started: ConsoleOnBinary) => void | Promise<void>,
  options: { scope?: 'admin' | 'trigger' } = {},
) {
  let started: ConsoleOnBinary | undefined
  beforeAll(async () => {
    started = await startConsoleOnBinary(folder, options)
    await then(started)
  }, 240_000)
  afterAll(() => started?.close())
  return consoleSteps(
    () => started!.consoleBrowser,
    () => started!.base,
  )
}
