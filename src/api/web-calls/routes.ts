import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requireSession } from '../auth'
import { authErrors, ErrorDetail, PathId } from '../schemas'
import { ModelOverrides } from '../../models/schemas'
import { startWebCall } from '../../calls/web-call'
import { WEB_CALL_SAMPLE_RATES, WEB_FRAME_MAX_MS } from '../../voice/web-media'
import { webCallSocketPath } from './socket'

const tags = ['Web calls']

const StartWebCallBody = t.Object({
  initial_context: t.Optional(
    t.Union([t.Record(t.String(), t.Unknown()), t.Null()], {
      description: "Variables for the agent's templates, as a call's initial_context.",
    }),
  ),
  model_overrides: t.Optional(t.Union([ModelOverrides, t.Null()])),
})

const StartedWebCall = t.Object({
  workflow_run_id: t.Integer(),
  workflow_run_name: t.String(),
  socket_path: t.String({
    description:
      'Open this WebSocket (same origin, same session or X-API-Key) within 30 seconds; the protocol is in docs/console.md',
  }),
  sample_rates: t.Array(t.Integer(), { description: 'The rates `start` may declare for 16-bit PCM audio' }),
  max_frame_ms: t.Integer({ description: 'The longest audio frame the socket takes' }),
})

export const webCallRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/workflow/:workflow_id/web-calls' }).use(auth(ctx)).post(
    '',
    ({ principal, params, body, request }) => {
      const sessionId = request.headers.get('x-api-key') ? null : requireSession(ctx, request).id
      const started = startWebCall(ctx, { principal, sessionId }, params.workflow_id, {
        initial_context: body.initial_context ?? undefined,
        model_overrides: body.model_overrides,
      })
      return {
        workflow_run_id: started.workflow_run_id,
        workflow_run_name: started.workflow_run_name,
        socket_path: webCallSocketPath(started.workflow_run_id),
        sample_rates: [...WEB_CALL_SAMPLE_RATES],
        max_frame_ms: WEB_FRAME_MAX_MS,
      }
    },
    {
      params: t.Object({ workflow_id: PathId }),
      body: StartWebCallBody,
      response: { 200: StartedWebCall, 400: ErrorDetail, 404: ErrorDetail, 429: ErrorDetail, ...authErrors },
      detail: {
        tags,
        summary:
          "Start a voice call with the agent from a browser (its draft, else its published version): the run, then the call's WebSocket",
      },
    },
  )
