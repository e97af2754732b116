import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import type { CampaignAction } from '../../campaigns/lifecycle'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { RunList } from '../../runs/list'
import { RunListQuery } from '../runs/model'
import { downloadLink } from '../../storage/signed-urls'
import {
  CampaignIdParams,
  CampaignListResponse,
  CampaignProgressResponse,
  CampaignResponse,
  CreateCampaignBody,
  RedialBody,
  SourceDownloadResponse,
  TrafficStatsResponse,
  UpdateCampaignBody,
} from './model'
import {
  campaignProgress,
  campaignRuns,
  campaignSourceKey,
  changeCampaignState,
  createCampaign,
  getCampaign,
  listCampaigns,
  redialCampaign,
  trafficStats,
  updateCampaign,
} from '../../campaigns/service'

const tags = ['Campaigns']
const campaignErrors = { 400: ErrorDetail, 404: ErrorDetail, ...authErrors }

const ACTION_SUMMARIES: Record<CampaignAction, string> = {
  start: 'Start a draft or paused campaign',
  pause: 'Pause a running campaign (calls in progress finish)',
  resume: 'Resume a paused campaign',
  stop: 'Stop a campaign for good (queued contacts are not dialled; calls in progress finish)',
}

export const campaignRoutes = (ctx: AppContext) => {
  const routes = new Elysia({ prefix: '/api/v1/campaign' })
    .use(auth(ctx))
    .post('/create', ({ principal, body }) => createCampaign(ctx, principal.organizationId, body), {
      body: CreateCampaignBody,
      response: { 200: CampaignResponse, ...campaignErrors },
      detail: { tags, summary: 'Create a campaign from an uploaded contacts CSV (state draft)' },
    })
    .get('/', ({ principal }) => ({ campaigns: listCampaigns(ctx, principal.organizationId) }), {
      response: { 200: CampaignListResponse, ...authErrors },
      detail: { tags, summary: 'List the campaigns of the organization, newest first' },
    })
    .get('/:campaign_id', ({ principal, params }) => getCampaign(ctx, principal.organizationId, params.campaign_id), {
      params: CampaignIdParams,
      response: { 200: CampaignResponse, ...campaignErrors },
      detail: { tags, summary: 'Get a campaign' },
    })
    .patch(
      '/:campaign_id',
      ({ principal, params, body }) => updateCampaign(ctx, principal.organizationId, params.campaign_id, body),
      {
        params: CampaignIdParams,
        body: UpdateCampaignBody,
        response: { 200: CampaignResponse, ...campaignErrors },
        detail: { tags, summary: 'Change settings; traffic split changes apply to the next dial' },
      },
    )
    .get(
      '/:campaign_id/progress',
      ({ principal, params }) => campaignProgress(ctx, principal.organizationId, params.campaign_id),
      {
        params: CampaignIdParams,
        response: { 200: CampaignProgressResponse, ...campaignErrors },
        detail: { tags, summary: 'Progress of a campaign' },
      },
    )
    .get(
      '/:campaign_id/traffic-stats',
      ({ principal, params }) => trafficStats(ctx, principal.organizationId, params.campaign_id),
      {
        params: CampaignIdParams,
        response: { 200: TrafficStatsResponse, ...campaignErrors },
        detail: { tags, summary: 'Per traffic-split variant: contacts, calls, outcomes and versions used' },
      },
    )
    .post(
      '/:campaign_id/redial',
      ({ principal, params, body }) => redialCampaign(ctx, principal.organizationId, params.campaign_id, body ?? {}),
      {
        params: CampaignIdParams,
        body: RedialBody,
        response: { 200: CampaignResponse, ...campaignErrors },
        detail: {
          tags,
          summary: 'Create a campaign that calls again the contacts that were busy, unanswered or reached voicemail',
        },
      },
    )
    .get(
      '/:campaign_id/runs',
      ({ principal, params, query }) => campaignRuns(ctx, principal.organizationId, params.campaign_id, query),
      {
        params: CampaignIdParams,
        query: RunListQuery,
        response: { 200: RunList, ...campaignErrors },
        detail: { tags, summary: "The campaign's runs, filtered and paged" },
      },
    )
    .get(
      '/:campaign_id/source-download-url',
      ({ principal, params }) =>
        downloadLink(ctx, campaignSourceKey(ctx, principal.organizationId, params.campaign_id)),
      {
        params: CampaignIdParams,
        response: { 200: SourceDownloadResponse, ...campaignErrors },
        detail: { tags, summary: 'A one-hour link to download the contacts CSV' },
      },
    )
  for (const action of Object.keys(ACTION_SUMMARIES) as CampaignAction[]) {
    routes.post(
      `/:campaign_id/${action}`,
      ({ principal, params }) => changeCampaignState(ctx, principal.organizationId, params.campaign_id, action),
      {
        params: CampaignIdParams,
        response: { 200: CampaignResponse, ...campaignErrors },
        detail: { tags, summary: ACTION_SUMMARIES[action] },
      },
    )
  }
  return routes
}
