import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { TestApp } from '../support/app'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import type { FakeAri } from '../support/fake-ari'
import type { FakeMediaChannel } from '../support/fake-ari-media'
import { say, type FakeModels } from '../support/fake-models'
import { createRecording, lineToneWav } from '../support/recordings'
import { callerSpeech } from '../support/voice'
import { createVoiceAgent, marksProcessed, placeCall, turnsOf, untilWritten } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Recordings heard on ARI calls: the caller receives the recording's stored line audio byte for byte (no TTS asked),
 * the transcript shows its transcript as the agent's turn, and a barge-in cuts a recording like speech.
 */

let t: TestApp
let fake: FakeAri
let models: FakeModels
let app: AriVoiceApp

/** The µ-law bytes a µ-law WAV of 8 kHz holds: exactly the line audio a recording made of it plays. */
const samplesOf = (wav: Uint8Array) => new Uint8Array(wav.subarray(44))
const WELCOME = lineToneWav(1000, 600)
const VIP = lineToneWav(600, 400)
const LONG_CLIP = lineToneWav(500, 8000)

beforeAll(async () => {
  app = await startAriVoiceApp({ allow_raw_dial_strings: true })
  ;({ t, fake, models } = app)
  for (const [id, wav, transcript] of [
    ['welcome', WELCOME, 'Welcome to Acme.'],
    ['vip', VIP, 'Hello, valued guest.'],
    ['hours', LONG_CLIP, 'We are open from nine to five every day.'],
  ] as const) {
    expect((await createRecording(t, id, wav, { transcript })).status).toBe(200)
  }
})
afterAll(() => app.stop())
beforeEach(() => {
  models.reset()
  models.transcription.handler = () => ({ text: '' })
})
afterEach(() => {
  for (const id of fake.liveChannelIds()) fake.hangup(id)
})

const speechInputs = () => models.requestsTo('/audio/speech').map((request) => request.body.input)
const heardBytes = (media: FakeMediaChannel) => {
  const frames = media.played.map(({ ulaw }) => ulaw)
  const bytes = new Uint8Array(frames.reduce((sum, frame) => sum + frame.length, 0))
  let at = 0
  for (const frame of frames) {
    bytes.set(frame, at)
    at += frame.length
  }
  return bytes
}

describe('recordings on ARI calls', () => {
  test("an audio greeting: the caller hears the recording's audio exactly, no speech is synthesised, the transcript shows it", async () => {
    const agent = await createVoiceAgent(t, { start: { greeting_type: 'audio', greeting_recording_id: 'welcome' } })
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    const expected = samplesOf(WELCOME)
    expect(heardBytes(call.media).subarray(0, expected.length)).toEqual(expected)
    expect(speechInputs()).toEqual([])
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    expect(turnsOf(run)).toEqual([['agent', 'Welcome to Acme.']])
  }, 30_000)

  test("a per-contact greeting_override (as a CSV row sets it) plays that contact's recording instead", async () => {
    const agent = await createVoiceAgent(t, { start: { greeting_type: 'audio', greeting_recording_id: 'welcome' } })
    const call = await placeCall(t, fake, agent, { greeting_override: { type: 'audio', recording_id: 'vip' } })
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    const expected = samplesOf(VIP)
    expect(heardBytes(call.media).subarray(0, expected.length)).toEqual(expected)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    expect(turnsOf(run)).toEqual([['agent', 'Hello, valued guest.']])
  }, 30_000)

  test('a clip the model chooses (RECORDING_ID: mode) is played, and a barge-in cuts it like speech', async () => {
    const agent = await createVoiceAgent(t, {
      start: {
        prompt:
          'Answer questions. For opening hours play RECORDING_ID: hours [We are open from nine to five every day.]',
      },
    })
    models.transcription.queue({ text: 'When are you open?' }, { text: 'Thanks, bye.' })
    models.chat.queue(say('● hours'), say('Goodbye.'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    const greetingBytes = heardBytes(call.media).length
    call.media.speak(await callerSpeech('When are you open?'))
    await waitFor('the clip started', () => heardBytes(call.media).length > greetingBytes + 8000, 10_000)
    expect(models.requestsTo('/chat/completions')[0].body.messages[0].content).toContain(
      '● and a space, then only its id',
    )
    call.media.speak(await callerSpeech('Thanks, bye.'))
    await waitFor('a flush', () => call.media.flushes.length === 1, 10_000)
    await waitFor('the answer to the barge-in', () => speechInputs().includes('Goodbye.'), 10_000)
    // Not all 8 s of the clip were played.
    expect(heardBytes(call.media).length - greetingBytes).toBeLessThan(samplesOf(LONG_CLIP).length)
    fake.hangup(call.callId)
    const run = await untilWritten(t, agent, call.runId)
    const clip = run.logs.transcript[2]
    expect(clip).toMatchObject({ role: 'agent', interrupted: true })
    expect(turnsOf(run).slice(3)).toEqual([
      ['user', 'Thanks, bye.'],
      ['agent', 'Goodbye.'],
    ])
  }, 40_000)
})
