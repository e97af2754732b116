import { afterEach, beforeEach, expect, test } from 'bun:test'
import { closeCallsInterruptedByRestart } from '../src/calls/recovery'
import { contactAttempts } from '../src/campaigns/attempts'
import { upsertInstance } from '../src/instances/queries'
import { LIVENESS_HEARTBEATS } from '../src/instances/registry'
import { manualClock } from '../src/lib/clock'
import { closeSessionsInterruptedByRestart } from '../src/runs/session-recovery'
import { createRun } from '../src/runs/service'
import { releaseHeldDeliveries } from '../src/runs/webhook-outbox'
import { createAgent } from './support/agents'
import { createTestApp, TEST_CLOCK_START, type TestApp } from './support/app'

// Three app contexts on ONE data dir, as three instances: recovery closes only the runs of an instance that stopped
// heartbeating, and of two survivors recovering at once exactly one closes each run (its claim is a transaction).

let clock: ReturnType<typeof manualClock>
let owner: TestApp
let survivors: TestApp[]

beforeEach(() => {
  clock = manualClock(TEST_CLOCK_START)
  owner = createTestApp({ clock })
  survivors = [createTestApp({ clock, restartOf: owner }), createTestApp({ clock, restartOf: owner })]
})
afterEach(() => {
  for (const survivor of survivors) survivor.close({ keepData: true })
  owner.close()
})

/** A heartbeat of the instance, at the shared clock's time. */
function heartbeat(t: TestApp): void {
  const now = new Date(clock.now()).toISOString()
  upsertInstance(t.ctx, { id: t.ctx.instanceId, startedAt: now, heartbeatAt: now, version: 'test', hostname: 'test' })
}

async function ownersRuns(): Promise<{ calls: number[]; chat: number }> {
  const agent = await createAgent(owner, 'Instances')
  const organizationId = owner.ctx.sqlite
    .query<{ id: number }, []>('SELECT organization_id AS id FROM workflows LIMIT 1')
    .get()!.id
  const run = (mode: string, callId: string | null) =>
    createRun(owner.ctx, {
      organizationId,
      agentId: agent.id,
      definitionId: agent.current_definition_id,
      name: 'WR-TEST',
      mode,
      callType: 'outbound',
      callId,
    }).id
  return {
    calls: [run('ari', 'first-call-of-the-owner'), run('ari', 'second-call-of-the-owner')],
    chat: run('textchat', null),
  }
}

/** A webhook delivery of the run held for its QA review. */
function holdDelivery(runId: number): void {
  owner.ctx.sqlite
    .query(
      `INSERT INTO webhook_deliveries (delivery_uuid, organization_id, run_id, node_id, state, next_attempt_at, created_at, updated_at)
       SELECT 'held-' || id, organization_id, id, 'hook', 'held', 0, created_at, created_at FROM workflow_runs WHERE id = ?`,
    )
    .run(runId)
}
const deliveryState = () =>
  owner.ctx.sqlite.query<{ state: string }, []>('SELECT state FROM webhook_deliveries').get()!.state

const runRow = (runId: number) =>
  owner.ctx.sqlite
    .query<{ state: string; disposition: string | null; instance_id: string }, [number]>(
      'SELECT state, disposition, instance_id FROM workflow_runs WHERE id = ?',
    )
    .get(runId)!

test("a live instance's open call and chat are left alone by the others' recovery", async () => {
  const runs = await ownersRuns()
  for (const t of [owner, ...survivors]) heartbeat(t)
  // Just inside the liveness window: three heartbeats missed are not yet dead.
  clock.advance(LIVENESS_HEARTBEATS * owner.ctx.config.instanceHeartbeatMs)
  holdDelivery(runs.chat)
  for (const survivor of survivors) {
    expect(await closeCallsInterruptedByRestart(survivor.ctx, contactAttempts)).toBe(0)
    expect(await closeSessionsInterruptedByRestart(survivor.ctx)).toBe(0)
    releaseHeldDeliveries(survivor.ctx)
  }
  // Its QA review may still be running on the owner.
  expect(deliveryState()).toBe('held')
  for (const call of runs.calls)
    expect(runRow(call)).toMatchObject({ state: 'initialized', instance_id: owner.ctx.instanceId })
  expect(runRow(runs.chat)).toMatchObject({ state: 'initialized', instance_id: owner.ctx.instanceId })
})

test("a dead instance's calls and chat: two survivors recover at once, exactly one closes each", async () => {
  const runs = await ownersRuns()
  heartbeat(owner)
  holdDelivery(runs.chat)
  clock.advance(LIVENESS_HEARTBEATS * owner.ctx.config.instanceHeartbeatMs + 1)
  for (const survivor of survivors) heartbeat(survivor)
  // No QA review of the dead owner's can still be running.
  releaseHeldDeliveries(survivors[0].ctx)
  expect(deliveryState()).toBe('pending')

  const closedCalls = await Promise.all(
    survivors.map((survivor) => closeCallsInterruptedByRestart(survivor.ctx, contactAttempts)),
  )
  const closedChats = await Promise.all(survivors.map((survivor) => closeSessionsInterruptedByRestart(survivor.ctx)))
  // Each survivor lists both calls before the other claims one: the claim decides who closes which.
  expect(closedCalls[0] + closedCalls[1]).toBe(2)
  expect(closedChats.sort()).toEqual([0, 1])
  const ids = survivors.map((survivor) => survivor.ctx.instanceId)
  for (const runId of [...runs.calls, runs.chat]) {
    const row = runRow(runId)
    expect(row).toMatchObject({ state: 'completed', disposition: 'interrupted' })
    expect(ids).toContain(row.instance_id)
  }
})
