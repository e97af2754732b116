import { t } from 'elysia'
import { PathId } from '../schemas'
import { MAX_TEXT_LENGTH, MAX_TOKEN_LENGTH } from '../../lib/limits'

export const RunParams = t.Object({ workflow_id: PathId, run_id: PathId })

export const DownloadParams = t.Object({
  token: t.String({ maxLength: MAX_TOKEN_LENGTH }),
  artifact_type: t.String({ maxLength: MAX_TOKEN_LENGTH }),
})

export const DownloadQuery = t.Object({
  inline: t.Optional(t.Boolean({ default: false, description: 'Show in the browser instead of downloading' })),
})

export const PeaksQuery = t.Object({
  columns: t.Optional(t.Integer({ minimum: 1, maximum: 2000, default: 300, description: 'How many columns' })),
})

export const RunListQuery = t.Object({
  page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  filters: t.Optional(
    t.String({
      maxLength: MAX_TEXT_LENGTH,
      description:
        'JSON array of `{attribute, type, value}`: dateRange (dateRange, `{from, to}`), dispositionCode ' +
        '(multiSelect, `{codes}`), duration (numberRange, `{min, max}`), status (radio, `{status}`: completed|in_progress), ' +
        'tokenUsage (numberRange, `{min, max}`). Another attribute is a 403.',
    }),
  ),
  sort_by: t.Optional(
    t.String({ maxLength: MAX_TOKEN_LENGTH, description: '`duration`; anything else sorts by created_at' }),
  ),
  sort_order: t.Optional(t.String({ maxLength: MAX_TOKEN_LENGTH, pattern: '^(asc|desc)$', default: 'desc' })),
})
