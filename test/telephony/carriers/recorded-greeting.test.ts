import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  createCarrierLine,
  placeCarrierCall,
  startCarrierVoiceApp,
  stopCarrierVoiceApp,
} from '../../support/fake-carriers/calls'
import type { CarrierTestApp, FakeServer, MediaClient } from '../../support/fake-carriers/shared'
import { startFakeTelnyx } from '../../support/fake-carriers/telnyx'
import { startFakeTwilio, twilioCaller } from '../../support/fake-carriers/twilio'
import type { FakeModels } from '../../support/fake-models'
import { createRecording, lineToneWav } from '../../support/recordings'
import { createVoiceAgent, turnsOf, untilWritten } from '../../support/voice-calls'
import { waitFor } from '../../support/wait'

/**
 * A recorded greeting over a carrier's media stream: the carrier receives the recording's line audio as it is stored,
 * with no speech synthesised, as on ARI (test/calls/recording-playback.test.ts). Twilio sends base64 µ-law; Telnyx RTP
 * payloads in the same JSON shape, with marks echoed as Twilio's are.
 */

type Talk = (media: MediaClient) => Promise<void>

/** Each carrier's fake, answering with `talk`, and the line configuration that dials through it. */
const CARRIERS: Record<string, (t: CarrierTestApp, talk: Talk) => { fake: FakeServer; line: Record<string, unknown> }> =
  {
    twilio(t, talk) {
      const fake = startFakeTwilio({ reach: t.reach, plan: () => ({ outcome: 'completed', durationSeconds: 2, talk }) })
      t.ctx.providerApis.twilio = fake.baseUrl
      return { fake, line: { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken } }
    },
    telnyx(t, talk) {
      const fake = startFakeTelnyx({
        reach: t.reach,
        now: () => t.ctx.clock.now(),
        plan: () => ({ outcome: 'answered', talk }),
      })
      t.ctx.providerApis.telnyx = fake.baseUrl
      const line = {
        provider: 'telnyx',
        api_key: fake.apiKey,
        connection_id: 'conn-42',
        webhook_public_key: fake.publicKey,
      }
      return { fake, line }
    },
  }

describe.each(Object.keys(CARRIERS))('an audio greeting over %s', (carrier) => {
  let t: CarrierTestApp
  let models: FakeModels
  let fake: FakeServer | undefined

  beforeAll(async () => {
    ;({ t, models } = await startCarrierVoiceApp({ tickIntervalMs: 20, mediaLossGraceMs: 100 }))
  })
  afterAll(() => {
    stopCarrierVoiceApp({ t, models }, fake)
  })

  test('reaches the stream byte for byte, with no speech synthesised', async () => {
    const wav = lineToneWav(1000, 500)
    expect((await createRecording(t, 'welcome', wav, { transcript: 'Welcome to Acme.' })).status).toBe(200)
    let heard = new Uint8Array(0)
    const started = CARRIERS[carrier](t, async (media) => {
      const caller = twilioCaller(media)
      await waitFor('the greeting played', () => caller.marks() >= 1, 10_000)
      const payloads = media.texts
        .filter((message) => message?.event === 'media')
        .map((message) => Buffer.from(message.media.payload, 'base64'))
      heard = new Uint8Array(Buffer.concat(payloads))
      caller.stop()
    })
    fake = started.fake
    await createCarrierLine(t, started.line)
    const agent = await createVoiceAgent(t, {
      start: { greeting_type: 'audio', greeting_recording_id: 'welcome', prompt: 'Help the caller.' },
    })
    const run = await untilWritten(t, agent, await placeCarrierCall(t, agent), 30_000)

    const expected = new Uint8Array(wav.subarray(44))
    expect(heard.subarray(0, expected.length)).toEqual(expected)
    expect(models.requestsTo('/audio/speech')).toEqual([])
    expect(turnsOf(run)).toEqual([['agent', 'Welcome to Acme.']])
  }, 40_000)
})
