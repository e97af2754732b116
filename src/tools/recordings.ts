import { and, eq, inArray } from 'drizzle-orm'
import type { AppContext } from '../context'
import { workflowRecordings } from '../db/schema'
import { toolMention } from '../definition/recording-references'
import { valueError, type ValidationItem } from '../lib/validation'
import type { ToolDefinition } from './schemas'

/** The organization's recording ids among `ids`. */
export function existingRecordingIds(ctx: AppContext, organizationId: number, ids: string[]): Set<string> {
  if (ids.length === 0) return new Set()
  const rows = ctx.db
    .select({ recordingId: workflowRecordings.recordingId })
    .from(workflowRecordings)
    .where(
      and(
        eq(workflowRecordings.organizationId, organizationId),
        inArray(workflowRecordings.recordingId, [...new Set(ids)]),
      ),
    )
    .all()
  return new Set(rows.map((row) => row.recordingId))
}

/** Every recording id of the organization. */
export function organizationRecordingIds(ctx: AppContext, organizationId: number): Set<string> {
  const rows = ctx.db
    .select({ recordingId: workflowRecordings.recordingId })
    .from(workflowRecordings)
    .where(eq(workflowRecordings.organizationId, organizationId))
    .all()
  return new Set(rows.map((row) => row.recordingId))
}

/** The 422 item for a tool naming a recording the organization does not have, if it does. */
export function toolRecordingProblem(
  ctx: AppContext,
  organizationId: number,
  definition: ToolDefinition,
  loc: (string | number)[],
): ValidationItem | null {
  const mention = toolMention(definition)
  if (!mention || existingRecordingIds(ctx, organizationId, [mention.recordingId]).size > 0) return null
  return valueError(
    [...loc, mention.field],
    `recording '${mention.recordingId}' is not a recording of this organization`,
    mention.recordingId,
  )
}
