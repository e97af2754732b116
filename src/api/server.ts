import type { ServerWebSocket } from 'bun'
import type { AppContext } from '../context'
import type { App } from './app'
import { httpHandler } from './http-handler'
import { mediaSocketServer, type MediaSocketData } from './telephony-webhooks/media-socket'
import { webCallSocketServer, type WebCallSocketData } from './web-calls/socket'

type SocketData = MediaSocketData | WebCallSocketData

/** The largest WebSocket message any of our sockets takes (carrier media frames and web call audio are far smaller). */
const MAX_SOCKET_MESSAGE_BYTES = 1024 * 1024

/**
 * Serves the HTTP API (through `httpHandler`, like every request from the network), the carriers' media stream
 * WebSockets and the web calls' WebSockets on one listener.
 */
export function serveApi(ctx: AppContext, app: App, options: { hostname: string; port: number; idleTimeout: number }) {
  const media = mediaSocketServer(ctx)
  const web = webCallSocketServer(ctx)
  const handle = httpHandler(app)
  const isWeb = (socket: ServerWebSocket<SocketData>): socket is ServerWebSocket<WebCallSocketData> =>
    'webCall' in socket.data
  return Bun.serve<SocketData>({
    hostname: options.hostname,
    port: options.port,
    idleTimeout: options.idleTimeout,
    fetch(request, server) {
      // The header first: every HTTP request comes through here, and only an upgrade is worth parsing the URL for.
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return handle(request)
      const webAnswer = web.upgrade(request, server)
      if (webAnswer !== false) return webAnswer
      return media.upgrade(request, server) ? undefined : handle(request)
    },
    websocket: {
      maxPayloadLength: MAX_SOCKET_MESSAGE_BYTES,
      open: (socket) =>
        isWeb(socket) ? web.websocket.open(socket) : media.websocket.open(socket as ServerWebSocket<MediaSocketData>),
      message: (socket, message) =>
        isWeb(socket)
          ? web.websocket.message(socket, message)
          : media.websocket.message(socket as ServerWebSocket<MediaSocketData>, message),
      close: (socket, code, reason) =>
        isWeb(socket)
          ? web.websocket.close(socket, code, reason)
          : media.websocket.close(socket as ServerWebSocket<MediaSocketData>, code, reason),
    },
  })
}
