import { afterEach, beforeEach, describe, expect, spyOn, test } from 'bun:test'
import * as stateMachine from '../../src/campaigns/state-machine'
import { applyTransition, CAMPAIGN_TRANSITIONS, type CampaignTransition } from '../../src/campaigns/state-machine'
import type { CampaignState } from '../../src/db/schema/campaigns'
import type { manualClock } from '../../src/lib/clock'
import { markInactive } from '../../src/telephony/config/configurations'
import { createTestApp, type TestApp } from '../support/app'
import {
  createAgent,
  createAriConfiguration,
  csvOf,
  manualScheduler,
  scriptedTelephony,
  uploadCsv,
} from '../support/campaigns'
import { configureModelsNeverAsked } from '../support/voice-models'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const phones = (count: number) =>
  Array.from({ length: count }, (_, i) => [`+1415555${String(100 + i).padStart(4, '0')}`])

let shared: { workflowId: number; configurationId: number } | null
beforeEach(() => {
  shared = null
})

async function createCampaign(
  extra: Record<string, unknown> = {},
  rows = 3,
): Promise<{ id: number; configurationId: number }> {
  if (!shared) await configureModelsNeverAsked(t)
  shared ??= { workflowId: await createAgent(t), configurationId: await createAriConfiguration(t) }
  const { workflowId, configurationId } = shared
  const sourceId = await uploadCsv(t, csvOf(['phone_number'], phones(rows)))
  const response = await t.request('POST', '/api/v1/campaign/create', {
    body: {
      name: 'Promo',
      source_type: 'csv',
      workflow_id: workflowId,
      source_id: sourceId,
      rate_limit_per_second: 50,
      ...extra,
    },
  })
  expect(response.status).toBe(200)
  return { id: response.body.id, configurationId }
}

/**
 * Every state change the database sees (a temporary trigger records them) next to every transition the state machine
 * applied: when the two lists match, no code path changed a campaign's state around the machine.
 */
function watchStateChanges() {
  t.ctx.sqlite.run('CREATE TEMP TABLE state_changes (campaign_id INTEGER, old_state TEXT, new_state TEXT)')
  t.ctx.sqlite.run(`CREATE TEMP TRIGGER record_state_change AFTER UPDATE OF state ON main.campaigns WHEN old.state <> new.state
    BEGIN INSERT INTO state_changes VALUES (new.id, old.state, new.state); END`)
  const spy = spyOn(stateMachine, 'applyTransition')
  return {
    stored: () =>
      t.ctx.sqlite
        .query<{ campaign_id: number; old_state: string; new_state: string }, []>('SELECT * FROM state_changes')
        .all()
        .map((row) => `${row.campaign_id}: ${row.old_state} → ${row.new_state}`),
    applied: () =>
      spy.mock.calls.flatMap(([, campaignId, transition], index) => {
        const from = spy.mock.results[index].value as CampaignState | null
        return from === null ? [] : [`${campaignId}: ${from} → ${CAMPAIGN_TRANSITIONS[transition].to} (${transition})`]
      }),
    restore: () => spy.mockRestore(),
  }
}

describe('campaign state machine', () => {
  test('an illegal transition writes nothing and says so', async () => {
    const { id } = await createCampaign()
    const illegal: CampaignTransition[] = ['imported', 'pause', 'resume', 'stop', 'complete', 'suspend']
    for (const transition of illegal) expect(applyTransition(t.ctx, id, transition)).toBeNull()
    expect((await t.request('GET', `/api/v1/campaign/${id}`)).body.state).toBe('draft')
    expect(applyTransition(t.ctx, id, 'start')).toBe('draft')
    expect(applyTransition(t.ctx, id, 'start')).toBeNull()
    expect(applyTransition(t.ctx, id, 'complete')).toBe('running')
    expect((await t.request('GET', `/api/v1/campaign/${id}`)).body).toMatchObject({
      state: 'completed',
      completed_at: expect.any(String),
    })
  })

  test('every path goes through it: import, API, scheduler (completion, telephony pause), settlement (circuit breaker)', async () => {
    const watch = watchStateChanges()
    try {
      const clock = t.ctx.clock as ReturnType<typeof manualClock>
      // Import and API: create, start, pause, resume, stop.
      const viaApi = await createCampaign()
      for (const action of ['start', 'pause', 'resume', 'stop']) {
        expect((await t.request('POST', `/api/v1/campaign/${viaApi.id}/${action}`)).status).toBe(200)
      }
      // Scheduler: a campaign whose every contact was called completes.
      const completes = await createCampaign({}, 2)
      const telephony = scriptedTelephony(t, (request) =>
        request.destination.endsWith('0100') ? 'completed' : 'refuse',
      )
      const scheduler = manualScheduler(t)
      await t.request('POST', `/api/v1/campaign/${completes.id}/start`)
      await scheduler.tickEvery(1000, 3)
      // Attempt settlement: failed calls trip the circuit breaker, which pauses the campaign.
      const tripped = await createCampaign(
        { circuit_breaker: { failure_threshold: 0.5, window_seconds: 60, min_calls_in_window: 3 } },
        10,
      )
      telephony.dials.length = 0
      scriptedTelephony(t, () => 'refuse')
      await t.request('POST', `/api/v1/campaign/${tripped.id}/start`)
      await scheduler.tickEvery(50, 5)
      // Scheduler: a campaign whose telephony configuration is out of service is paused.
      const telephonyPaused = await createCampaign()
      await t.request('POST', `/api/v1/campaign/${telephonyPaused.id}/start`)
      markInactive(t.ctx, telephonyPaused.configurationId, 'down')
      clock.advance(1000)
      await scheduler.tickAndSettle()
      const stored = watch.stored()
      expect(watch.applied().map((entry) => entry.replace(/ \(\w+\)$/, ''))).toEqual(stored)
      expect(watch.applied()).toEqual(
        expect.arrayContaining([
          `${viaApi.id}: importing → draft (imported)`,
          `${viaApi.id}: running → paused (pause)`,
          `${viaApi.id}: running → stopped (stop)`,
          `${completes.id}: running → completed (complete)`,
          `${telephonyPaused.id}: running → paused (suspend)`,
          `${tripped.id}: running → paused (suspend)`,
        ]),
      )
      expect(stored).toHaveLength(14)
      const lastEvent = async (id: number) => (await t.request('GET', `/api/v1/campaign/${id}`)).body.logs.at(-1).event
      expect(await lastEvent(tripped.id)).toBe('circuit_breaker_tripped')
      expect(await lastEvent(telephonyPaused.id)).toBe('telephony_unavailable')
    } finally {
      watch.restore()
    }
  })
})
