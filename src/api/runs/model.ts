import { t } from 'elysia'

export const RunParams = t.Object({ workflow_id: t.Integer(), run_id: t.Integer() })

export const DownloadParams = t.Object({ token: t.String(), artifact_type: t.String() })

export const DownloadQuery = t.Object({
  inline: t.Optional(t.Boolean({ default: false, description: 'Show in the browser instead of downloading' })),
})
