import { t } from 'elysia'
import { MAX_TEXT_LENGTH, MAX_TOKEN_LENGTH } from '../../lib/limits'

/** The request and response shapes the domain declares, described to OpenAPI from here with the routes' own. */
export {
  UsageRun,
  UsageResponse,
  UsageSummaryResponse,
} from '../../runs/usage-schemas'

const FILTERS_DESCRIPTION =
  'JSON array of `{attribute, type, value}`, all ANDed: runId, workflowId, campaignId (number, ' +
  '`{value}`); callerNumber, calledNumber (text, `{value}`: substring); dispositionCode (multiSelect, `{codes}`); ' +
  'duration (numberRange, `{min, max}` seconds, inclusive); callDirection (radio, `{status}`: inbound|outbound); ' +
  'callChannel (radio, `{status}`: telephony|web|chat). Unknown attributes and mismatched types are ignored.'

export const UsageQuery = t.Object({
  start_date: t.Optional(
    t.String({
      maxLength: MAX_TOKEN_LENGTH,
      description: 'ISO 8601 date or date-time (UTC when no zone); inclusive lower bound on created_at',
    }),
  ),
  end_date: t.Optional(
    t.String({
      maxLength: MAX_TOKEN_LENGTH,
      description:
        'ISO 8601 date-time (UTC when no zone), inclusive upper bound on created_at; a date alone includes that whole day',
    }),
  ),
  page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  filters: t.Optional(t.String({ maxLength: MAX_TEXT_LENGTH, description: FILTERS_DESCRIPTION })),
  sort_by: t.Optional(
    t.String({ maxLength: MAX_TOKEN_LENGTH, description: '`duration`; anything else sorts by created_at' }),
  ),
  sort_order: t.Optional(t.String({ maxLength: MAX_TOKEN_LENGTH, pattern: '^(asc|desc)$', default: 'desc' })),
})

export const UsageSummaryQuery = t.Object({
  group_by: t.Union([t.Literal('outcome'), t.Literal('agent'), t.Literal('day')], {
    description: 'outcome: by disposition; agent: by agent; day: by the local date at utc_offset_minutes',
  }),
  start_date: UsageQuery.properties.start_date,
  end_date: UsageQuery.properties.end_date,
  utc_offset_minutes: t.Optional(
    t.Integer({
      minimum: -840,
      maximum: 840,
      default: 0,
      description: "Minutes east of UTC of the days (a browser's is -new Date().getTimezoneOffset())",
    }),
  ),
})
