import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ulawToPcm16 } from '../src/voice/g711'
import { rms } from './support/audio'
import { startFakeAri, type FakeAri } from './support/fake-ari'
import { say, startFakeModels, type FakeModels } from './support/fake-models'
import { startBinaryTestApp, type HttpTestApp } from './support/http-app'
import { createConfiguration } from './support/telephony'
import { callerSpeech } from './support/voice'
import { createVoiceAgent, GREETING, marksProcessed, placeCall, turnsOf, untilWritten } from './support/voice-calls'
import { configureFakeVoiceModels } from './support/voice-models'
import { waitFor } from './support/wait'

/**
 * The voice path as it ships: the compiled binary places a call through the fake Asterisk and talks on its media leg.
 * Its greeting and answer are spoken by the built-in voice (Flite's WASM in worker threads, an entry point of its own
 * in the build), and the caller's speech is found by the WebRTC VAD (fvad's WASM), both embedded in the executable.
 */

let buildDir: string
let t: HttpTestApp
let fake: FakeAri
let models: FakeModels

beforeAll(async () => {
  buildDir = mkdtempSync(join(tmpdir(), 'ringbase-build-'))
  const binary = join(buildDir, 'ringbase')
  const build = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', 'scripts', 'build.ts'), binary], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
  models = startFakeModels()
  fake = await startFakeAri()
  // Polling a run must not wait for each request's log line (that rereads the whole output).
  t = await startBinaryTestApp(binary, { waitForLogLines: false })
  await configureFakeVoiceModels(t, models, { tts: 'builtin' })
  await createConfiguration(
    t,
    'pbx',
    {
      provider: 'ari',
      ari_endpoint: fake.url,
      app_name: 'ariuser',
      app_password: 'aripass',
      allow_raw_dial_strings: true,
    },
    { isDefaultOutbound: true },
  )
  await waitFor(
    'ARI connected',
    async () => (await t.request('GET', '/api/v1/health')).body.ari.connected === 1,
    10_000,
  )
}, 120_000)

afterAll(async () => {
  await t?.close()
  await fake?.close()
  models?.stop()
  rmSync(buildDir, { recursive: true, force: true })
})

test('a call on the binary: the built-in voice speaks the greeting, the VAD hears the caller, the run keeps the transcript', async () => {
  const question = 'Can I book a table for two tonight?'
  models.transcription.queue({ text: question })
  models.chat.queue(say('Of course.'))
  const agent = await createVoiceAgent(t)
  const call = await placeCall(t, fake, agent)

  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 15_000)
  const greeting = ulawToPcm16(Uint8Array.from(call.media.played.flatMap((frame) => [...frame.ulaw])))
  // About 2 s of speech: the Flite worker ran and its audio reached the line (silence would be 0).
  expect(greeting.length).toBeGreaterThan(8000)
  expect(rms(greeting)).toBeGreaterThan(500)
  expect(models.requestsTo('/audio/speech')).toEqual([])

  call.media.speak(await callerSpeech(question))
  await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 20_000)
  // The VAD cut one utterance out of the caller's audio and the STT got it; the LLM got its text.
  const [transcription] = models.requestsTo('/audio/transcriptions')
  expect(transcription.audio?.format.sampleRate).toBe(16_000)
  expect(transcription.audio!.pcm.length).toBeGreaterThan(16_000)
  expect(models.requestsTo('/chat/completions')[0].body.messages.at(-1)).toEqual({ role: 'user', content: question })
  fake.hangup(call.callId)

  const run = await untilWritten(t, agent, call.runId)
  expect(turnsOf(run)).toEqual([
    ['agent', GREETING],
    ['user', question],
    ['agent', 'Of course.'],
  ])
  expect(run.logs.session.end_reason).toBe('user_hangup')
  expect(run.initial_context.runtime_configuration).toMatchObject({ tts_provider: 'builtin', tts_model: 'flite' })
}, 60_000)
