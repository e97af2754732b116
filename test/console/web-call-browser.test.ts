import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeWav } from '../../src/lib/wav'
import { resample } from '../../src/lib/resample'
import { buildBinary, consoleSteps, launchConsoleBrowser, type ConsoleBrowser } from '../support/console-browser'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'
import { startBinaryTestApp, type HttpTestApp } from '../support/http-app'
import { callerSpeech, concatPcm, silence8k } from '../support/voice'
import { createVoiceAgent, GREETING, untilWritten, type VoiceAgent } from '../support/voice-calls'
import { configureFakeVoiceModels } from '../support/voice-models'
import { waitFor } from '../support/wait'

/**
 * A web call in a real browser against the compiled binary, under the console's Content-Security-Policy: Chromium's
 * fake microphone plays a WAV of a caller's words (the built-in voice, written here), the fake model server hears them
 * (the fake STT answers with their text) and answers (fake LLM, fake TTS), the page shows both lines and plays the
 * agent's audio. The page is photographed into test-artifacts/console/.
 */

const WORDS = 'I would like a table for two tonight.'
const ANSWER = 'Of course. Which time suits you?'

let workDir: string
let build: { binary: string; remove: () => void }
let t: HttpTestApp
let models: FakeModels
let chromium: ConsoleBrowser
let base: string
let agent: VoiceAgent

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'ringbase-webcall-'))
  build = buildBinary()
  // the caller: a pause, the words, a long pause (the fake microphone loops the file)
  const speech = concatPcm([silence8k(1500), await callerSpeech(WORDS), silence8k(4000)])
  const wav = join(workDir, 'caller.wav')
  writeFileSync(wav, encodeWav(resample(speech, 8000, 16000), 16000))

  models = startFakeModels()
  models.transcription.queue({ text: WORDS })
  models.transcription.handler = () => ({ text: '' })
  models.chat.queue(say(ANSWER))
  t = await startBinaryTestApp(build.binary, { waitForLogLines: false })
  base = await t.httpUrl()
  await configureFakeVoiceModels(t, models)
  agent = await createVoiceAgent(t)

  chromium = await launchConsoleBrowser('web-call', [
    '--use-fake-ui-for-media-stream',
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-audio-capture=${wav}`,
    '--autoplay-policy=no-user-gesture-required',
  ])
}, 240_000)

const { inspect } = consoleSteps(
  () => chromium,
  () => base,
)

afterAll(async () => {
  await chromium?.browser.close()
  await t?.close()
  models?.stop()
  build?.remove()
  rmSync(workDir, { recursive: true, force: true })
})

test('a web call: the WAV’s words reach the transcript, the reply is heard in the page, the run is recorded', async () => {
  const { page, cspViolations } = chromium
  await page.goto(`${base}/`)
  await page.getByLabel('API key').fill(t.adminKey)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()

  await page.goto(`${base}/#/call/${agent.id}`)
  // the page names the agent it calls
  const { name } = (await t.request('GET', `/api/v1/workflow/fetch/${agent.id}`)).body
  await page.getByRole('heading', { level: 1, name: `Web call with ${name}` }).waitFor()
  await page.getByRole('button', { name: 'Start web call' }).click()
  const transcript = page.getByRole('list', { name: 'Live transcript' })
  await transcript.locator('li[data-role="agent"]', { hasText: GREETING }).waitFor({ timeout: 20_000 })
  await transcript.locator('li[data-role="user"]', { hasText: WORDS }).waitFor({ timeout: 30_000 })
  await transcript.locator('li[data-role="agent"]', { hasText: ANSWER }).waitFor({ timeout: 20_000 })
  const audio = page.getByTestId('agent-audio')
  // the reply's audio (fake TTS: 20 ms per character) was received and played, after the greeting's
  const replySamples = ((GREETING.length + ANSWER.length) * 0.02 * 16000) | 0
  await waitFor(
    'the reply played in the page',
    async () => Number(await audio.getAttribute('data-played-samples')) > replySamples * 0.9,
    20_000,
  )
  expect(Number(await audio.getAttribute('data-frames'))).toBeGreaterThan(0)
  expect(Number(await page.getByLabel('Microphone level').getAttribute('data-level'))).toBeGreaterThanOrEqual(0)
  // "Call my phone" is set apart from the transcript above it, a phone number's width
  const transcriptBox = (await transcript.boundingBox())!
  const phoneBox = (await page.getByLabel('Your phone number').boundingBox())!
  const phoneLabelBox = (await page.getByText('Your phone number', { exact: true }).boundingBox())!
  expect(phoneLabelBox.y - (transcriptBox.y + transcriptBox.height)).toBeGreaterThanOrEqual(16)
  expect(phoneBox.width).toBeLessThanOrEqual(320)
  await inspect('web-call')
  // "Call my phone" reaches the public trigger's test route (whatever the telephony then says)
  await page.getByLabel('Your phone number').fill('+15550100')
  const [trigger] = await Promise.all([
    page.waitForRequest((request) => request.url().includes('/api/v1/public/agent/test/workflow/')),
    page.getByRole('button', { name: 'Call my phone' }).click(),
  ])
  expect(JSON.parse(trigger.postData()!)).toEqual({ phone_number: '+15550100' })

  await page.getByRole('button', { name: 'End call' }).click()
  await page.getByRole('link', { name: 'Open the run' }).waitFor()
  const runId = Number((await page.getByRole('link', { name: 'Open the run' }).getAttribute('href'))!.split('/').pop())
  const run = await untilWritten(t, agent, runId)
  expect(run.mode).toBe('webcall')
  expect(run.recording_url).toBeString()
  const turns = run.logs.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text])
  expect(turns.slice(0, 3)).toEqual([
    ['agent', GREETING],
    ['user', WORDS],
    ['agent', ANSWER],
  ])
  expect(models.requestsTo('/audio/transcriptions').length).toBeGreaterThan(0)
  expect(cspViolations).toEqual([])
}, 120_000)
