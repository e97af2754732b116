import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { manualClock } from '../../src/lib/clock'
import { createTestApp, type TestApp } from '../support/app'
import { csvOf, manualScheduler, scriptedTelephony, startedCampaign } from '../support/campaigns'
import { type PostgresBehindProxy, postgresMissing, startPostgresBehindProxy } from '../support/postgres'
import { waitFor } from '../support/wait'

/**
 * A campaign on PostgreSQL whose call ends while the database is away: the call's report waits for the database
 * (calls/outcomes.ts, orderedCallReports) instead of being lost, so the contact is settled and its slot of the
 * campaign's concurrency freed once the database answers, not at the next restart.
 */

const missing = postgresMissing()
let database: PostgresBehindProxy
let proxy: PostgresBehindProxy['proxy']
let t: TestApp

beforeAll(async () => {
  if (missing) return
  database = await startPostgresBehindProxy('campaign_outage')
  proxy = database.proxy
  t = createTestApp({ flags: { 'database-url': database.url } })
})

afterAll(() => {
  t?.close()
  database?.stop()
})

test.skipIf(missing !== null)(
  'a call that ends while the database is away: its contact is settled once it is back, and the next one dialled',
  async () => {
    const clock = t.ctx.clock as ReturnType<typeof manualClock>
    const telephony = scriptedTelephony(t, () => 'hold')
    const id = await startedCampaign(
      t,
      { max_concurrency: 1, rate_limit_per_second: 100 },
      csvOf(['phone_number'], [['+14155550100'], ['+14155550101']]),
    )
    const scheduler = manualScheduler(t)
    await scheduler.tickAndSettle()
    expect(telephony.dials).toHaveLength(1)

    await proxy.command('blackhole')
    telephony.end(telephony.dials[0].callId, 'completed', 20_000)
    await proxy.command('forward')

    const contacts = async () => {
      const response = await t.request('GET', `/api/v1/campaign/${id}/progress`)
      return response.status === 200 ? response.body.contacts : null
    }
    await waitFor(
      "the ended call's report applied once the database answers",
      async () => (await contacts())?.done === 1,
      30_000,
      250,
    )
    expect(await contacts()).toEqual({ waiting: 1, dialing: 0, retries_due: 0, done: 1, cancelled: 0 })
    clock.advance(1_000)
    await scheduler.tickAndSettle()
    expect(telephony.dials.map((dial) => dial.destination)).toEqual(['+14155550100', '+14155550101'])
  },
  60_000,
)
