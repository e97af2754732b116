import { Elysia, t } from 'elysia'
import type { AppContext, ChangeEvent } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { callsInProgress, liveRunOf } from '../../runs/live'
import { getCampaign } from '../../campaigns/service'
import type { Principal } from '../../auth/keys'

const tags = ['Events']

/** A comment line this often keeps proxies and the server's idle timeout from closing a quiet stream. */
const HEARTBEAT_MS = 15_000
/** Messages a reader may fall behind by before its stream is closed (it reconnects and starts from a fresh snapshot). */
const MAX_QUEUED_MESSAGES = 500

const message = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/** The message a change becomes for this principal, or null when it may not see it (or it is gone). */
function describe(ctx: AppContext, principal: Principal, change: ChangeEvent): string | null {
  if (change.kind === 'run') {
    const run = liveRunOf(ctx, principal.organizationId, change.runId)
    return run ? message('run', run) : null
  }
  // A trigger key reads runs only.
  if (principal.scope !== 'admin') return null
  return message('campaign', getCampaign(ctx, principal.organizationId, change.campaignId))
}

/**
 * Server-sent events of the key's organization: first `snapshot` (the calls in progress), then `run` (a run created,
 * ringing, talking, moving to another node, finished, one of its webhook attempts recorded) and `campaign` (its state
 * changed) as they happen.
 */
function eventStream(ctx: AppContext, principal: Principal): Response {
  const encoder = new TextEncoder()
  let stop = () => {}
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if ((controller.desiredSize ?? 0) < -MAX_QUEUED_MESSAGES) {
          stop()
          controller.close()
          return
        }
        controller.enqueue(encoder.encode(text))
      }
      send(`retry: 3000\n${message('snapshot', { calls: callsInProgress(ctx, principal.organizationId) })}`)
      const unsubscribe = ctx.events.subscribe(principal.organizationId, (change) => {
        try {
          const text = describe(ctx, principal, change)
          if (text) send(text)
        } catch (error) {
          ctx.log.warn({ err: error, kind: change.kind }, 'change event not described')
        }
      })
      const heartbeat = setInterval(() => send(': heartbeat\n\n'), HEARTBEAT_MS)
      stop = () => {
        clearInterval(heartbeat)
        unsubscribe()
      }
    },
    cancel() {
      stop()
    },
  })
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  })
}

export const eventRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1' })
    // Trigger keys read runs, so they follow their changes; campaign changes are for admin keys.
    .use(auth(ctx, ['admin', 'trigger']))
    .get(
      '/events',
      ({ principal, request, set }) => {
        if (!(request.headers.get('accept') ?? '').includes('text/event-stream')) {
          set.status = 406
          return { detail: 'This is a server-sent events stream: send Accept: text/event-stream' }
        }
        return eventStream(ctx, principal)
      },
      {
        response: {
          200: t.String({ description: 'text/event-stream: `snapshot`, then `run` and `campaign` events, JSON each' }),
          406: ErrorDetail,
          ...authErrors,
        },
        detail: {
          tags,
          summary:
            'Follow the organization live: calls in progress, then run and campaign changes (server-sent events)',
        },
      },
    )
