import { and, asc, eq } from 'drizzle-orm'
import { Type as t, type Static } from '@sinclair/typebox'
import type { AgentDefinition } from '../definition/definition'
import type { AppContext } from '../context'
import { webhookDeliveries, workflowDefinitions, workflowRuns } from '../db/schema'
import { nodeName } from '../conversation/graph'
import { runOfOrganization } from './detail'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

const DeliveryAttempt = t.Object({
  attempt: t.Integer(),
  at: t.String({ format: 'date-time' }),
  url: Nullable(t.String({ description: 'Scheme, host and port only: a path or query may carry a secret' })),
  status_code: Nullable(t.Integer()),
  signed: t.Boolean(),
  outcome: t.String({ description: 'delivered, retry or dead' }),
  error: t.Optional(t.String()),
})

export const WebhookDeliveryView = t.Object({
  delivery_id: t.String({ description: 'Sent as X-Ringbase-Delivery-Id' }),
  node_id: t.String(),
  node_name: t.String(),
  state: t.Union([t.Literal('held'), t.Literal('pending'), t.Literal('delivered'), t.Literal('dead')], {
    description: 'held: waits for the QA review; pending: an attempt is due; delivered and dead are final',
  }),
  attempts: t.Integer(),
  next_attempt_at: Nullable(t.String({ format: 'date-time', description: 'When pending: the next attempt' })),
  last_error: Nullable(t.String()),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
  attempt_log: t.Array(DeliveryAttempt, { description: 'Every attempt made, oldest first' }),
})

export const WebhookDeliveryList = t.Object({ deliveries: t.Array(WebhookDeliveryView) })

type AttemptEntry = Static<typeof DeliveryAttempt> & { delivery_id?: string }

/** The webhook deliveries of the organization's run (of the agent `agentId` when given), oldest first; null when there is no such run. */
export function runWebhookDeliveries(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  runId: number,
): Static<typeof WebhookDeliveryList> | null {
  const run = ctx.db
    .select({ logs: workflowRuns.logs, definition: workflowDefinitions.workflowJson })
    .from(workflowRuns)
    .innerJoin(workflowDefinitions, eq(workflowDefinitions.id, workflowRuns.definitionId))
    .where(runOfOrganization(organizationId, runId, agentId))
    .get()
  if (!run) return null
  const rows = ctx.db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.runId, runId), eq(webhookDeliveries.organizationId, organizationId)))
    .orderBy(asc(webhookDeliveries.id))
    .all()
  const nodes = (run.definition as AgentDefinition).nodes
  const logged: AttemptEntry[] = Array.isArray(run.logs.webhook_deliveries) ? run.logs.webhook_deliveries : []
  return {
    deliveries: rows.map((row) => {
      const node = nodes.find((candidate) => candidate.id === row.nodeId)
      return {
        delivery_id: row.deliveryUuid,
        node_id: row.nodeId,
        node_name: node ? nodeName(node) : row.nodeId,
        state: row.state,
        attempts: row.attempts,
        next_attempt_at: row.state === 'pending' ? new Date(row.nextAttemptAt).toISOString() : null,
        last_error: row.lastError,
        created_at: row.createdAt,
        updated_at: row.updatedAt,
        attempt_log: logged
          .filter((entry) => entry.delivery_id === row.deliveryUuid)
          .map((entry) => ({
            attempt: entry.attempt,
            at: entry.at,
            url: entry.url,
            status_code: entry.status_code,
            signed: entry.signed,
            outcome: entry.outcome,
            ...(entry.error ? { error: entry.error } : {}),
          })),
      }
    }),
  }
}
