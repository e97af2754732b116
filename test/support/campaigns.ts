import { expect } from 'bun:test'
import { createCampaignScheduler, type CampaignScheduler } from '../../src/campaigns/scheduler'
import type { manualClock } from '../../src/lib/clock'
import type { CallOutcome, DialRequest, TelephonyProvider } from '../../src/telephony/provider'
import { DialError } from '../../src/telephony/provider'
import { createAgent as createAgentBody, sampleDefinition } from './agents'
import type { TestApp } from './app'
import { createConfiguration } from './telephony'
import { configureModelsNeverAsked } from './voice-models'

/** An agent whose start prompt uses the given template variables; returns its id. */
export async function createAgent(
  t: TestApp,
  options: { name?: string; variables?: string[]; key?: string } = {},
): Promise<number> {
  const prompt = `Greet the caller. ${(options.variables ?? []).map((name) => `{{${name}}}`).join(' ')}`
  return (
    await createAgentBody(
      t,
      options.name ?? 'Sales agent',
      options.key,
      sampleDefinition({ prompt, triggerPath: null }),
    )
  ).id
}

/** The default ARI configuration of the organization (saving it calls nothing); returns its id. */
export async function createAriConfiguration(t: TestApp, options: { key?: string } = {}): Promise<number> {
  const config = {
    provider: 'ari',
    ari_endpoint: 'http://127.0.0.1:9/ari',
    app_name: 'ringbase',
    app_password: 'pbx-secret',
  }
  return (await createConfiguration(t, 'PBX', config, { key: options.key, isDefaultOutbound: true })).id
}

/** A campaign calling `csv` with a new agent, the default ARI configuration and models, created and started. */
export async function startedCampaign(t: TestApp, settings: Record<string, unknown>, csv: string): Promise<number> {
  const workflowId = await createAgent(t)
  await createAriConfiguration(t)
  await configureModelsNeverAsked(t)
  const sourceId = await uploadCsv(t, csv)
  const created = await t.request('POST', '/api/v1/campaign/create', {
    body: { name: 'Started', source_type: 'csv', workflow_id: workflowId, source_id: sourceId, ...settings },
  })
  expect(created.status, created.text).toBe(200)
  expect((await t.request('POST', `/api/v1/campaign/${created.body.id}/start`)).status).toBe(200)
  return created.body.id
}

/** Uploads a CSV through the signed-URL flow; returns its file_key. */
export async function uploadCsv(
  t: TestApp,
  csv: string,
  options: { key?: string; fileName?: string } = {},
): Promise<string> {
  const bytes = new TextEncoder().encode(csv)
  const grant = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
    key: options.key,
    body: { file_name: options.fileName ?? 'contacts.csv', file_size: bytes.byteLength, content_type: 'text/csv' },
  })
  expect(grant.status).toBe(200)
  const put = await t.app.handle(
    new Request(grant.body.upload_url.replace(/^https?:\/\/[^/]+/, 'http://localhost'), {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'text/csv' },
    }),
  )
  expect(put.status).toBe(200)
  return grant.body.file_key
}

export const csvOf = (header: string[], rows: string[][]) =>
  [header, ...rows].map((row) => row.join(',')).join('\n') + '\n'

/** What the scripted provider does with one dial: report an outcome at once, refuse it, or keep the call up. */
export type ScriptedAnswer = CallOutcome | 'refuse' | 'hold'

export type ScriptedTelephony = {
  dials: DialRequest[]
  /** Which of the apps placed each dial (its index), in dial order. */
  dialledBy: number[]
  /** Ends a held call. */
  end(callId: string, outcome: CallOutcome, durationMs?: number): void
  alive: Set<string>
  /** The most calls up at once so far. */
  mostAlive(): number
}

/**
 * A provider registered as `ari` that answers every dial by `script`, reporting through ctx.telephony like a real one.
 * Several apps (instances on one data dir) share it as one PBX: it counts their calls together, and a call's reports
 * go to the instance that placed it.
 */
export function scriptedTelephony(
  apps: TestApp | TestApp[],
  script: (request: DialRequest, instance: number) => ScriptedAnswer,
): ScriptedTelephony {
  const dials: DialRequest[] = []
  const dialledBy: number[] = []
  const alive = new Set<string>()
  const placedBy = new Map<string, TestApp>()
  let mostAlive = 0
  const end = (callId: string, outcome: CallOutcome, durationMs = 0) => {
    alive.delete(callId)
    const { ctx } = placedBy.get(callId)!
    const at = ctx.clock.now()
    ctx.telephony.report({
      kind: 'ended',
      callId,
      outcome,
      at,
      answeredAt: outcome === 'completed' ? at - durationMs : null,
    })
  }
  ;[apps].flat().forEach((t, instance) => {
    const provider: TelephonyProvider = {
      async dial(request) {
        dials.push(request)
        dialledBy.push(instance)
        placedBy.set(request.callId, t)
        const answer = script(request, instance)
        if (answer === 'refuse') throw new DialError('Allocation failed')
        if (answer === 'hold') {
          alive.add(request.callId)
          mostAlive = Math.max(mostAlive, alive.size)
          return
        }
        end(request.callId, answer, 30_000)
      },
      async hangup(_configurationId, callId) {
        if (alive.has(callId)) end(callId, 'completed')
      },
      async callState(_configurationId, callId) {
        return alive.has(callId) ? 'alive' : 'gone'
      },
    }
    t.ctx.telephony.register('ari', provider)
  })
  return { dials, dialledBy, end, alive, mostAlive: () => mostAlive }
}

type ManualScheduler = CampaignScheduler & {
  tickAndSettle(): Promise<void>
  /** `count` rounds of tickAndSettle, the test app's manual clock advanced `stepMs` after each. */
  tickEvery(stepMs: number, count: number): Promise<void>
}

/** A scheduler on the test app's context, ticked by hand; dials settle before tick() resolves. */
export function manualScheduler(t: TestApp): ManualScheduler {
  const scheduler = createCampaignScheduler(t.ctx)
  const clock = t.ctx.clock as ReturnType<typeof manualClock>
  const tickAndSettle = async () => {
    await scheduler.tick()
    await scheduler.stop()
  }
  return {
    ...scheduler,
    tickAndSettle,
    async tickEvery(stepMs, count) {
      for (let round = 0; round < count; round++) {
        await tickAndSettle()
        clock.advance(stepMs)
      }
    },
  }
}

/** Each contact of a campaign (`?`) with its state, attempts, runs and runs still open: a crash test's invariants. */
export const CONTACT_RUNS_SQL = `SELECT c.state, c.attempts,
    (SELECT count(*) FROM workflow_runs r WHERE r.campaign_contact_id = c.id) AS runs,
    (SELECT count(*) FROM workflow_runs r WHERE r.campaign_contact_id = c.id AND r.state <> 'completed') AS open_runs
  FROM campaign_contacts c WHERE c.campaign_id = ?`

export type ContactRuns = { state: string; attempts: number; runs: number; open_runs: number }

/** Every contact was settled once: done, no run left open, one run per attempt (never two dials for one run). */
export function expectEveryContactSettledOnce(contacts: ContactRuns[], count: number): void {
  expect(contacts).toHaveLength(count)
  for (const contact of contacts) {
    expect(contact.state).toBe('done')
    expect(contact.open_runs).toBe(0)
    expect(contact.runs).toBe(contact.attempts)
  }
}
