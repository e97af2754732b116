import { eq } from 'drizzle-orm'
import type { AgentDefinition, AgentNode } from '../definition/definition'
import type { AppContext } from '../context'
import { workflowRuns } from '../db/schema'
import { transaction } from '../db/transaction'
import { createLlmClient } from '../models/llm'
import { readPriceCard } from '../models/price-card'
import { isModelProvider, MODEL_PROVIDERS } from '../models/providers'
import type { LlmClient, ModelRef, TokenUsage } from '../models/types'
import { addLlmUsage, costInfo, emptyUsageInfo, type UsageInfo } from '../models/usage'
import { updateRun } from './service'
import { qaSkipReason, reviewCall } from './qa'
import type { ConversationRecord } from '../conversation/record'
import { releaseHeldDeliveries } from './webhook-outbox'

/**
 * The post-call work of a run its session completed: QA nodes review the call (skip rules, one evaluation per node
 * visited, `annotations.qa_<nodeId>` and the union of their `tags`, tokens in `usage_info.llm["QAAnalysis|||<model>"]`),
 * then the run's webhook deliveries, held until now so their payload carries the review, are released.
 */

export const qaNodes = (definition: AgentDefinition): AgentNode[] =>
  definition.nodes.filter((node) => node.type === 'qa')

const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null)

/** The node's own model when it does not use the agent's: an OpenAI-compatible provider, its model and key. */
function reviewerOf(node: AgentNode, agentLlm: LlmClient): LlmClient | string {
  const model = text(node.data.qa_model)
  if (node.data.qa_use_workflow_llm !== false || !model || model === 'default') return agentLlm
  const provider = text(node.data.qa_provider) ?? 'openai'
  if (!isModelProvider(provider))
    return `QA provider '${provider}' is not supported: use an OpenAI-compatible one (${Object.keys(MODEL_PROVIDERS).join(', ')})`
  const baseUrl = text(node.data.qa_endpoint) ?? MODEL_PROVIDERS[provider].defaultBaseUrl
  if (baseUrl === null) return `QA provider '${provider}' has no usual address: set qa_endpoint`
  return createLlmClient({ provider, baseUrl, apiKey: text(node.data.qa_api_key) }, { model })
}

export type PostCallInput = {
  runId: number
  organizationId: number
  definition: AgentDefinition
  record: ConversationRecord
  /** The agent's LLM (QA nodes use it unless they name their own). */
  llm: LlmClient
  /** Whether the run was a phone call (for the telephony part of cost_info). */
  telephony: boolean
  /** Returns [0, 1); Math.random in production. */
  random?: () => number
}

export async function runPostCall(ctx: AppContext, input: PostCallInput): Promise<void> {
  const { record } = input
  const annotations: Record<string, unknown> = {}
  const spent: [ModelRef, TokenUsage][] = []
  const tags = new Set<string>()
  for (const node of qaNodes(input.definition)) {
    const key = `qa_${node.id}`
    const skipped = qaSkipReason(
      node,
      { durationSeconds: record.call_duration_seconds, endReason: record.end_reason },
      input.random ?? Math.random,
    )
    if (skipped) {
      annotations[key] = { skipped: true, reason: skipped }
      continue
    }
    const reviewer = reviewerOf(node, input.llm)
    if (typeof reviewer === 'string') {
      annotations[key] = { error: reviewer }
      continue
    }
    const review = await reviewCall(reviewer, node, input.definition, record, (ref, tokens) =>
      spent.push([ref, tokens]),
    )
    annotations[key] = review.annotation
    for (const tag of review.tags) tags.add(tag)
  }
  transaction(ctx, () => {
    if (Object.keys(annotations).length > 0) {
      const run = ctx.db
        .select({ usage: workflowRuns.usageInfo })
        .from(workflowRuns)
        .where(eq(workflowRuns.id, input.runId))
        .get()
      const stored: UsageInfo = { ...emptyUsageInfo(), ...(run?.usage as Partial<UsageInfo> | null) }
      const merged = spent.reduce((total, [ref, tokens]) => addLlmUsage(total, ref, tokens), stored)
      updateRun(ctx, input.runId, { annotations: { ...annotations, ...(tags.size ? { tags: [...tags] } : {}) } })
      ctx.db
        .update(workflowRuns)
        .set({
          usageInfo: merged,
          costInfo: costInfo(merged, readPriceCard(ctx, input.organizationId), { telephony: input.telephony }),
        })
        .where(eq(workflowRuns.id, input.runId))
        .run()
    }
    releaseHeldDeliveries(ctx, input.runId)
  })
}
