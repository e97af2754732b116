// 500 simultaneous calls through the public trigger API on one fake Asterisk replaying the recorded traces:
// `bun scripts/bench/ari.ts [calls] [timeScale]`. Checks every run ends with the right outcome and reports
// events/s, the event → run-update latency and how long the database write of one call report takes.
// The fake Asterisk runs in this process too, so its work is counted in every figure.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/app'
import { loadConfig } from '../../src/config'
import { buildContext } from '../../src/boot'
import { createLogger } from '../../src/log'
import { createAgent } from '../../src/agents/service'
import { bootstrapInstallation } from '../../src/auth/keys'
import { createConfiguration } from '../../src/telephony/config/configuration-service'
import { startAriManager } from '../../src/telephony/ari/manager'
import { eventChannel } from '../../src/telephony/ari/types'
import { startFakeAri } from '../../test/support/fake-ari'

const CALLS = Number(process.argv[2] ?? 500)
/**
 * 1 plays the traces in real time (an answered call lasts 5.5 s, so all 500 overlap). Smaller values compress the calls
 * for a higher event rate, but calls then end before their bridge is set up and go unrecorded.
 */
const TIME_SCALE = Number(process.argv[3] ?? 1)

/** Destination → the disposition its recorded trace must end the run with; calls cycle through them. */
const MIX: [destination: string, disposition: string][] = [
  ['Local/100@test', 'completed'],
  ['Local/200@test', 'completed'],
  ['Local/486@test', 'busy'],
  ['Local/408@test', 'no-answer'],
  ['Local/500@test', 'failed'],
  ['Local/603@test', 'failed'],
]

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0
const summary = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const ms = (value: number) => Math.round(value * 100) / 100
  return {
    n: sorted.length,
    p50_ms: ms(percentile(sorted, 50)),
    p99_ms: ms(percentile(sorted, 99)),
    max_ms: ms(sorted.at(-1) ?? 0),
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-bench-'))
const fake = await startFakeAri({ timeScale: TIME_SCALE })
const ctx = buildContext(loadConfig({ dir: dataDir, 'ring-timeout': '2' }, {}), { log: createLogger('error') })
try {
  const key = bootstrapInstallation(ctx)!.api_key
  ctx.sqlite.query('UPDATE organizations SET concurrent_call_limit = ?').run(CALLS * 2)
  const config = await createConfiguration(ctx, 1, {
    name: 'bench pbx',
    is_default_outbound: true,
    config: { provider: 'ari', ari_endpoint: fake.url, app_name: 'ariuser', app_password: 'aripass' },
  })
  const agent = await createAgent(ctx, 1, {
    name: 'bench',
    workflow_definition: { nodes: [{ id: '1', type: 'startCall', data: { prompt: 'Hello' } }], edges: [] },
  })

  /** When the latest event about each channel arrived: the one a report about that call answers. */
  const eventAt = new Map<string, number>()
  const latencies = { answered: [] as number[], endedUnanswered: [] as number[], endedAnswered: [] as number[] }
  const dbWrites: number[] = []
  const handlerTimes: number[] = []
  let events = 0
  const answeredCalls = new Set<string>()

  // buildContext registered the handler that applies reports to runs; time every report through it.
  const report = ctx.telephony.report
  ctx.telephony.report = (callReport) => {
    const started = performance.now()
    report(callReport)
    const finished = performance.now()
    dbWrites.push(finished - started)
    const at = eventAt.get(callReport.callId)
    if (at === undefined) return
    if (callReport.kind === 'answered') {
      answeredCalls.add(callReport.callId)
      latencies.answered.push(finished - at)
    } else {
      ;(answeredCalls.has(callReport.callId) ? latencies.endedAnswered : latencies.endedUnanswered).push(finished - at)
    }
  }

  const manager = startAriManager(ctx)
  const handleEvent = manager.adapter.handleEvent
  manager.adapter.handleEvent = (configurationId, event) => {
    const started = performance.now()
    events += 1
    const channelId = eventChannel(event)?.id
    if (channelId) eventAt.set(channelId, started)
    handleEvent(configurationId, event)
    handlerTimes.push(performance.now() - started)
  }
  await manager.sync()
  while (!manager.isConnected(config.id)) await Bun.sleep(5)

  const app = createApp(ctx)
  const startedAt = performance.now()
  const responses = await Promise.all(
    Array.from({ length: CALLS }, (_, index) =>
      app
        .handle(
          new Request(`http://localhost/api/v1/public/agent/workflow/${agent.workflow_uuid}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key },
            body: JSON.stringify({ phone_number: MIX[index % MIX.length][0] }),
          }),
        )
        .then(async (response) => ({
          status: response.status,
          body: (await response.json()) as { workflow_run_id: number },
        })),
    ),
  )
  const triggeredAt = performance.now()
  const refused = responses.filter((response) => response.status !== 200)
  if (refused.length > 0) throw new Error(`${refused.length} triggers refused, e.g. ${JSON.stringify(refused[0])}`)

  const countOpen = ctx.sqlite.query<{ n: number }, []>(
    `SELECT count(*) AS n FROM workflow_runs WHERE state <> 'completed'`,
  )
  const deadline = performance.now() + 120_000
  while (countOpen.get()!.n > 0) {
    if (performance.now() > deadline) throw new Error(`${countOpen.get()!.n} runs still open after 120 s`)
    await Bun.sleep(10)
  }
  const endedAt = performance.now()

  const runs = ctx.sqlite
    .query<{ id: number; called: string; disposition: string }, []>(
      `SELECT id, json_extract(initial_context, '$.called_number') AS called, disposition FROM workflow_runs`,
    )
    .all()
  const expected = new Map(MIX)
  const wrong = runs.filter((run) => expected.get(run.called) !== run.disposition)
  const byDisposition = Object.fromEntries(
    [...new Set(runs.map((run) => run.disposition))].map((d) => [
      d,
      runs.filter((run) => run.disposition === d).length,
    ]),
  )
  const seconds = (endedAt - startedAt) / 1000

  console.log(
    JSON.stringify(
      {
        calls: CALLS,
        time_scale: TIME_SCALE,
        triggers_ms: Math.round(triggeredAt - startedAt),
        wall_ms: Math.round(endedAt - startedAt),
        ari_events: events,
        events_per_s: Math.round(events / seconds),
        outcomes: byDisposition,
        wrong_outcomes: wrong.length,
        recordings_stored: ctx.sqlite
          .query<{ n: number }, []>('SELECT count(*) AS n FROM workflow_runs WHERE recording_key IS NOT NULL')
          .get()!.n,
        latency_event_to_run_update: {
          answered_to_running: summary(latencies.answered),
          unanswered_end_to_completed: summary(latencies.endedUnanswered),
          answered_end_to_completed_incl_recording: summary(latencies.endedAnswered),
        },
        db_write_per_report: summary(dbWrites),
        event_handler_sync: summary(handlerTimes),
        event_handler_capacity_per_s: Math.round(
          1000 / (handlerTimes.reduce((sum, ms) => sum + ms, 0) / handlerTimes.length),
        ),
      },
      null,
      2,
    ),
  )
  await manager.stop()
  if (wrong.length > 0) process.exitCode = 1
} finally {
  await fake.close()
  ctx.sqlite.close()
  rmSync(dataDir, { recursive: true, force: true })
}
