import type { AppContext } from '../context'
import type { App } from './app'
import { mediaSocketServer, type MediaSocketData } from './telephony-webhooks/media-socket'

/** Serves the HTTP API and the carriers' media stream WebSockets on one listener. */
export function serveApi(ctx: AppContext, app: App, address: { hostname: string; port: number }) {
  const media = mediaSocketServer(ctx)
  return Bun.serve<MediaSocketData>({
    hostname: address.hostname,
    port: address.port,
    fetch: (request, server) => (media.upgrade(request, server) ? undefined : app.handle(request)),
    websocket: media.websocket,
  })
}
