import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import type { AppContext } from '../../context'
import { requestTarget } from '../http-handler'
import { admitMediaStream, startMediaStream, type MediaStreamPath } from '../../telephony/carriers/media-streams'
import { createCarrierMediaTransport, type CarrierMediaTransport } from '../../voice/carrier-media'

/**
 * The WebSocket endpoint carriers stream call audio to: `/api/v1/telephony/ws/{workflow_id}/{organization_id}/{run_id}/{token}`.
 * Every request to it is upgraded, so that a refusal reaches the carrier as a close code (4400, 4401, 4404, 4409).
 */

/** Not an Elysia route (upgrades never reach the app), so the request log learns of its token from here. */
export const MEDIA_STREAM_ROUTE = '/api/v1/telephony/ws/:workflow_id/:organization_id/:run_id/:token'
const MEDIA_PATH = new RegExp(`^${MEDIA_STREAM_ROUTE.replace(/:[a-z_]+/g, '([^/]+)')}/?$`)

export type MediaSocketData = { path: MediaStreamPath; transport?: CarrierMediaTransport }

export type MediaSocketServer = {
  /** Upgrades a media stream request; false when the request is not one (it goes to the HTTP app). */
  upgrade(request: Request, server: Server<MediaSocketData>): boolean
  websocket: Required<Pick<WebSocketHandler<MediaSocketData>, 'open' | 'message' | 'close'>>
}

export function mediaSocketServer(ctx: AppContext): MediaSocketServer {
  return {
    upgrade(request, server) {
      // The header first: every HTTP request comes through here, and only an upgrade is worth parsing the URL for.
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return false
      const match = MEDIA_PATH.exec(new URL(`http://localhost${requestTarget(request.url)}`).pathname)
      if (!match) return false
      const [, workflowId, organizationId, runId, token] = match.map(decodeURIComponent)
      return server.upgrade(request, { data: { path: { agentId: workflowId, organizationId, runId, token } } })
    },
    websocket: {
      open(socket: ServerWebSocket<MediaSocketData>) {
        const admission = admitMediaStream(ctx, socket.data.path)
        if ('refused' in admission) {
          ctx.log.warn(
            { runId: socket.data.path.runId, code: admission.refused.code, reason: admission.refused.reason },
            'carrier media stream refused',
          )
          socket.close(admission.refused.code, admission.refused.reason)
          return
        }
        const transport = createCarrierMediaTransport(admission.admitted.framing, {
          send: (data) => {
            socket.send(data)
          },
          close: (code, reason) => socket.close(code, reason),
        })
        socket.data.transport = transport
        startMediaStream(ctx, admission.admitted, transport)
      },
      message(socket, message) {
        socket.data.transport?.receive(typeof message === 'string' ? message : new Uint8Array(message))
      },
      close(socket, code, reason) {
        socket.data.transport?.socketClosed(code, reason)
      },
    },
  }
}
