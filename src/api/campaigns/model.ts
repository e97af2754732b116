import { IdParam } from '../schemas'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  RetryConfigRequest,
  RetryConfigResponse,
  ScheduleConfigRequest,
  ScheduleConfigResponse,
  CircuitBreakerRequest,
  CircuitBreakerResponse,
  TrafficSplitRequest,
  TrafficSplitResponse,
  CreateCampaignBody,
  UpdateCampaignBody,
  RedialBody,
  CampaignResponse,
  CampaignListResponse,
  CampaignProgressResponse,
  TrafficStatsResponse,
  SourceDownloadResponse,
} from '../../campaigns/schemas'

export const CampaignIdParams = IdParam('campaign_id')
