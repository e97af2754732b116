import { expect } from 'bun:test'
import type { AnsweredCall } from '../../../src/telephony/ari/call-session'
import type { TestApp } from '../app'
import { createCarrierTestApp, type CarrierTestApp, type FakeServer } from './shared'
import { addPhoneNumber, createConfiguration } from '../telephony'
import { waitFor } from '../wait'
import { createVoiceConversations, type VoiceConversationOptions } from '../../../src/calls/voice'
import { contactAttempts } from '../../../src/campaigns/attempts'
import { systemClock } from '../../../src/lib/clock'
import { startFakeModels, type FakeModels } from '../fake-models'
import { configureFakeVoiceModels, configureModelsNeverAsked } from '../voice-models'

/** Agents, numbers and runs for the carrier tests, through the API; run rows read straight from the database. */

export type CarrierAgent = { id: number; triggerPath: string }

export async function createCarrierAgent(
  t: TestApp,
  configurations: Record<string, unknown> = {},
): Promise<CarrierAgent> {
  const triggerPath = crypto.randomUUID()
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    body: {
      name: `Agent ${triggerPath.slice(0, 6)}`,
      workflow_definition: {
        nodes: [
          {
            id: '1',
            type: 'startCall',
            position: { x: 0, y: 0 },
            data: { name: 'Start', prompt: 'Greet the caller.' },
          },
          { id: '2', type: 'trigger', position: { x: 0, y: 100 }, data: { name: 'API', trigger_path: triggerPath } },
        ],
        edges: [],
      },
      workflow_configurations: configurations,
    },
  })
  expect(response.status, response.text).toBe(200)
  return { id: response.body.id, triggerPath }
}

/** The organization's default configuration for a carrier, with one active caller id (and inbound agent, if given). */
export async function createCarrierLine(
  t: TestApp,
  config: Record<string, unknown>,
  options: { number?: string; inboundWorkflowId?: number } = {},
): Promise<{ configurationId: number; numberId: number }> {
  const configuration = await createConfiguration(t, `${String(config.provider)} line`, config, {
    isDefaultOutbound: true,
  })
  const number = await addPhoneNumber(t, configuration.id, {
    address: options.number ?? '+14155550100',
    ...(options.inboundWorkflowId ? { inbound_workflow_id: options.inboundWorkflowId } : {}),
  })
  return { configurationId: configuration.id, numberId: number.id }
}

export const triggerCall = (t: TestApp, agent: CarrierAgent, phoneNumber: string) =>
  t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, { body: { phone_number: phoneNumber } })

export type RunRow = {
  id: number
  state: string
  call_type: string
  call_id: string | null
  provider_call_id: string | null
  disposition: string | null
  call_duration_seconds: number | null
  initial_context: Record<string, any>
  gathered_context: Record<string, any>
  logs: Record<string, any>
}

export function runRow(t: TestApp, runId: number): RunRow {
  const row = t.ctx.sqlite
    .query<any, [number]>(
      `SELECT id, state, call_type, call_id, provider_call_id, disposition, call_duration_seconds, initial_context, gathered_context, logs
       FROM workflow_runs WHERE id = ?`,
    )
    .get(runId)
  return {
    ...row,
    initial_context: JSON.parse(row.initial_context),
    gathered_context: JSON.parse(row.gathered_context),
    logs: JSON.parse(row.logs),
  }
}

export const latestRunId = (t: TestApp) =>
  t.ctx.sqlite.query<{ id: number }, []>('SELECT max(id) AS id FROM workflow_runs').get()!.id

export async function untilRunCompleted(t: TestApp, runId: number): Promise<RunRow> {
  await waitFor(`run ${runId} completed`, () => runRow(t, runId).state === 'completed', 5_000)
  return runRow(t, runId)
}

/** The statuses logged in `logs.telephony_status_callbacks`, in order. */
export const loggedStatuses = (row: RunRow) =>
  (row.logs.telephony_status_callbacks ?? []).map((entry: { status: string }) => entry.status)

/** Places a call through the agent's API trigger; fails the test unless it was accepted. Returns its run id. */
export async function placeCarrierCall(t: TestApp, agent: CarrierAgent, to = '+14155550123'): Promise<number> {
  const response = await triggerCall(t, agent, to)
  expect(response.status, response.text).toBe(200)
  return response.body.workflow_run_id as number
}

export type CarrierTest<F> = {
  t: CarrierTestApp
  fake: F
  agent: CarrierAgent
  streams: AnsweredCall[]
  configurationId: number
}

/**
 * A served test app with a carrier's fake (started by `start`, which also points the carrier's API at it), an agent,
 * the organization's default line on that carrier, models that let it dial (never asked), and every answered call's
 * stream collected.
 */
export async function startCarrierTest<F>(
  start: (t: CarrierTestApp) => { fake: F; config: Record<string, unknown>; number?: string },
): Promise<CarrierTest<F>> {
  const t = createCarrierTestApp()
  const { fake, config, number } = start(t)
  const streams: AnsweredCall[] = []
  t.ctx.telephony.onAnswered(async (call) => {
    streams.push(call)
  })
  const agent = await createCarrierAgent(t)
  const { configurationId } = await createCarrierLine(t, config, { number })
  await configureModelsNeverAsked(t)
  return { t, fake, agent, streams, configurationId }
}

/** Lets the fake finish what it is playing, then stops it and the app. */
export async function stopCarrierTest(t: CarrierTestApp, fake: FakeServer & { idle?(): Promise<void> }): Promise<void> {
  await fake.idle?.()
  fake.stop()
  t.stopServer()
  t.close()
}

/**
 * A served test app on the real clock whose carrier calls run the voice conversation against fake model servers (STT,
 * LLM, TTS), configured as the organization's models.
 */
export async function startCarrierVoiceApp(
  pipeline: VoiceConversationOptions['pipeline'],
): Promise<{ t: CarrierTestApp; models: FakeModels }> {
  const t = createCarrierTestApp({ clock: systemClock })
  const models = startFakeModels()
  const conversations = createVoiceConversations(t.ctx, { attempts: contactAttempts, pipeline })
  t.ctx.telephony.onAnswered((call) => conversations.onAnswered(call))
  await configureFakeVoiceModels(t, models)
  return { t, models }
}

/** Stops what startCarrierVoiceApp started, and the carrier's fake when one was started. */
export function stopCarrierVoiceApp(app: { t: CarrierTestApp; models: FakeModels }, fake?: { stop(): void }): void {
  fake?.stop()
  app.models.stop()
  app.t.stopServer()
  app.t.close()
}
