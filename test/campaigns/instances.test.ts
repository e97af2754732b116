import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { transitionCampaign } from '../../src/campaigns/lifecycle'
import type { manualClock } from '../../src/lib/clock'
import { createTestApp, TEST_CLOCK_START, type TestApp } from '../support/app'
import { csvOf, manualScheduler, scriptedTelephony, startedCampaign } from '../support/campaigns'

// Two instances (two contexts, each with its own database connection and dialer) on one data dir and one clock,
// sharing one fake PBX that counts their calls together. Where a test needs one instance to act between two steps of
// the other (as two processes do), the fake PBX's dial, which the dialer calls between two claims, lets it.
// The scripted provider stands for any: a carrier campaign is dialled by every instance, an ARI one only by the
// instance holding its configuration's events connection (neither holds one here).

let a: TestApp
let b: TestApp
let clock: ReturnType<typeof manualClock>
beforeEach(() => {
  a = createTestApp()
  b = createTestApp({ restartOf: a, clock: a.ctx.clock })
  clock = a.ctx.clock as ReturnType<typeof manualClock>
})
afterEach(() => {
  b.close({ keepData: true })
  a.close()
})

const phones = (count: number) =>
  Array.from({ length: count }, (_, i) => [`+1415555${String(100 + i).padStart(4, '0')}`])

/** A campaign of `contacts` contacts created and started through instance A; returns its id. */
const runningCampaign = (settings: Record<string, unknown>, contacts: number) =>
  startedCampaign(a, settings, csvOf(['phone_number'], phones(contacts)))

const campaignThrough = async (t: TestApp, id: number) => (await t.request('GET', `/api/v1/campaign/${id}`)).body

const logEvents = (campaign: { logs: { event: string }[] }, event: string) =>
  campaign.logs.filter((entry) => entry.event === event).length

/** The most dials in any window [t, t + 1000). */
function busiestSecond(times: number[]): number {
  let most = 0
  for (let last = 0, first = 0; last < times.length; last++) {
    while (times[last] - times[first] >= 1000) first++
    most = Math.max(most, last - first + 1)
  }
  return most
}

describe('two instances dialling one campaign', () => {
  test.each([
    ['max_concurrency', { max_concurrency: 2 }, 1000],
    ["the organization's concurrent call limit", {}, 2],
  ])(
    'every contact is dialled exactly once and %s holds across the pair, even when one claims between the other’s claims',
    async (_limit, settings, organizationLimit) => {
      a.ctx.sqlite.run('UPDATE organizations SET concurrent_call_limit = ?', [organizationLimit])
      // At 1000 dials a second a dialer a few ms late may place several dials in one go: room for the race.
      const id = await runningCampaign({ rate_limit_per_second: 1000, ...settings }, 8)
      const schedulers = [manualScheduler(a), manualScheduler(b)]
      // Each dial A places lets B claim before A goes on, as B's process may between two of A's claims.
      const telephony = scriptedTelephony([a, b], (_request, instance) => {
        if (instance === 0) void schedulers[1].tick()
        return 'hold'
      })
      for (let round = 0; round < 20 && telephony.dials.length < 8; round++) {
        await schedulers[0].tickAndSettle()
        for (const callId of [...telephony.alive]) telephony.end(callId, 'completed', 1000)
        clock.advance(3)
      }
      for (const scheduler of schedulers) await scheduler.tickAndSettle()
      expect(telephony.mostAlive()).toBe(2)
      expect(telephony.dials.map((dial) => dial.destination).sort()).toEqual(phones(8).flat())
      expect(new Set(telephony.dialledBy)).toEqual(new Set([0, 1]))
      const done = await campaignThrough(b, id)
      expect(done).toMatchObject({ state: 'completed', processed_rows: 8, executed_count: 8, failed_rows: 0 })
      expect(logEvents(done, 'campaign_completed')).toBe(1)
    },
  )

  test('rate_limit_per_second holds across the pair: N dials in any second, not N per instance', async () => {
    await runningCampaign({ rate_limit_per_second: 2 }, 30)
    const dialTimes: number[] = []
    const telephony = scriptedTelephony([a, b], () => {
      dialTimes.push(clock.now())
      return 'completed'
    })
    const schedulers = [manualScheduler(a), manualScheduler(b)]
    // Four seconds in steps of 100 ms; which instance looks first alternates, so both get slots.
    for (let step = 0; step < 40; step++) {
      const first = step % 2
      await schedulers[first].tickAndSettle()
      await schedulers[1 - first].tickAndSettle()
      clock.advance(100)
    }
    expect(busiestSecond(dialTimes)).toBe(2)
    expect(dialTimes).toHaveLength(8)
    expect(new Set(telephony.dialledBy)).toEqual(new Set([0, 1]))
  })

  test('the sliding second binds across the pair when dials run late', async () => {
    await runningCampaign({ rate_limit_per_second: 2 }, 10)
    const dialTimes: number[] = []
    scriptedTelephony([a, b], () => {
      dialTimes.push(clock.now())
      return 'completed'
    })
    const [onA, onB] = [manualScheduler(a), manualScheduler(b)]
    for (const [at, scheduler] of [
      [0, onA],
      [740, onB], // late, but less than half an interval: the 500 ms rhythm goes on
      [1000, onA],
      [1500, onB], // the rhythm's slot, but 740 and 1000 are within the last second
      [1500, onA],
      [1740, onB],
    ] as const) {
      clock.set(TEST_CLOCK_START + at)
      await scheduler.tickAndSettle()
    }
    expect(dialTimes.map((at) => at - TEST_CLOCK_START)).toEqual([0, 740, 1000, 1740])
  })

  test('a pause through instance A stops B between two of its claims; a resume through A lets B dial again', async () => {
    const id = await runningCampaign({ rate_limit_per_second: 100 }, 6)
    const organizationId = a.ctx.sqlite
      .query<{ organization_id: number }, [number]>('SELECT organization_id FROM campaigns WHERE id = ?')
      .get(id)!.organization_id
    let pauses = 1
    const telephony = scriptedTelephony([a, b], () => {
      // What POST /campaign/{id}/pause on A does, landing while B is dialling.
      if (pauses-- > 0) transitionCampaign(a.ctx, organizationId, id, 'pause')
      clock.advance(10)
      return 'hold'
    })
    const [onA, onB] = [manualScheduler(a), manualScheduler(b)]
    await onB.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    clock.advance(1000)
    await onB.tickAndSettle()
    await onA.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)
    expect((await campaignThrough(b, id)).state).toBe('paused')
    expect((await a.request('POST', `/api/v1/campaign/${id}/resume`)).status).toBe(200)
    await onB.tickAndSettle()
    // (each dial moves the clock to the next slot)
    expect(telephony.dials.map((dial) => dial.destination)).toEqual(phones(6).flat())
    expect(telephony.dialledBy).toEqual([1, 1, 1, 1, 1, 1])
  })

  test('outside the schedule the pair logs outside_schedule once per closed window', async () => {
    // The manual clock starts on Monday 2026-01-05 10:00 UTC.
    const schedule_config = { timezone: 'UTC', slots: [{ day_of_week: 0, start_time: '11:00', end_time: '12:00' }] }
    const id = await runningCampaign({ schedule_config }, 1)
    const telephony = scriptedTelephony([a, b], () => 'completed')
    const schedulers = [manualScheduler(a), manualScheduler(b)]
    for (let round = 0; round < 3; round++) {
      for (const scheduler of schedulers) await scheduler.tickAndSettle()
      clock.advance(60_000)
    }
    expect(telephony.dials).toHaveLength(0)
    expect(logEvents(await campaignThrough(a, id), 'outside_schedule')).toBe(1)
  })
})
