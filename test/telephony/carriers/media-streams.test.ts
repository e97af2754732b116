import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { callLinks } from '../../../src/telephony/carriers/carrier'
import type { AnsweredCall } from '../../../src/telephony/ari/call-session'
import {
  createCarrierAgent,
  createCarrierLine,
  runRow,
  triggerCall,
  untilRunCompleted,
} from '../../support/fake-carriers/calls'
import { connectMedia, createCarrierTestApp, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTwilio, type FakeTwilio } from '../../support/fake-carriers/twilio'
import { waitFor } from '../../support/wait'
import { configureModelsNeverAsked } from '../../support/voice-models'

/** Admission of carrier media streams (`/api/v1/telephony/ws/…`) and what ends with them. */

let t: CarrierTestApp
let fake: FakeTwilio
let runId: number
let streamUrl: string
let streams: AnsweredCall[]

beforeEach(async () => {
  t = createCarrierTestApp()
  fake = startFakeTwilio({ reach: t.reach })
  t.ctx.providerApis.twilio = fake.baseUrl
  streams = []
  t.ctx.telephony.onAnswered(async (call) => {
    streams.push(call)
  })
  const agent = await createCarrierAgent(t)
  await createCarrierLine(t, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
  await configureModelsNeverAsked(t)
  runId = (await triggerCall(t, agent, '+14155550123')).body.workflow_run_id
  const row = t.ctx.sqlite
    .query<{ workflow_id: number; organization_id: number }, [number]>(
      'SELECT workflow_id, organization_id FROM workflow_runs WHERE id = ?',
    )
    .get(runId)!
  streamUrl = t.reach(
    callLinks(t.ctx, { runId, agentId: row.workflow_id, organizationId: row.organization_id }).mediaStreamUrl,
  )
})
afterEach(() => {
  fake.stop()
  t.stopServer()
  t.close()
})

const closeCodeOf = async (url: string) => (await connectMedia(url).closed).code

describe('admission', () => {
  test('a wrong token → 4401, an unknown run → 4404, another agent → 4400, a malformed path → 4400', async () => {
    const [base, token] = [
      streamUrl.slice(0, streamUrl.lastIndexOf('/')),
      streamUrl.slice(streamUrl.lastIndexOf('/') + 1),
    ]
    expect(await closeCodeOf(`${base}/${'0'.repeat(64)}`)).toBe(4401)
    expect(await closeCodeOf(`${base.replace(/\/\d+$/, '/x')}/${token}`)).toBe(4400)
    const [, , workflowId, organizationId] = /\/ws\/(\d+)\/(\d+)\/(\d+)$/.exec(base)!.map(Number)
    const forRun = (wf: number, run: number) =>
      t.reach(callLinks(t.ctx, { runId: run, agentId: wf, organizationId }).mediaStreamUrl)
    expect(await closeCodeOf(forRun(workflowId, runId + 50))).toBe(4404)
    expect(await closeCodeOf(forRun(workflowId + 1, runId))).toBe(4400)
    expect(runRow(t, runId).state).toBe('initialized')
    expect(streams).toEqual([])
  })

  test('the first stream moves the run to running; a second one for the same run → 4409', async () => {
    const first = connectMedia(streamUrl)
    await first.opened
    await waitFor('admitted', () => streams.length === 1)
    expect(runRow(t, runId).state).toBe('running')
    expect(await closeCodeOf(streamUrl)).toBe(4409)
    first.close()
    await first.closed
  })

  test('the pipeline closing the stream hangs the call up at the carrier, whose final status ends the run', async () => {
    for (const call of fake.calls.values()) call.status = 'in-progress'
    const media = connectMedia(streamUrl)
    await media.opened
    media.send({ event: 'start', streamSid: 'MZ7', start: { streamSid: 'MZ7' } })
    await waitFor('admitted', () => streams.length === 1)
    streams[0].media.send(new Uint8Array(160).fill(0xff))
    await waitFor('agent audio on the wire', () => media.texts.some((message) => message.event === 'media'))
    expect(media.texts.find((message) => message.event === 'media')).toMatchObject({ streamSid: 'MZ7' })
    streams[0].media.close()
    expect((await media.closed).code).toBe(1000)
    await waitFor('hang-up sent to Twilio', () => fake.requests.some((request) => request.body.Status === 'completed'))
    const row = await untilRunCompleted(t, runId)
    expect(row).toMatchObject({ disposition: 'completed', call_duration_seconds: 3 })
    expect(row.logs.telephony.provider_status).toBe('completed')
  })
})
