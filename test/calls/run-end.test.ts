import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'bun:test'
import { applyCallReport } from '../../src/calls/outcomes'
import { closeCallsInterruptedByRestart } from '../../src/calls/recovery'
import { createVoiceConversations } from '../../src/calls/voice'
import { contactAttempts } from '../../src/campaigns/attempts'
import { createRun, updateRun } from '../../src/runs/service'
import type { AnsweredCall } from '../../src/telephony/ari/call-session'
import { createAgent } from '../support/agents'
import { createTestApp, TEST_CLOCK_START, type TestApp } from '../support/app'
import { startFakeModels, type FakeModels } from '../support/fake-models'
import { configureFakeVoiceModels } from '../support/voice-models'
import { waitFor } from '../support/wait'

/**
 * A run's end is written once: by the call's report when no conversation runs on it, else by its run session with the
 * call's end the report left on it. The process dying between the report and the session's write loses neither, and a
 * conversation that fails still ends its run as soon as the call's end is reported.
 */

let t: TestApp
let models: FakeModels
beforeAll(() => {
  models = startFakeModels()
})
afterAll(() => models.stop())
beforeEach(() => {
  t = createTestApp()
  t.ctx.sqlite.run('CREATE TEMP TABLE final_writes (run_id INTEGER)')
  t.ctx.sqlite.run(`CREATE TEMP TRIGGER count_final_writes AFTER UPDATE OF state, completed_at, usage_info, cost_info
    ON main.workflow_runs WHEN new.state = 'completed' BEGIN INSERT INTO final_writes VALUES (new.id); END`)
})
afterEach(() => t.close())

const finalWrites = (runId: number) =>
  t.ctx.sqlite.query<{ n: number }, [number]>('SELECT count(*) AS n FROM final_writes WHERE run_id = ?').get(runId)!.n

const organizationId = () =>
  t.ctx.sqlite.query<{ id: number }, []>('SELECT organization_id AS id FROM workflows LIMIT 1').get()!.id

async function callRun(callId: string) {
  const agent = await createAgent(t, 'Run end')
  return createRun(t.ctx, {
    organizationId: organizationId(),
    agentId: agent.id,
    definitionId: agent.current_definition_id,
    name: 'WR-TEST',
    mode: 'ari',
    callType: 'outbound',
    callId,
  })
}

const runRow = (runId: number) => {
  const row = t.ctx.sqlite
    .query<{ state: string; usage_info: string | null; gathered_context: string; logs: string }, [number]>(
      'SELECT state, usage_info, gathered_context, logs FROM workflow_runs WHERE id = ?',
    )
    .get(runId)!
  return {
    state: row.state,
    usage: JSON.parse(row.usage_info ?? 'null'),
    gathered: JSON.parse(row.gathered_context),
    logs: JSON.parse(row.logs),
  }
}

const ended = (callId: string) => ({
  kind: 'ended' as const,
  callId,
  outcome: 'completed' as const,
  at: TEST_CLOCK_START + 42_500,
  answeredAt: TEST_CLOCK_START,
  providerStatus: 'max_call_duration',
})

test('a call without a conversation: its report completes the run, once', async () => {
  const run = await callRun('call-alone')
  expect(applyCallReport(t.ctx, ended('call-alone'), contactAttempts)).toBe(true)
  expect(applyCallReport(t.ctx, ended('call-alone'), contactAttempts)).toBe(false)
  expect(runRow(run.id)).toMatchObject({ state: 'completed', usage: { call_duration_seconds: 42.5 } })
  expect(finalWrites(run.id)).toBe(1)
})

test('a call whose conversation is under way: the report leaves the run open; a restart completes it with the call outcome', async () => {
  const run = await callRun('call-talking')
  updateRun(t.ctx, run.id, { logs: { session: { channel: 'voice' } } })
  applyCallReport(t.ctx, ended('call-talking'), contactAttempts)
  expect(runRow(run.id).state).not.toBe('completed')
  expect(finalWrites(run.id)).toBe(0)
  expect(runRow(run.id).logs.telephony).toMatchObject({ outcome: 'completed', provider_status: 'max_call_duration' })

  // kill -9 here: the session never wrote the run. Recovery completes it from what the report left, not `interrupted`.
  expect(await closeCallsInterruptedByRestart(t.ctx, contactAttempts)).toBe(1)
  const recovered = runRow(run.id)
  expect(recovered).toMatchObject({
    state: 'completed',
    usage: { call_duration_seconds: 42.5 },
    gathered: { mapped_call_disposition: 'completed' },
  })
  expect(recovered.logs.telephony).toMatchObject({ outcome: 'completed', provider_status: 'max_call_duration' })
  expect(finalWrites(run.id)).toBe(1)
})

test('a conversation whose voice pipeline throws: the run ends with pipeline_error as soon as the call end is reported', async () => {
  await configureFakeVoiceModels(t, models)
  const run = await callRun('call-broken')
  let reportedNow!: () => void
  const reported = new Promise<void>((resolve) => {
    reportedNow = resolve
  })
  const call: AnsweredCall = {
    callId: 'call-broken',
    runId: run.id,
    organizationId: organizationId(),
    configurationId: 1,
    direction: 'inbound',
    media: {
      onAudio() {
        throw new Error('the media leg broke')
      },
      onDtmf() {},
      onClose() {},
      send() {},
      mark: async () => 'played',
      flush() {},
      close() {},
      closed: false,
    } as unknown as AnsweredCall['media'],
    onDtmf() {},
    ended: new Promise(() => {}),
    reported,
    hangup: async () => {},
  }
  const conversations = createVoiceConversations(t.ctx, { attempts: contactAttempts })
  await expect(conversations.onAnswered(call)).rejects.toThrow('the media leg broke')
  // The transport hangs the call up; its end is reported.
  applyCallReport(t.ctx, ended('call-broken'), contactAttempts)
  reportedNow()
  await waitFor('the run completed', () => runRow(run.id).state === 'completed', 5_000)
  expect(runRow(run.id)).toMatchObject({
    state: 'completed',
    usage: { call_duration_seconds: 42.5 },
    gathered: { mapped_call_disposition: 'pipeline_error' },
  })
  expect(runRow(run.id).logs.telephony).toMatchObject({ outcome: 'completed' })
  expect(finalWrites(run.id)).toBe(1)
})
