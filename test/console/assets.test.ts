import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { buildConsole } from '../../scripts/build-console'
import { createApp } from '../../src/api/app'
import { readPack, type ConsoleAssets } from '../../src/api/console/assets'
import { createTestApp, type TestApp } from '../support/app'

// The console's files as the server serves them: hashed, cached for good, compressed as the browser asks, under a
// strict Content-Security-Policy. The pack is built here from web/ (scripts/build-console.ts, as the binary's build).

let t: TestApp
let assets: ConsoleAssets
let gzippedSizes: Record<string, number>
let packDir: string
let app: ReturnType<typeof createApp>

beforeAll(async () => {
  packDir = mkdtempSync(join(tmpdir(), 'ringbase-pack-'))
  gzippedSizes = await buildConsole(join(packDir, 'console.pack'))
  assets = readPack(new Uint8Array(readFileSync(join(packDir, 'console.pack'))))
  t = createTestApp()
  app = createApp(t.ctx, { console: assets })
}, 60_000)

afterAll(() => {
  t.close()
  rmSync(packDir, { recursive: true, force: true })
})

const get = (path: string, headers: Record<string, string> = {}) =>
  app.handle(new Request(`http://localhost${path}`, { headers }))

/** The scripts the page loads first: those it names and, transitively, what they import statically. */
const initialScripts = async () => {
  const found = new Set((await pagePaths()).filter((path) => path.endsWith('.js')))
  for (const path of found) {
    const text = new TextDecoder().decode(assets.get(path)!.bodies.identity)
    for (const match of text.matchAll(/(?:from|import)\s*"(\/assets\/[^"]+\.js)"/g)) found.add(match[1])
  }
  return [...found]
}

const pagePaths = async () => {
  const html = await (await get('/')).text()
  return [...html.matchAll(/(?:src|href)="\.?(\/assets\/[^"]+)"/g)].map((match) => match[1])
}

describe('the console page', () => {
  test('GET / is the page: revalidated each load, with the security headers', async () => {
    const response = await get('/')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/html')
    expect(response.headers.get('cache-control')).toBe('no-cache')
    const csp = response.headers.get('content-security-policy')!
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ]) {
      expect(csp).toContain(directive)
    }
    expect(csp).not.toContain('unsafe')
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    expect(response.headers.get('referrer-policy')).toBe('no-referrer')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
  })

  test('no inline script or style, and nothing loaded from another origin', async () => {
    const html = await (await get('/')).text()
    const scripts = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBeGreaterThan(0)
    for (const [tag, body] of scripts) {
      expect(tag).toMatch(/ src="\.?\/assets\/[\w-]+\.js"/)
      expect(body).toBe('')
    }
    expect(html).not.toMatch(/<style|style="|https?:\/\//)
    for (const path of (await pagePaths()).filter((path) => path.endsWith('.css'))) {
      expect(await (await get(path)).text()).not.toMatch(/url\(|@import|https?:\/\//)
    }
  })

  test('assets are hashed and cached for good; an unknown one is a 404 {detail}', async () => {
    const paths = await pagePaths()
    expect(paths.some((path) => path.endsWith('.js'))).toBe(true)
    expect(paths.some((path) => path.endsWith('.css'))).toBe(true)
    for (const path of paths) {
      expect(path).toMatch(/^\/assets\/[\w]+-[a-z0-9]{8}\.(js|css)$/)
      const response = await get(path)
      expect(response.status).toBe(200)
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'")
    }
    const unknown = await get('/assets/nothing-12345678.js')
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ detail: 'Not Found' })
  })

  test('brotli, gzip or plain bytes as Accept-Encoding says, all the same content', async () => {
    const path = (await pagePaths()).find((item) => item.endsWith('.js'))!
    const plain = await get(path)
    expect(plain.headers.get('content-encoding')).toBeNull()
    const original = Buffer.from(await plain.arrayBuffer())
    const br = await get(path, { 'accept-encoding': 'gzip, deflate, br' })
    expect(br.headers.get('content-encoding')).toBe('br')
    expect(br.headers.get('vary')).toBe('Accept-Encoding')
    const brBytes = Buffer.from(await br.arrayBuffer())
    expect(brBytes.length).toBeLessThan(original.length / 2)
    expect(brotliDecompressSync(brBytes).equals(original)).toBe(true)
    const gzip = await get(path, { 'accept-encoding': 'gzip' })
    expect(gzip.headers.get('content-encoding')).toBe('gzip')
    expect(gunzipSync(Buffer.from(await gzip.arrayBuffer())).equals(original)).toBe(true)
    expect((await get(path, { 'accept-encoding': 'br;q=0, gzip' })).headers.get('content-encoding')).toBe('gzip')
  })

  test('the initial JavaScript is within the budget: 250 KB gzipped', async () => {
    const scripts = await initialScripts()
    const total = scripts.reduce((sum, path) => sum + gzippedSizes[path], 0)
    expect(total).toBeGreaterThan(10_000)
    expect(total).toBeLessThanOrEqual(250_000)
  })

  test('the first load parses the shell and the overview only: every other page is a chunk loaded when shown', async () => {
    const initial = (await initialScripts()).map((path) => new TextDecoder().decode(assets.get(path)!.bodies.identity))
    const inInitial = (text: string) => initial.some((script) => script.includes(text))
    expect(inInitial("Today's calls by outcome")).toBe(true)
    for (const pageText of ['Add a configuration', 'Export CSV', 'Create key', 'Save prices', 'Live transcript'])
      expect({ pageText, initial: inInitial(pageText) }).toEqual({ pageText, initial: false })
  })

  test("the page asks for its session while its scripts load (a preload the console's first request uses)", async () => {
    const html = await (await get('/')).text()
    expect(html).toContain('<link rel="preload" href="/api/v1/auth/session" as="fetch" crossorigin>')
  })

  test('a server built without the console says how to get it at /', async () => {
    const response = await t.request('GET', '/', { key: null })
    expect(response.status).toBe(404)
    expect(response.body.detail).toContain('npm run build')
  })
})
