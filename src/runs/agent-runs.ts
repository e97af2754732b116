import { and, eq } from 'drizzle-orm'
import type { Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflows } from '../db/schema'
import { notFound, refused } from '../lib/errors'
import { artifactKey, findRunByPublicToken, RUN_ARTIFACTS, type RunArtifact } from './artifacts'
import { listRuns, type RunList, type RunListOptions } from './list'

/** The agent's runs of every state, newest first unless sorted otherwise. */
export function listAgentRuns(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  query: RunListOptions,
): Static<typeof RunList> {
  const agent = ctx.db
    .select({ id: workflows.id })
    .from(workflows)
    .where(and(eq(workflows.id, agentId), eq(workflows.organizationId, organizationId)))
    .get()
  if (!agent) throw notFound(`Workflow with id ${agentId} not found`)
  return listRuns(ctx, organizationId, { agentId }, query)
}

const isArtifact = (value: string): value is RunArtifact => (RUN_ARTIFACTS as string[]).includes(value)

/** Streams a run's artifact to anyone holding its unexpired public token. */
export async function downloadArtifact(
  ctx: AppContext,
  token: string,
  artifactType: string,
  inline: boolean,
): Promise<Response> {
  const run = findRunByPublicToken(ctx, token)
  if (!run) throw notFound('Invalid or expired token')
  if (!isArtifact(artifactType)) throw refused('Unsupported artifact type')
  const key = artifactKey(run, artifactType)
  const object = key === null ? null : await ctx.objects.get(key)
  if (!object) throw notFound(`No ${artifactType} available for this workflow run`)
  const extension = key!.includes('.') ? key!.slice(key!.lastIndexOf('.')) : ''
  return new Response(object.stream(), {
    headers: {
      'content-type': object.type,
      'content-length': String(object.size),
      'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="run-${run.id}-${artifactType}${extension}"`,
      'cache-control': 'private, no-store',
    },
  })
}
