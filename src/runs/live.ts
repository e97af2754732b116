import type { AppContext } from '../context'
import { liveRun, openCallRuns, type LiveRunRow } from '../db/live-runs'

export type LiveRun = LiveRunRow

/** At most this many calls in progress are listed in the events stream's first message. */
export const OPEN_CALLS_LISTED = 200

/** A run as the live events stream shows it, or null when the organization has no such run. */
export const liveRunOf = (ctx: AppContext, organizationId: number, runId: number): LiveRun | null =>
  liveRun(ctx.sqlite, organizationId, runId) ?? null

/** The organization's calls in progress, newest first. */
export const callsInProgress = (ctx: AppContext, organizationId: number): LiveRun[] =>
  openCallRuns(ctx.sqlite, organizationId, OPEN_CALLS_LISTED)
