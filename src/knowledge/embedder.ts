import type { AppContext } from '../context'
import { connectionOf, findConnectionRow } from '../models/connections'
import { defaultConfigurationRow } from '../models/configurations'
import { createEmbeddingsClient, type EmbeddingsClient } from '../models/embeddings'
import type { ResolvedService } from '../models/resolve'

/**
 * Which embeddings model a knowledge-base operation uses. Documents are embedded with the organization default model
 * configuration's `embeddings`; a run's queries use the run's resolved one (`model_overrides.embeddings` over the
 * agent's configuration over the default). A query is only compared with documents embedded by the same connection
 * and model: vectors of two models do not share a space.
 */

export type Embedder = { client: EmbeddingsClient; connectionUuid: string; model: string }

export function embedderOf(service: ResolvedService | null): Embedder | null {
  const model = service?.settings.model
  if (!service?.connection || !service.connectionUuid || typeof model !== 'string' || model === '') return null
  const dimensions = typeof service.settings.dimensions === 'number' ? service.settings.dimensions : undefined
  return {
    client: createEmbeddingsClient(service.connection, { model, dimensions }),
    connectionUuid: service.connectionUuid,
    model,
  }
}

export function organizationEmbedder(ctx: AppContext, organizationId: number): Embedder | null {
  const section = defaultConfigurationRow(ctx, organizationId)?.embeddings
  const uuid = section?.provider_connection_uuid
  const row = uuid ? findConnectionRow(ctx, organizationId, uuid) : undefined
  if (!section || !row) return null
  return embedderOf({ connectionUuid: row.uuid, connection: connectionOf(ctx, row), settings: section.settings })
}

export const NO_EMBEDDINGS =
  'no embeddings model is configured: add an `embeddings` section to the default model configuration'
