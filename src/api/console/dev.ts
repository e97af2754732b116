import { existsSync, readFileSync, watch } from 'node:fs'
import { basename, dirname } from 'node:path'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { Elysia } from 'elysia'
import { readPack, type ConsoleAssets } from './assets'

/**
 * Dev mode (`npm run dev`: scripts/dev.ts rebuilds dist/console.pack whenever a file of web/ changes): the server reads
 * the pack again each time it is rewritten, and every console open in a browser reloads, told over `GET /__dev/reload`
 * (server-sent events) by `/__dev/reload.js`, a script index.html loads only in this mode. The binary never has it.
 */

const RELOAD_SCRIPT = "new EventSource('/__dev/reload').addEventListener('reload', () => location.reload())\n"
const RELOAD_TAG = '<script type="module" src="/__dev/reload.js"></script>'
const KEEP_ALIVE_MS = 15_000

/** The pack's index.html with the reload script added (compressed again: the pack's encodings must all say the same). */
function withReloadScript(assets: ConsoleAssets): ConsoleAssets {
  const page = assets.get('/')
  if (!page) return assets
  const html = new TextDecoder().decode(page.bodies.identity).replace('</head>', `${RELOAD_TAG}</head>`)
  const identity = new TextEncoder().encode(html)
  assets.set('/', {
    type: page.type,
    bodies: { identity, gzip: gzipSync(identity), br: brotliCompressSync(identity) },
  })
  return assets
}

export function devConsole(packPath: string) {
  const assets: ConsoleAssets = new Map()
  const listeners = new Set<ReadableStreamDefaultController<string>>()
  const load = () => {
    if (!existsSync(packPath)) return
    const fresh = withReloadScript(readPack(new Uint8Array(readFileSync(packPath))))
    assets.clear()
    for (const [path, file] of fresh) assets.set(path, file)
  }
  load()
  // The directory is watched, not the file: the builder replaces the file by renaming a new one over it.
  watch(dirname(packPath), (_event, name) => {
    if (name !== basename(packPath)) return
    load()
    for (const listener of listeners) listener.enqueue('event: reload\ndata: {}\n\n')
  })
  const routes = new Elysia()
    .get(
      '/__dev/reload.js',
      () =>
        new Response(RELOAD_SCRIPT, { headers: { 'content-type': 'text/javascript', 'cache-control': 'no-store' } }),
      { detail: { hide: true } },
    )
    .get(
      '/__dev/reload',
      () => {
        let controller: ReadableStreamDefaultController<string>
        let timer: ReturnType<typeof setInterval>
        const body = new ReadableStream<string>({
          start(started) {
            controller = started
            listeners.add(controller)
            controller.enqueue(': dev reload\n\n')
            timer = setInterval(() => controller.enqueue(': keep-alive\n\n'), KEEP_ALIVE_MS)
          },
          cancel() {
            clearInterval(timer)
            listeners.delete(controller)
          },
        })
        return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } })
      },
      { detail: { hide: true } },
    )
  return { assets, routes }
}
