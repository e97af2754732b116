import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createCarrierLine, startCarrierVoiceApp } from '../../support/fake-carriers/calls'
import { type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTelnyx, type FakeTelnyx } from '../../support/fake-carriers/telnyx'
import { twilioCaller } from '../../support/fake-carriers/twilio'
import type { FakeModels } from '../../support/fake-models'
import { createRecording, lineToneWav } from '../../support/recordings'
import { waitFor } from '../../support/wait'

/**
 * A recorded greeting over a Telnyx media stream (RTP payloads in JSON, marks echoed as Twilio's are): the carrier
 * receives the recording's line audio as it is stored, as on Twilio's (twilio-recording.test.ts) and on ARI.
 */

let t: CarrierTestApp
let fake: FakeTelnyx
let models: FakeModels

beforeAll(async () => {
  ;({ t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100 }))
})
afterAll(() => {
  fake?.stop()
  models.stop()
  t.stopServer()
  t.close()
})

test('an audio greeting reaches the Telnyx stream byte for byte, with no speech synthesised', async () => {
  const wav = lineToneWav(1000, 500)
  expect((await createRecording(t, 'welcome', wav, { transcript: 'Welcome to Acme.' })).status).toBe(200)
  let heard = new Uint8Array(0)
  fake = startFakeTelnyx({
    reach: t.reach,
    now: () => t.ctx.clock.now(),
    plan: () => ({
      outcome: 'answered',
      talk: async (media) => {
        const caller = twilioCaller(media)
        await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
        const payloads = media.texts
          .filter((message) => message?.event === 'media')
          .map((message) => Buffer.from(message.media.payload, 'base64'))
        heard = new Uint8Array(Buffer.concat(payloads))
        caller.stop()
      },
    }),
  })
  t.ctx.providerApis.telnyx = fake.baseUrl
  await createCarrierLine(t, {
    provider: 'telnyx',
    api_key: fake.apiKey,
    connection_id: 'conn-42',
    webhook_public_key: fake.publicKey,
  })
  const triggerPath = crypto.randomUUID()
  const agent = (
    await t.request('POST', '/api/v1/workflow/create/definition', {
      body: {
        name: 'Ava',
        workflow_definition: {
          nodes: [
            {
              id: '1',
              type: 'startCall',
              position: { x: 0, y: 0 },
              data: {
                name: 'Start',
                greeting_type: 'audio',
                greeting_recording_id: 'welcome',
                prompt: 'Help the caller.',
              },
            },
            { id: '3', type: 'trigger', position: { x: 0, y: 200 }, data: { name: 'API', trigger_path: triggerPath } },
          ],
          edges: [],
        },
      },
    })
  ).body
  const started = await t.request('POST', `/api/v1/public/agent/${triggerPath}`, {
    body: { phone_number: '+14155550123' },
  })
  expect(started.status, started.text).toBe(200)
  const runId = started.body.workflow_run_id
  const detail = async () => (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${runId}`)).body
  await waitFor(
    'run completed and its conversation written',
    async () => {
      const run = await detail()
      return run.is_completed && run.transcript_url !== null && run.logs.voice !== undefined
    },
    30_000,
  )
  const expected = new Uint8Array(wav.subarray(44))
  expect(heard.subarray(0, expected.length)).toEqual(expected)
  expect(models.requestsTo('/audio/speech')).toEqual([])
  expect(
    (await detail()).logs.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]),
  ).toEqual([['agent', 'Welcome to Acme.']])
}, 40_000)
