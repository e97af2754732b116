import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listeningUrl, outputOf } from '../support/serve-process'

/**
 * `npm run dev` (scripts/dev.ts): the console built and served with a reload hook, rebuilt when a file of web/ changes,
 * and every open console told to reload over the dev stream. The hook exists only in dev mode (assets.test.ts checks
 * the built page has no script but its own bundle).
 */

const ROOT = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-dev-'))
const touched = join(ROOT, 'web', `.dev-test-${process.pid}.txt`)
const dev = Bun.spawn([process.execPath, join(ROOT, 'scripts', 'dev.ts'), '--http', '127.0.0.1:0', '--dir', dataDir], {
  stdin: 'ignore',
  stdout: 'pipe',
  stderr: 'pipe',
})

afterAll(async () => {
  dev.kill()
  await dev.exited
  rmSync(touched, { force: true })
  rmSync(dataDir, { recursive: true, force: true })
})

test('dev mode: the page loads the reload hook; a change in web/ rebuilds the console and tells the page to reload', async () => {
  const base = await listeningUrl(outputOf(dev.stdout))
  const page = await fetch(`${base}/`)
  expect(page.status).toBe(200)
  expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
  const html = await page.text()
  expect(html).toContain('<script type="module" src="/__dev/reload.js"></script>')
  const hook = await (await fetch(`${base}/__dev/reload.js`)).text()
  expect(hook).toContain("new EventSource('/__dev/reload')")

  const stream = await fetch(`${base}/__dev/reload`)
  expect(stream.headers.get('content-type')).toBe('text/event-stream')
  const reader = stream.body!.getReader()
  const decoder = new TextDecoder()
  let received = decoder.decode((await reader.read()).value)
  writeFileSync(touched, `${Date.now()}`)
  while (!received.includes('event: reload')) received += decoder.decode((await reader.read()).value)
  await reader.cancel()
  // the page served after the rebuild still carries the hook and its bundle
  const again = await (await fetch(`${base}/`)).text()
  expect(again).toContain('/__dev/reload.js')
  const bundle = again.match(/src="\.?(\/assets\/[^"]+\.js)"/)![1]
  expect((await fetch(`${base}${bundle}`)).status).toBe(200)
}, 60_000)
