import { serveApi } from '../../../src/api/server'
import type { Flags } from '../../../src/config'
import type { Clock } from '../../../src/lib/clock'
import { createTestApp, type TestApp } from '../app'

/**
 * What every fake carrier shares: a recording HTTP server on 127.0.0.1, the app served for real (carriers reach it over
 * HTTP and WebSocket) behind a public URL that only the fakes translate, and a media stream client.
 */

/** The URL the app believes it is reached at, as behind a TLS proxy: the fakes sign and call these URLs. */
export const PUBLIC_URL = 'https://ringbase.example.com'

export type CarrierTestApp = TestApp & {
  /** Where a public URL of the app actually answers (http(s)/ws(s) → the local listener). */
  reach(url: string): string
  stopServer(): void
}

/**
 * A test app served on 127.0.0.1:0 with the public URL above. `beside`: a second instance of that app's installation
 * (its data dir and database), running at the same time.
 */
export function createCarrierTestApp(options: { flags?: Flags; clock?: Clock; beside?: TestApp } = {}): CarrierTestApp {
  const t = createTestApp({
    flags: { 'public-url': PUBLIC_URL, ...options.flags },
    clock: options.clock,
    restartOf: options.beside,
  })
  const server = serveApi(t.ctx, t.app, {
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: t.ctx.config.httpIdleTimeoutSeconds,
  })
  const local = `127.0.0.1:${server.port}`
  return Object.assign(t, {
    reach: (url: string) =>
      url
        .replace(/^https:\/\/ringbase\.example\.com/, `http://${local}`)
        .replace(/^wss:\/\/ringbase\.example\.com/, `ws://${local}`),
    stopServer: () => {
      server.stop(true)
    },
  })
}

export type RecordedCarrierRequest = {
  method: string
  path: string
  headers: Headers
  /** Form fields (repeated ones as arrays) or the JSON body. */
  body: Record<string, any>
}

export type FakeServer = { baseUrl: string; requests: RecordedCarrierRequest[]; stop(): void }

/** Records every request, then answers with `handle`; a 404 for what it does not handle. */
export function startFakeServer(
  handle: (request: RecordedCarrierRequest) => Response | null | Promise<Response | null>,
): FakeServer {
  const requests: RecordedCarrierRequest[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      const text = await request.text()
      const type = request.headers.get('content-type') ?? ''
      let body: Record<string, any> = {}
      if (type.includes('json') && text) body = JSON.parse(text)
      else if (text) {
        for (const [key, value] of new URLSearchParams(text)) {
          body[key] = key in body ? [body[key]].flat().concat(value) : value
        }
      }
      const recorded = { method: request.method, path: url.pathname + url.search, headers: request.headers, body }
      requests.push(recorded)
      return (await handle(recorded)) ?? Response.json({ message: 'not found' }, { status: 404 })
    },
  })
  return {
    baseUrl: `http://127.0.0.1:${server.port}`,
    requests,
    stop: () => {
      server.stop(true)
    },
  }
}

export type MediaClient = {
  /** Every text message the app sent, parsed when JSON. */
  readonly texts: any[]
  /** Every binary message the app sent. */
  readonly binaries: Uint8Array[]
  readonly opened: Promise<void>
  readonly closed: Promise<{ code: number; reason: string }>
  send(message: string | Uint8Array | object): void
  close(code?: number): void
}

/** A carrier's side of a media stream: connects to the app like the carrier would. */
export function connectMedia(url: string): MediaClient {
  const socket = new WebSocket(url)
  socket.binaryType = 'arraybuffer'
  const texts: any[] = []
  const binaries: Uint8Array[] = []
  const opened = new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve())
    socket.addEventListener('error', () => reject(new Error(`media stream to ${url} failed`)))
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.addEventListener('close', (event) => resolve({ code: event.code, reason: event.reason }))
  })
  opened.catch(() => undefined)
  socket.addEventListener('message', (event) => {
    if (typeof event.data === 'string') {
      try {
        texts.push(JSON.parse(event.data))
      } catch {
        texts.push(event.data)
      }
    } else binaries.push(new Uint8Array(event.data as ArrayBuffer))
  })
  return {
    texts,
    binaries,
    opened,
    closed,
    send(message) {
      socket.send(typeof message === 'string' || message instanceof Uint8Array ? message : JSON.stringify(message))
    },
    close(code = 1000) {
      socket.close(code)
    },
  }
}

/** The form body of a webhook, as carriers send it. */
export const formBody = (params: Record<string, string>) => ({
  body: new URLSearchParams(params).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
})

/** What a fake is still doing (calls it plays, callbacks it sends), so a test can wait until it is all done. */
export function createPlayback() {
  const playing = new Set<Promise<unknown>>()
  return {
    track<T>(promise: Promise<T>): Promise<T> {
      playing.add(promise)
      void promise.finally(() => playing.delete(promise)).catch(() => undefined)
      return promise
    },
    async idle(): Promise<void> {
      while (playing.size > 0) await Promise.allSettled([...playing])
    },
  }
}
