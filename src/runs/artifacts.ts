import { eq } from 'drizzle-orm'
import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowRuns, type WorkflowRunRow } from '../db/schema'

/**
 * A run's artifacts (recordings, transcript) live in the object store; the run keeps their keys. Public download links
 * carry the run's `public_access_token`: a random UUID valid for PUBLIC_LINK_TTL_MS, minted when an artifact is attached
 * and minted again when an authenticated client reads the run after it expired. The download endpoint checks the token
 * and its expiry and streams the object; nothing else is needed to fetch it, so links can be shared until they expire.
 */

export type RunArtifact = 'recording' | 'transcript' | 'user_recording' | 'bot_recording'

const ARTIFACT_COLUMNS = {
  transcript: 'transcriptKey',
  recording: 'recordingKey',
  user_recording: 'userRecordingKey',
  bot_recording: 'botRecordingKey',
} as const satisfies Record<RunArtifact, keyof WorkflowRunRow>

export const RUN_ARTIFACTS = Object.keys(ARTIFACT_COLUMNS) as RunArtifact[]

export const PUBLIC_LINK_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** The run columns public links are built from. */
export type ArtifactFields = Pick<
  WorkflowRunRow,
  | 'id'
  | 'recordingKey'
  | 'transcriptKey'
  | 'userRecordingKey'
  | 'botRecordingKey'
  | 'publicAccessToken'
  | 'publicAccessExpiresAt'
>

export const artifactKey = (run: ArtifactFields, artifact: RunArtifact): string | null =>
  run[ARTIFACT_COLUMNS[artifact]]

const hasArtifact = (run: ArtifactFields) => RUN_ARTIFACTS.some((artifact) => artifactKey(run, artifact) !== null)

/** The run's token while it is valid, else null. */
function validToken(ctx: AppContext, run: ArtifactFields): string | null {
  const expiresAt = run.publicAccessExpiresAt === null ? 0 : Date.parse(run.publicAccessExpiresAt)
  return run.publicAccessToken !== null && expiresAt > ctx.clock.now() ? run.publicAccessToken : null
}

/** The run's valid token; a new one when it has an artifact and none is valid; null when it has no artifact. */
export function ensurePublicAccess(ctx: AppContext, run: ArtifactFields): string | null {
  if (!hasArtifact(run)) return null
  const current = validToken(ctx, run)
  if (current) return current
  const token = crypto.randomUUID()
  const expiresAt = new Date(ctx.clock.now() + PUBLIC_LINK_TTL_MS).toISOString()
  ctx.db
    .update(workflowRuns)
    .set({ publicAccessToken: token, publicAccessExpiresAt: expiresAt })
    .where(eq(workflowRuns.id, run.id))
    .run()
  return token
}

/** Records where an artifact was stored (after `ctx.objects.put`) and makes sure the run has a public download token. */
export function attachArtifact(ctx: AppContext, runId: number, artifact: RunArtifact, objectKey: string): void {
  const run = ctx.db
    .update(workflowRuns)
    .set({ [ARTIFACT_COLUMNS[artifact]]: objectKey })
    .where(eq(workflowRuns.id, runId))
    .returning()
    .get()
  if (!run) throw new Error(`Run ${runId} does not exist`)
  ensurePublicAccess(ctx, run)
}

const nullableString = (description?: string) => t.Union([t.String(), t.Null()], description ? { description } : {})

export const ArtifactLinksSchema = t.Object({
  transcript_url: nullableString('Object-store key of the transcript'),
  recording_url: nullableString('Object-store key of the mixed recording'),
  user_recording_url: nullableString(),
  bot_recording_url: nullableString(),
  transcript_public_url: nullableString('Download link that needs no API key, valid until the token expires'),
  recording_public_url: nullableString(),
  user_recording_public_url: nullableString(),
  bot_recording_public_url: nullableString(),
  public_access_token: nullableString(),
})

export type ArtifactLinks = Static<typeof ArtifactLinksSchema>

/** Public download links are this base followed by `<token>/<artifact>`. */
const publicDownloadBase = (ctx: AppContext) => `${ctx.config.publicUrl}/api/v1/public/download/workflow/`

/**
 * `<artifact>_url` is the object-store key (as the reference platform exposes it); `<artifact>_public_url` downloads it
 * without an API key while `token` is valid. Pass the token `ensurePublicAccess` returned, or omit it to use the
 * stored one if still valid (lists do not mint tokens).
 */
export function artifactLinks(
  ctx: AppContext,
  run: ArtifactFields,
  token: string | null = validToken(ctx, run),
): ArtifactLinks {
  const links = { public_access_token: token } as ArtifactLinks
  for (const artifact of RUN_ARTIFACTS) {
    const key = artifactKey(run, artifact)
    links[`${artifact}_url`] = key
    links[`${artifact}_public_url`] =
      key !== null && token !== null ? `${publicDownloadBase(ctx)}${token}/${artifact}` : null
  }
  return links
}

/** What `artifactLinksJsonArgs` placeholders are bound to. */
export const publicLinkParams = (ctx: AppContext) => ({
  base: publicDownloadBase(ctx),
  now: new Date(ctx.clock.now()).toISOString(),
})

/**
 * `artifactLinks` as `json_object` arguments over the workflow_runs row named `run`, for reports whose JSON SQLite
 * writes; `placeholders` name the parameters bound to `publicLinkParams`.
 */
export function artifactLinksJsonArgs(run: string, placeholders: { base: string; now: string }): string {
  const token = `CASE WHEN ${run}.public_access_expires_at > ${placeholders.now} THEN ${run}.public_access_token END`
  const links = RUN_ARTIFACTS.map((artifact) => {
    const key = `${run}.${workflowRuns[ARTIFACT_COLUMNS[artifact]].name}`
    return `'${artifact}_url', ${key}, '${artifact}_public_url', CASE WHEN ${key} IS NOT NULL THEN ${placeholders.base} || (${token}) || '/${artifact}' END`
  })
  return [`'public_access_token', ${token}`, ...links].join(', ')
}

/** The run a public download token opens, or null when the token is unknown or expired. */
export function findRunByPublicToken(ctx: AppContext, token: string): WorkflowRunRow | null {
  const run = ctx.db.select().from(workflowRuns).where(eq(workflowRuns.publicAccessToken, token)).get()
  return run && validToken(ctx, run) ? run : null
}
