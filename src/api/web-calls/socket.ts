import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import type { AppContext } from '../../context'
import { requestTarget } from '../http-handler'
import { MISSING_OR_INVALID_KEY, requireSession } from '../auth'
import { authenticateKey } from '../../auth/keys'
import { stillSignedIn } from '../../auth/sessions'
import { DomainError, forbidden, notFound, unauthenticated } from '../../lib/errors'
import { admitWebCallSocket, runWebCall, type WebCall, type WebCaller } from '../../calls/web-call'
import { createWebMediaTransport, type WebMediaTransport } from '../../voice/web-media'
import { httpStatus } from '../errors'

/**
 * The WebSocket of a web call: `/api/v1/web-calls/{run_id}/socket`, opened by the session or key that started the call
 * (POST /api/v1/workflow/{workflow_id}/web-calls). A browser session's upgrade must come from the console's own origin
 * (another site could make the browser send the cookie, not forge Origin). A refused upgrade is an HTTP answer with
 * `{detail}`, like any API error.
 */

const SOCKET_PATH = /^\/api\/v1\/web-calls\/([^/]+)\/socket\/?$/

export const webCallSocketPath = (runId: number) => `/api/v1/web-calls/${runId}/socket`

export type WebCallSocketData = { webCall: { caller: WebCaller; call: WebCall; transport?: WebMediaTransport } }

/** Where the browser's page came from must be where it talks to: the request's own host, or the public URL. */
function sameOrigin(ctx: AppContext, request: Request): boolean {
  const origin = request.headers.get('origin')
  if (!origin) return false
  const host = request.headers.get('host')
  const allowed = [new URL(ctx.config.publicUrl).origin]
  if (host) allowed.push(`http://${host}`, `https://${host}`)
  return allowed.includes(origin)
}

function callerOf(ctx: AppContext, request: Request): WebCaller {
  const key = request.headers.get('x-api-key')
  if (key) {
    const principal = authenticateKey(ctx, key)
    if (!principal) throw unauthenticated(MISSING_OR_INVALID_KEY)
    return { principal, sessionId: null }
  }
  const session = requireSession(ctx, request)
  if (!sameOrigin(ctx, request)) throw forbidden('A web call socket opens only from the console’s own origin')
  return { principal: session.principal, sessionId: session.id }
}

const refusal = (error: DomainError) =>
  new Response(JSON.stringify({ detail: error.detail }), {
    status: httpStatus(error),
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  })

export type WebCallSocketServer = {
  /** Upgrades a web call socket: undefined once upgraded, a Response when refused, false when not one (HTTP app). */
  upgrade(request: Request, server: Server<WebCallSocketData>): Response | undefined | false
  websocket: Required<Pick<WebSocketHandler<WebCallSocketData>, 'open' | 'message' | 'close'>>
}

export function webCallSocketServer(ctx: AppContext): WebCallSocketServer {
  return {
    upgrade(request, server) {
      const match = SOCKET_PATH.exec(new URL(`http://localhost${requestTarget(request.url)}`).pathname)
      if (!match) return false
      try {
        const runId = /^[1-9]\d{0,15}$/.test(match[1]) ? Number(match[1]) : null
        if (runId === null) throw notFound('Web call not found')
        const caller = callerOf(ctx, request)
        const call = admitWebCallSocket(ctx, caller, runId)
        return server.upgrade(request, { data: { webCall: { caller, call } } })
          ? undefined
          : refusal(new DomainError('refused', 'Expected a WebSocket upgrade'))
      } catch (error) {
        if (error instanceof DomainError) return refusal(error)
        throw error
      }
    },
    websocket: {
      open(socket: ServerWebSocket<WebCallSocketData>) {
        const { webCall } = socket.data
        const transport = createWebMediaTransport({
          send: (data) => {
            socket.send(data)
          },
          close: (code, reason) => socket.close(code, reason),
        })
        webCall.transport = transport
        runWebCall(ctx, webCall.call, transport, () =>
          stillSignedIn(ctx, webCall.caller.principal, webCall.caller.sessionId),
        )
      },
      message(socket, message) {
        socket.data.webCall.transport?.receive(typeof message === 'string' ? message : new Uint8Array(message))
      },
      close(socket, code, reason) {
        socket.data.webCall.transport?.socketClosed(code, reason)
      },
    },
  }
}
