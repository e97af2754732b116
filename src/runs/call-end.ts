import { eq } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowRuns, type JsonObject } from '../db/schema'
import { isPlainObject } from '../lib/values'

/**
 * A call's end as its report leaves it on a run whose conversation is under way (calls/outcomes.ts): the run's
 * completion is then its run session's, written once with what the conversation produced and the call's connected
 * seconds read back from here; recovery completes such a run from it when the session never did.
 */

/** Seconds a call was connected, answer to hang-up (ctx.clock ms), to the hundredth; 0 when it never connected. */
export const connectedSeconds = (answeredAt: number | null, endedAt: number): number =>
  answeredAt === null ? 0 : Math.max(0, Math.round((endedAt - answeredAt) / 10) / 100)

/** The call's end as its report wrote it into `logs.telephony`, and its connected seconds. */
export type ReportedCall = { telephony: JsonObject; durationSeconds: number }

/** The call's end its report wrote into the run's `logs.telephony`, or null when no report came. */
export function reportedCallOf(logs: JsonObject): ReportedCall | null {
  const telephony = logs.telephony
  if (!isPlainObject(telephony) || typeof telephony.ended_at !== 'string') return null
  const answeredAt = typeof telephony.answered_at === 'string' ? Date.parse(telephony.answered_at) : null
  return {
    telephony: telephony as JsonObject,
    durationSeconds: connectedSeconds(answeredAt, Date.parse(telephony.ended_at)),
  }
}

export function reportedCall(ctx: AppContext, runId: number): ReportedCall | null {
  const row = ctx.db.select({ logs: workflowRuns.logs }).from(workflowRuns).where(eq(workflowRuns.id, runId)).get()
  return row ? reportedCallOf(row.logs) : null
}

/** A run session opened on the run (`logs.session`): a call report then leaves the run's completion to it. */
export const conversationUnderWay = (logs: JsonObject): boolean => isPlainObject(logs.session)
