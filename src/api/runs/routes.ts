import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, scopeNotAllowed } from '../auth'
import { notFound } from '../../lib/errors'
import { authErrors, ErrorDetail, IdParam } from '../schemas'
import { runDetail, RunDetailSchema } from '../../runs/detail'
import { RunList } from '../../runs/list'
import { runWebhookDeliveries, WebhookDeliveryList } from '../../runs/webhook-deliveries'
import { DownloadParams, DownloadQuery, PeaksQuery, RunParams, RunListQuery } from './model'
import { downloadArtifact, listAgentRuns } from '../../runs/agent-runs'
import { recordingPeaks, RecordingPeaks } from '../../runs/recording-peaks'

const tags = ['Runs']

export const runRoutes = (ctx: AppContext) =>
  new Elysia()
    // Public: the token in the path is the credential.
    .get(
      '/api/v1/public/download/workflow/:token/:artifact_type',
      ({ params, query }) => downloadArtifact(ctx, params.token, params.artifact_type, query.inline ?? false),
      {
        params: DownloadParams,
        query: DownloadQuery,
        response: { 200: t.Unknown({ description: 'The artifact file' }), 400: ErrorDetail, 404: ErrorDetail },
        detail: {
          tags,
          summary: 'Download a run recording or transcript with its public token (no API key)',
          security: [],
        },
      },
    )
    .group('/api/v1/workflow/:workflow_id/runs', (app) =>
      app
        // Trigger-scoped keys may read the runs they start.
        .use(auth(ctx, ['admin', 'trigger']))
        .get(
          '',
          ({ principal, params, query }) => listAgentRuns(ctx, principal.organizationId, params.workflow_id, query),
          {
            params: IdParam('workflow_id'),
            query: RunListQuery,
            response: { 200: RunList, 400: ErrorDetail, 404: ErrorDetail, ...authErrors },
            detail: { tags, summary: 'List the runs of an agent, filtered and paged' },
          },
        )
        .get(
          '/:run_id',
          ({ principal, params }) => {
            const detail = runDetail(ctx, principal.organizationId, params.run_id, params.workflow_id)
            if (!detail) throw notFound('Workflow run not found')
            return detail
          },
          {
            params: RunParams,
            response: { 200: RunDetailSchema, 404: ErrorDetail, ...authErrors },
            detail: { tags, summary: 'Get a run with its context, usage and artifact links' },
          },
        )
        .get(
          '/:run_id/recording-peaks',
          ({ principal, params, query }) =>
            recordingPeaks(ctx, principal.organizationId, params.workflow_id, params.run_id, query.columns ?? 300),
          {
            params: RunParams,
            query: PeaksQuery,
            response: { 200: RecordingPeaks, 404: ErrorDetail, ...authErrors },
            detail: {
              tags,
              summary:
                "The run's recording as waveforms: per track (caller, agent), the loudest sample of each column (0 to 1)",
            },
          },
        )
        .get(
          '/:run_id/webhook-deliveries',
          ({ principal, params }) => {
            // The deliveries show the organization's webhook destinations: an admin's business, not an integrator's.
            if (principal.scope !== 'admin') throw scopeNotAllowed(principal.scope)
            const list = runWebhookDeliveries(ctx, principal.organizationId, params.workflow_id, params.run_id)
            if (!list) throw notFound('Workflow run not found')
            return list
          },
          {
            params: RunParams,
            response: { 200: WebhookDeliveryList, 404: ErrorDetail, ...authErrors },
            detail: {
              tags,
              summary: "The run's webhook deliveries: state, attempts, next attempt and each attempt's outcome",
            },
          },
        ),
    )
