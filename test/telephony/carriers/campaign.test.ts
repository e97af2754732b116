import { afterEach, describe, expect, test } from 'bun:test'
import type { manualClock } from '../../../src/lib/clock'
import type { AnsweredCall } from '../../../src/telephony/ari/call-session'
import { createAgent, csvOf, manualScheduler, uploadCsv } from '../../support/campaigns'
import { createCarrierLine, runRow, type RunRow } from '../../support/fake-carriers/calls'
import { createCarrierTestApp, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTelnyx } from '../../support/fake-carriers/telnyx'
import { startFakeTwilio } from '../../support/fake-carriers/twilio'
import { waitFor } from '../../support/wait'
import { configureModelsNeverAsked } from '../../support/voice-models'

/**
 * A small campaign end to end on each carrier the dialer is used with most: contacts dialled through the carrier's
 * fake, outcomes arriving as signed callbacks (answered with a media stream, busy then answered on the retry, no
 * answer, failed), retries scheduled by the policy, and the campaign completing with exact counters.
 */

type Outcome = 'answered' | 'busy' | 'no-answer' | 'failed'

/** What each carrier's fake needs to dial by script and report when it is done. */
type CarrierUnderTest = {
  name: string
  start(
    t: CarrierTestApp,
    outcomeOf: (to: string) => Outcome,
  ): Promise<{ config: Record<string, unknown>; idle(): Promise<void>; stop(): void }>
}

const CARRIERS: CarrierUnderTest[] = [
  {
    name: 'twilio',
    async start(t, outcomeOf) {
      const fake = startFakeTwilio({
        reach: t.reach,
        plan: (call) => {
          const outcome = outcomeOf(call.params.To)
          return outcome === 'answered' ? { outcome: 'completed', durationSeconds: 12 } : { outcome }
        },
      })
      t.ctx.providerApis.twilio = fake.baseUrl
      return {
        config: { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken },
        idle: fake.idle,
        stop: fake.stop,
      }
    },
  },
  {
    name: 'telnyx',
    async start(t, outcomeOf) {
      const causes = { busy: 'user_busy', 'no-answer': 'timeout', failed: 'call_rejected' } as const
      const fake = startFakeTelnyx({
        reach: t.reach,
        now: () => t.ctx.clock.now(),
        plan: (call) => {
          const outcome = outcomeOf(call.body.to)
          return { outcome: outcome === 'answered' ? 'answered' : causes[outcome] }
        },
      })
      t.ctx.providerApis.telnyx = fake.baseUrl
      return {
        config: {
          provider: 'telnyx',
          api_key: fake.apiKey,
          connection_id: 'conn-1',
          webhook_public_key: fake.publicKey,
        },
        idle: fake.idle,
        stop: fake.stop,
      }
    },
  },
]

let t: CarrierTestApp
let stopFake = () => {}
afterEach(() => {
  stopFake()
  t.stopServer()
  t.close()
})

describe.each(CARRIERS)('a campaign on $name', (carrier) => {
  test('dials every contact, retries the busy one, completes with exact counters', async () => {
    t = createCarrierTestApp()
    const clock = t.ctx.clock as ReturnType<typeof manualClock>
    const attempts = new Map<string, number>()
    const script: Record<string, Outcome[]> = {
      '+14155550201': ['answered'],
      '+14155550202': ['busy', 'answered'],
      '+14155550203': ['no-answer'],
      '+14155550204': ['failed'],
    }
    const fake = await carrier.start(t, (to) => {
      const attempt = attempts.get(to) ?? 0
      attempts.set(to, attempt + 1)
      return script[to][attempt]
    })
    stopFake = fake.stop
    // The speech pipeline's place: take each stream, hear the caller, answer, and hang up.
    const streams: AnsweredCall[] = []
    t.ctx.telephony.onAnswered(async (call) => {
      streams.push(call)
      call.media.onAudio(() => {})
      setTimeout(() => call.media.close(), 5)
    })

    await createCarrierLine(t, fake.config)
    await configureModelsNeverAsked(t)
    const workflowId = await createAgent(t)
    const sourceId = await uploadCsv(
      t,
      csvOf(
        ['phone_number'],
        Object.keys(script).map((phone) => [phone]),
      ),
    )
    const created = await t.request('POST', '/api/v1/campaign/create', {
      body: {
        name: `${carrier.name} spring`,
        source_type: 'csv',
        source_id: sourceId,
        workflow_id: workflowId,
        rate_limit_per_second: 10,
        retry_config: { max_retries: 1, retry_delay_seconds: 30, retry_on_busy: true, retry_on_no_answer: false },
      },
    })
    expect(created.status, created.text).toBe(200)
    const campaignId = created.body.id
    expect((await t.request('POST', `/api/v1/campaign/${campaignId}/start`)).status).toBe(200)

    const scheduler = manualScheduler(t)
    const openRuns = () =>
      t.ctx.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM workflow_runs WHERE state <> 'completed'").get()!
        .n
    const settle = async () => {
      await scheduler.tickEvery(100, 5)
      await fake.idle()
      await waitFor('every placed call settled', () => openRuns() === 0, 5_000)
    }
    await settle()
    expect([...attempts.values()]).toEqual([1, 1, 1, 1])
    clock.advance(31_000)
    await settle()
    await scheduler.tickAndSettle()

    const campaign = (await t.request('GET', `/api/v1/campaign/${campaignId}`)).body
    expect(campaign).toMatchObject({
      state: 'completed',
      processed_rows: 5,
      executed_count: 5,
      failed_rows: 2,
      total_rows: 4,
    })
    const runs = t.ctx.sqlite
      .query<{ id: number }, [number]>('SELECT id FROM workflow_runs WHERE campaign_id = ? ORDER BY id')
      .all(campaignId)
      .map((row) => runRow(t, row.id))
    const byNumber = (phone: string) =>
      runs.filter((run: RunRow) => run.initial_context.called_number === phone).map((run) => run.disposition)
    expect(byNumber('+14155550201')).toEqual(['completed'])
    expect(byNumber('+14155550202')).toEqual(['busy', 'completed'])
    expect(byNumber('+14155550203')).toEqual(['no-answer'])
    expect(byNumber('+14155550204')).toEqual(['failed'])
    expect(streams).toHaveLength(2)
    for (const run of runs) expect(run.logs.telephony_status_callbacks.length).toBeGreaterThan(0)
    expect(runs.find((run) => run.initial_context.is_retry)?.initial_context).toMatchObject({
      retry_attempt: 1,
      retry_reason: 'busy',
    })
  })
})
