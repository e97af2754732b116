import { expect } from 'bun:test'
import { createCampaignScheduler, type CampaignScheduler } from '../../src/campaigns/scheduler'
import type { manualClock } from '../../src/lib/clock'
import type { CallOutcome, DialRequest, TelephonyProvider } from '../../src/telephony/provider'
import { DialError } from '../../src/telephony/provider'
import { createAgent as createAgentBody, sampleDefinition } from './agents'
import type { TestApp } from './app'
import { createConfiguration } from './telephony'

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
  /** Ends a held call. */
  end(callId: string, outcome: CallOutcome, durationMs?: number): void
  alive: Set<string>
}

/** A provider registered as `ari` that answers every dial by `script`, reporting through ctx.telephony like a real one. */
export function scriptedTelephony(t: TestApp, script: (request: DialRequest) => ScriptedAnswer): ScriptedTelephony {
  const dials: DialRequest[] = []
  const alive = new Set<string>()
  const end = (callId: string, outcome: CallOutcome, durationMs = 0) => {
    alive.delete(callId)
    const at = t.ctx.clock.now()
    t.ctx.telephony.report({
      kind: 'ended',
      callId,
      outcome,
      at,
      answeredAt: outcome === 'completed' ? at - durationMs : null,
    })
  }
  const provider: TelephonyProvider = {
    async dial(request) {
      dials.push(request)
      const answer = script(request)
      if (answer === 'refuse') throw new DialError('Allocation failed')
      if (answer === 'hold') {
        alive.add(request.callId)
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
  return { dials, end, alive }
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
