import type { SqlDatabase } from './open'

/** What the live events stream tells about a run: enough for a list of calls in progress, no transcript. */
export type LiveRunRow = {
  id: number
  workflow_id: number
  workflow_name: string
  name: string
  state: string
  mode: string
  call_type: string
  campaign_id: number | null
  caller_number: string | null
  called_number: string | null
  current_node_id: string | null
  disposition: string | null
  call_duration_seconds: number | null
  created_at: string
  started_at: string | null
  completed_at: string | null
}

const SELECT_LIVE_RUN = `SELECT r.id, r.workflow_id, w.name AS workflow_name, r.name, r.state, r.mode, r.call_type, r.campaign_id,
    r.caller_number, r.called_number, json_extract(r.logs, '$.session.current_node_id') AS current_node_id, r.disposition,
    r.call_duration_seconds, r.created_at, r.started_at, r.completed_at
  FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id`

/** One run of the organization, or null. */
export const liveRun = (sqlite: SqlDatabase, organizationId: number, runId: number) =>
  sqlite
    .query<LiveRunRow, [number, number]>(`${SELECT_LIVE_RUN} WHERE r.id = ? AND r.organization_id = ?`)
    .get(runId, organizationId)

/** The organization's calls placed or answered and not finished (the index workflow_runs_open_calls), newest first. */
export const openCallRuns = (sqlite: SqlDatabase, organizationId: number, limit: number) =>
  sqlite
    .query<LiveRunRow, [number, number]>(
      `${SELECT_LIVE_RUN} WHERE r.organization_id = ? AND r.call_id IS NOT NULL AND r.state <> 'completed' ORDER BY r.id DESC LIMIT ?`,
    )
    .all(organizationId, limit)
