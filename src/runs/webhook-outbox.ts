import { randomUUID } from 'node:crypto'
import { and, eq, gte, inArray, isNull, lte, notInArray, or } from 'drizzle-orm'
import type { AgentDefinition, AgentNode } from '../definition/definition'
import type { AppContext } from '../context'
import { readCredential } from '../credentials/store'
import {
  instances,
  webhookDeliveries,
  workflowDefinitions,
  workflowRuns,
  workflows,
  type WebhookDeliveryRow,
} from '../db/schema'
import { liveSince } from '../instances/registry'
import { transaction } from '../db/transaction'
import { incremented } from '../db/expressions'
import { outboundFailureReason, OutboundRefused, sendOutbound, type OutboundPolicy } from '../egress/outbound'
import { outboundPolicy } from '../egress/policy'
import { isoNow } from '../lib/clock'
import { failureStreak } from '../lib/failure-streak'
import { artifactLinks, ensurePublicAccess } from './artifacts'
import { updateRun } from './service'
import { nodeName } from '../conversation/graph'
import { readSigningSecret } from './signing-secret'
import {
  buildWebhookRequest,
  classifyDelivery,
  WEBHOOK_MAX_ATTEMPTS,
  webhookTemplateContext,
  type DeliveryOutcome,
  type DeliveryVerdict,
} from './webhook'

/**
 * The webhook outbox: one row per (run, webhook node), written in the transaction that completes the run, delivered by
 * a loop that survives restarts. At most 5 attempts, 30 s · 2^(n−1) apart (capped at 600 s); 408/425/429/5xx and network
 * errors are retried, any other answer ends the delivery at once, and so does a refusal by the organization's network
 * rules (outside its allow-list, this server itself, a redirect to another host): those do not change by retrying. An
 * attempt is claimed before it is sent (attempts counted, a lease set), so a process that dies mid-send sends it again
 * after the lease as the next attempt: receivers drop repeats by X-Ringbase-Delivery-Id. Every attempt is appended to
 * the run's `logs.webhook_deliveries`.
 */

/** How long a claimed attempt may take before it counts as lost (above the request timeout). */
const LEASE_MS = 60_000
const REQUEST_TIMEOUT_MS = 30_000
const BATCH = 10

export function webhookNodes(definition: AgentDefinition): AgentNode[] {
  return definition.nodes.filter(
    (node) =>
      node.type === 'webhook' &&
      node.data.enabled !== false &&
      typeof node.data.endpoint_url === 'string' &&
      node.data.endpoint_url !== '',
  )
}

/**
 * Queues one delivery per webhook node of the run, idempotently; call it inside the transaction that completes the run.
 * `held` deliveries wait for `releaseHeldDeliveries` (the run's QA review goes first).
 */
export function enqueueWebhookDeliveries(
  ctx: AppContext,
  run: { id: number; organizationId: number },
  definition: AgentDefinition,
  held: boolean,
): number {
  const nodes = webhookNodes(definition)
  if (nodes.length === 0) return 0
  const now = isoNow(ctx.clock)
  ctx.db
    .insert(webhookDeliveries)
    .values(
      nodes.map((node) => ({
        deliveryUuid: randomUUID(),
        organizationId: run.organizationId,
        runId: run.id,
        nodeId: node.id,
        state: held ? ('held' as const) : ('pending' as const),
        nextAttemptAt: ctx.clock.now(),
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing({ target: [webhookDeliveries.runId, webhookDeliveries.nodeId] })
    .run()
  return nodes.length
}

/** The runs no live instance handles (their instance died, or they are from before instances were recorded). */
function runsOfDeadInstances(ctx: AppContext) {
  const live = ctx.db
    .select({ id: instances.id })
    .from(instances)
    .where(gte(instances.heartbeatAt, liveSince(ctx)))
  return ctx.db
    .select({ id: workflowRuns.id })
    .from(workflowRuns)
    .where(or(isNull(workflowRuns.instanceId), notInArray(workflowRuns.instanceId, live)))
}

/**
 * Held deliveries become due: the run's (its review is done) or, at start-up, those of runs whose instance died (no
 * review of theirs can still be running; a live instance's reviews release their own).
 */
export function releaseHeldDeliveries(ctx: AppContext, runId?: number): void {
  ctx.db
    .update(webhookDeliveries)
    .set({ state: 'pending', nextAttemptAt: ctx.clock.now(), updatedAt: isoNow(ctx.clock) })
    .where(
      and(
        eq(webhookDeliveries.state, 'held'),
        runId === undefined
          ? inArray(webhookDeliveries.runId, runsOfDeadInstances(ctx))
          : eq(webhookDeliveries.runId, runId),
      ),
    )
    .run()
}

/**
 * Scheme, host and port of the URL, as tool logs show it: a run's log is read by trigger-scope keys too, and a webhook
 * URL's path and query often carry a secret. Null when it is not a URL.
 */
function originOf(url: string): string | null {
  try {
    const { protocol, host } = new URL(url)
    return `${protocol}//${host}`
  } catch {
    return null
  }
}

type Attempt = {
  delivery: WebhookDeliveryRow
  verdict: DeliveryVerdict
  status: number | null
  url: string
  nodeName: string
  signed: boolean
}

function recordAttempt(ctx: AppContext, { delivery, verdict, status, url, nodeName: name, signed }: Attempt): void {
  const now = ctx.clock.now()
  const next = verdict.kind === 'retry' ? now + verdict.delayMs : now
  const error = verdict.kind === 'delivered' ? null : verdict.reason
  const entry = {
    delivery_id: delivery.deliveryUuid,
    node_id: delivery.nodeId,
    node_name: name,
    attempt: delivery.attempts,
    at: new Date(now).toISOString(),
    url: originOf(url),
    status_code: status,
    signed,
    outcome: verdict.kind,
    ...(error ? { error } : {}),
    ...(verdict.kind === 'retry' ? { next_attempt_at: new Date(next).toISOString() } : {}),
  }
  transaction(ctx, () => {
    ctx.db
      .update(webhookDeliveries)
      .set({
        state: verdict.kind === 'retry' ? 'pending' : verdict.kind,
        nextAttemptAt: next,
        lastError: error,
        updatedAt: isoNow(ctx.clock),
      })
      .where(eq(webhookDeliveries.id, delivery.id))
      .run()
    const run = ctx.db
      .select({ logs: workflowRuns.logs })
      .from(workflowRuns)
      .where(eq(workflowRuns.id, delivery.runId))
      .get()
    const attempts = Array.isArray(run?.logs.webhook_deliveries) ? run.logs.webhook_deliveries : []
    updateRun(ctx, delivery.runId, { logs: { webhook_deliveries: [...attempts, entry] } })
  })
  const log = verdict.kind === 'delivered' ? ctx.log.info.bind(ctx.log) : ctx.log.warn.bind(ctx.log)
  log(
    {
      runId: delivery.runId,
      nodeId: delivery.nodeId,
      attempt: delivery.attempts,
      status,
      outcome: verdict.kind,
      error,
    },
    'webhook delivery attempt',
  )
}

/** No answer's body is read; only a redirect that sends the same method and body again is followed (same host). */
async function send(
  policy: OutboundPolicy,
  request: ReturnType<typeof buildWebhookRequest>,
  timeoutMs: number,
): Promise<DeliveryOutcome> {
  try {
    const { status } = await sendOutbound(request, policy, { timeoutMs, maxBodyBytes: 0, redirects: 'keeping-method' })
    return { status }
  } catch (error) {
    return error instanceof OutboundRefused
      ? { refused: error.message }
      : { networkError: outboundFailureReason(error) }
  }
}

/** One attempt of a claimed delivery: the request is built from the run as it is now (QA annotations included). */
async function attempt(ctx: AppContext, delivery: WebhookDeliveryRow, timeoutMs: number): Promise<void> {
  const found = ctx.db
    .select({ run: workflowRuns, workflowName: workflows.name, definition: workflowDefinitions.workflowJson })
    .from(workflowRuns)
    .innerJoin(workflows, eq(workflows.id, workflowRuns.workflowId))
    .innerJoin(workflowDefinitions, eq(workflowDefinitions.id, workflowRuns.definitionId))
    .where(eq(workflowRuns.id, delivery.runId))
    .get()
  const node = (found?.definition as AgentDefinition | undefined)?.nodes.find(
    (candidate) => candidate.id === delivery.nodeId,
  )
  const url = typeof node?.data.endpoint_url === 'string' ? node.data.endpoint_url : ''
  const name = node ? nodeName(node) : delivery.nodeId
  const dead = (reason: string) =>
    recordAttempt(ctx, {
      delivery,
      verdict: { kind: 'dead', reason },
      status: null,
      url,
      nodeName: name,
      signed: false,
    })
  if (!found || !node) return dead("The webhook node is no longer in the run's agent version")
  const { run } = found
  const credentialUuid = node.data.credential_uuid
  const credential =
    typeof credentialUuid === 'string' && credentialUuid !== ''
      ? readCredential(ctx, run.organizationId, credentialUuid)
      : null
  if (typeof credentialUuid === 'string' && credentialUuid !== '' && !credential)
    return dead(`Credential ${credentialUuid} no longer exists`)
  const links = artifactLinks(ctx, run, ensurePublicAccess(ctx, run))
  const signingSecret = readSigningSecret(ctx, run.organizationId)
  const request = buildWebhookRequest({
    node,
    context: webhookTemplateContext({
      runId: run.id,
      runName: run.name,
      agentId: run.workflowId,
      agentName: found.workflowName,
      campaignId: run.campaignId,
      callTime: run.createdAt,
      initialContext: run.initialContext,
      gatheredContext: run.gatheredContext,
      annotations: run.annotations,
      usageInfo: run.usageInfo ?? {},
      costInfo: run.costInfo ?? {},
      recordingUrl: links.recording_public_url,
      transcriptUrl: links.transcript_public_url,
    }),
    deliveryId: delivery.deliveryUuid,
    runId: run.id,
    attempt: delivery.attempts,
    signingSecret,
    credential,
    now: new Date(ctx.clock.now()),
  })
  const outcome = await send(outboundPolicy(ctx, run.organizationId), request, timeoutMs)
  recordAttempt(ctx, {
    delivery,
    verdict: classifyDelivery(outcome, delivery.attempts),
    status: 'status' in outcome ? outcome.status : null,
    url,
    nodeName: name,
    signed: signingSecret !== null,
  })
}

export type WebhookDispatcher = {
  /** Sends what is due (up to a batch, in parallel) and resolves once those attempts are recorded; returns how many. */
  tick(): Promise<number>
  /** Ticks once a second until `stop`. */
  start(): void
  stop(): Promise<void>
}

export function createWebhookDispatcher(
  ctx: AppContext,
  options: { timeoutMs?: number; everyMs?: number } = {},
): WebhookDispatcher {
  const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS
  let timer: ReturnType<typeof setInterval> | null = null
  let running: Promise<void> | null = null

  /**
   * Claims due deliveries: each attempt counted and leased before it is sent. A delivery given up meanwhile (its last
   * attempt lost) is told to the run's watchers (the console's run page), as an attempt is.
   */
  function claim(): WebhookDeliveryRow[] {
    const now = ctx.clock.now()
    const { givenUp, claimed } = transaction(ctx, () => {
      // An attempt lost with its process after the last allowed one: nothing more will be sent.
      const givenUp = ctx.db
        .update(webhookDeliveries)
        .set({
          state: 'dead',
          lastError: `No answer recorded after ${WEBHOOK_MAX_ATTEMPTS} attempts`,
          updatedAt: isoNow(ctx.clock),
        })
        .where(
          and(
            eq(webhookDeliveries.state, 'pending'),
            lte(webhookDeliveries.nextAttemptAt, now),
            gte(webhookDeliveries.attempts, WEBHOOK_MAX_ATTEMPTS),
          ),
        )
        .returning({ organizationId: webhookDeliveries.organizationId, runId: webhookDeliveries.runId })
        .all()
      const due = ctx.db
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.state, 'pending'), lte(webhookDeliveries.nextAttemptAt, now)))
        .orderBy(webhookDeliveries.nextAttemptAt)
        .limit(BATCH)
      const claimed = ctx.db
        .update(webhookDeliveries)
        .set({
          attempts: incremented(webhookDeliveries.attempts),
          nextAttemptAt: now + LEASE_MS,
          updatedAt: isoNow(ctx.clock),
        })
        .where(inArray(webhookDeliveries.id, due))
        .returning()
        .all()
      return { givenUp, claimed }
    })
    for (const { organizationId, runId } of givenUp) ctx.events.publish({ kind: 'run', organizationId, runId })
    return claimed
  }

  async function tick(): Promise<number> {
    const claimed = claim()
    await Promise.all(
      claimed.map((delivery) =>
        attempt(ctx, delivery, timeoutMs).catch((error) => {
          ctx.log.error(
            { err: error, runId: delivery.runId, nodeId: delivery.nodeId },
            'webhook delivery failed unexpectedly',
          )
        }),
      ),
    )
    return claimed.length
  }

  return {
    tick,
    start() {
      const claims = failureStreak(ctx.log, {
        failed: 'webhook deliveries could not be claimed',
        recovered: 'webhook deliveries are claimed again',
      })
      timer ??= setInterval(() => {
        // a database that cannot be reached fails the claim: the next tick tries again
        running ??= tick()
          .then(claims.succeeded, claims.failed)
          .then(() => {
            running = null
          })
      }, options.everyMs ?? 1000)
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = null
      await running
    },
  }
}
