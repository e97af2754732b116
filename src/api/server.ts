import type { AppContext } from '../context'
import type { App } from './app'
import { httpHandler } from './http-handler'
import { mediaSocketServer, type MediaSocketData } from './telephony-webhooks/media-socket'

/** Serves the HTTP API (through `httpHandler`, like every request from the network) and the carriers' media stream WebSockets on one listener. */
export function serveApi(ctx: AppContext, app: App, options: { hostname: string; port: number; idleTimeout: number }) {
  const media = mediaSocketServer(ctx)
  const handle = httpHandler(app)
  return Bun.serve<MediaSocketData>({
    hostname: options.hostname,
    port: options.port,
    idleTimeout: options.idleTimeout,
    fetch: (request, server) => (media.upgrade(request, server) ? undefined : handle(request)),
    websocket: media.websocket,
  })
}
