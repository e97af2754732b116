import { describe, expect } from 'bun:test'
import type { Locator, Page } from 'playwright-core'
import { createAgent, sampleDefinition } from '../support/agents'
import {
  type ConsoleBrowser,
  consoleOnBinarySuite,
  hostile,
  leavingAsksAndStays,
  leavingDoesNotAsk,
} from '../support/console-browser'
import type { FakeModels } from '../support/fake-models'
import type { HttpTestApp } from '../support/http-app'
import { createRecording, toneWav, uploadRecordingFile } from '../support/recordings'
import { waitFor } from '../support/wait'

/**
 * The Recordings page in a real browser against the compiled binary: files checked in the page, uploaded with
 * progress, transcribed by the (fake) speech to text, saved, refused in place, edited (id and transcript), deleted after a confirmation;
 * another organization's recordings never listed, hostile transcripts shown as text. Photographed into
 * test-artifacts/console/recordings/.
 */

let t: HttpTestApp
let models: FakeModels
let consoleBrowser: ConsoleBrowser
let page: Page
/** The paths of the upload-url requests the page sends. */
const uploadUrlRequests: string[] = []

const { inspect, step, go } = consoleOnBinarySuite('recordings', (started) => {
  ;({ t, models, consoleBrowser, page } = started)
  page.on('request', (request) => {
    if (request.url().includes('/workflow-recordings/upload-url')) uploadUrlRequests.push(request.url())
  })
})

const FILES = '#recording-files'
const wavFile = (name: string, durationMs = 800) => ({
  name,
  mimeType: 'audio/wav',
  buffer: Buffer.from(toneWav(1000, 16_000, durationMs)),
})

/** The fieldset of a file being added, by its name. */
const draftOf = (fileName: string): Locator => page.getByRole('group', { name: fileName })

async function listedIds(key?: string): Promise<string[]> {
  const list = await t.request('GET', '/api/v1/workflow-recordings/', { key })
  expect(list.status).toBe(200)
  return list.body.recordings.map((recording: { recording_id: string }) => recording.recording_id)
}

/** Waits until the draft's upload is complete, and returns its progress bar's value. */
async function uploaded(fileName: string): Promise<number> {
  await draftOf(fileName).getByRole('status').filter({ hasText: 'Uploaded.' }).waitFor()
  return Number(await draftOf(fileName).getByRole('progressbar').getAttribute('value'))
}

const rowOf = (recordingId: string) =>
  page.getByRole('row').filter({ has: page.getByRole('cell', { name: recordingId, exact: true }) })

describe('the Recordings page', () => {
  step("empty: says what a recording is for; another organization's recordings are not listed", async () => {
    const other = t.newOrg('other')
    expect((await createRecording(t, 'theirs', toneWav(500, 16_000, 300), { key: other.key })).status).toBe(200)
    await go('/recordings', 'Recordings')
    const nav = await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()
    expect(nav.indexOf('Recordings')).toBe(nav.indexOf('Knowledge') + 1)
    await page.getByText('No recording yet.').waitFor()
    expect(await page.locator('.empty').textContent()).toContain('greeting_recording_id')
    expect(await page.getByText('theirs').count()).toBe(0)
  })

  step('a file of another type and one over 5 MiB are stopped in the page, before any upload', async () => {
    await page.setInputFiles(FILES, [
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') },
      { name: 'long.wav', mimeType: 'audio/wav', buffer: Buffer.alloc(6 * 1024 * 1024) },
    ])
    const refusal = page.getByRole('alert').filter({ hasText: 'Not uploaded' })
    await refusal.waitFor()
    expect(await refusal.textContent()).toContain('notes.txt: not a WAV or MP3 file (text/plain)')
    expect(await refusal.textContent()).toContain('long.wav: 6.0 MiB is over the 5 MiB')
    expect(uploadUrlRequests).toEqual([])
    expect(await page.getByRole('group').count()).toBe(0)
  })

  step('a WAV: uploaded with progress, played from the browser, transcribed, saved and listed', async () => {
    models.transcription.queue({ text: 'Welcome to Acme, how can I help?' })
    await page.setInputFiles(FILES, [wavFile('welcome.wav')])
    expect(await uploaded('welcome.wav')).toBe(1)
    expect(uploadUrlRequests.length).toBe(1)
    const draft = draftOf('welcome.wav')
    const idField = draft.getByLabel('Recording id of welcome.wav')
    expect(await idField.inputValue()).toMatch(/^[a-z0-9]{8}$/)
    // the player holds the browser's own copy of the file, under the page's CSP
    const duration = await draft.locator('audio').evaluate(async (audio: any) => {
      if (audio.readyState < 1) await new Promise((resolve) => audio.addEventListener('loadedmetadata', resolve))
      return { src: audio.src, seconds: audio.duration }
    })
    expect(duration.src).toStartWith('blob:')
    expect(Math.abs(duration.seconds - 0.8)).toBeLessThan(0.05)
    await idField.fill('welcome')
    await draft.getByRole('button', { name: 'Transcribe' }).click()
    const transcript = draft.getByLabel('Transcript of welcome.wav')
    await waitFor('the transcript', async () => (await transcript.inputValue()) !== '', 10_000, 50)
    expect(await transcript.inputValue()).toBe('Welcome to Acme, how can I help?')
    expect(models.requestsTo('/audio/transcriptions').length).toBe(1)
    await inspect('add-form')
    // uploaded, not saved yet: leaving asks first, and staying keeps the file, its name and its transcript
    await leavingAsksAndStays(page)
    expect(await idField.inputValue()).toBe('welcome')
    expect(await transcript.inputValue()).toBe('Welcome to Acme, how can I help?')
    await page.getByRole('button', { name: 'Save recording' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved: welcome.' }).waitFor()
    const row = rowOf('welcome')
    await row.waitFor()
    expect(await row.textContent()).toContain('Welcome to Acme, how can I help?')
    expect(await row.textContent()).toContain('0.8 s')
    expect(await row.textContent()).toContain('WAV, pcm16, 16 kHz, mono')
    expect(await listedIds()).toEqual(['welcome'])
    // the stored recording plays too, from the API's WAV of it
    const stored = await row.locator('audio').evaluate(async (audio: any) => {
      audio.preload = 'metadata'
      audio.load()
      await new Promise((resolve, reject) => {
        audio.addEventListener('loadedmetadata', resolve)
        audio.addEventListener('error', reject)
      })
      return audio.duration
    })
    expect(Math.abs(stored - 0.8)).toBeLessThan(0.05)
    // saved: leaving asks nothing
    await leavingDoesNotAsk(page)
    await go('/recordings', 'Recordings')
  })

  step("a file that is not audio: the API's reason next to it, nothing created", async () => {
    const garbage = Buffer.from(Array.from({ length: 4000 }, (_, index) => (index * 7919) % 251))
    // what the API says of these bytes, asked directly
    const storageKey = await uploadRecordingFile(t, new Uint8Array(garbage))
    const direct = await t.request('POST', '/api/v1/workflow-recordings/', {
      body: { recordings: [{ recording_id: 'direct', transcript: 'x', storage_key: storageKey }] },
    })
    expect(direct.status).toBe(422)
    const reason: string = direct.body.detail[0].msg
    // the page shows it as a person reads it: without Pydantic's prefix
    expect(reason).toStartWith('Value error, ')
    const shown = reason.slice('Value error, '.length)
    await page.setInputFiles(FILES, [{ name: 'noise.wav', mimeType: 'audio/wav', buffer: garbage }])
    await uploaded('noise.wav')
    await draftOf('noise.wav').getByLabel('Transcript of noise.wav').fill('Static')
    await page.getByRole('button', { name: 'Save recording' }).click()
    const refused = draftOf('noise.wav').getByRole('alert')
    await refused.waitFor()
    expect(await refused.textContent()).toBe(`This file was refused: ${shown}`)
    expect(await listedIds()).toEqual(['welcome'])
    await inspect('file-refused')
    await page.getByRole('button', { name: 'Remove noise.wav' }).click()
    expect(await page.getByRole('group').count()).toBe(0)
  })

  step('a taken recording_id: the 409 next to its field; another name saves', async () => {
    await page.setInputFiles(FILES, [wavFile('second.wav', 500)])
    await uploaded('second.wav')
    const draft = draftOf('second.wav')
    const idField = draft.getByLabel('Recording id of second.wav')
    await idField.fill('welcome')
    await draft.getByLabel('Transcript of second.wav').fill('Goodbye.')
    await page.getByRole('button', { name: 'Save recording' }).click()
    await draft.getByText("'welcome' is already used in this organization: choose another name").waitFor()
    expect(await idField.getAttribute('aria-invalid')).toBe('true')
    expect(await listedIds()).toEqual(['welcome'])
    await idField.fill('goodbye')
    await page.getByRole('button', { name: 'Save recording' }).click()
    await rowOf('goodbye').waitFor()
    expect(await listedIds()).toEqual(['goodbye', 'welcome'])
    await inspect('list')
  })

  step(
    "edit a recording: a new id and transcript; a name against the API's rule is refused next to the field",
    async () => {
      // opened, nothing changed: leaving asks nothing
      await page.getByRole('button', { name: 'Edit goodbye' }).click()
      await page.getByRole('heading', { name: 'Edit goodbye' }).waitFor()
      await leavingDoesNotAsk(page)
      await go('/recordings', 'Recordings')
      await page.getByRole('button', { name: 'Edit goodbye' }).click()
      const field = page.getByLabel('Recording id', { exact: true })
      await field.fill('bad name!')
      await page.getByRole('button', { name: 'Save', exact: true }).click()
      expect(await field.getAttribute('aria-invalid')).toBe('true')
      await field.fill('farewell')
      await page.getByLabel('Transcript', { exact: true }).fill('Goodbye, and thank you for calling.')
      await leavingAsksAndStays(page)
      expect(await field.inputValue()).toBe('farewell')
      await page.getByRole('button', { name: 'Save', exact: true }).click()
      await rowOf('farewell').waitFor()
      expect(await rowOf('farewell').textContent()).toContain('Goodbye, and thank you for calling.')
      expect(await listedIds()).toEqual(['farewell', 'welcome'])
      const stored = (await t.request('GET', '/api/v1/workflow-recordings/')).body.recordings
      expect(
        stored.find((recording: { recording_id: string }) => recording.recording_id === 'farewell').transcript,
      ).toBe('Goodbye, and thank you for calling.')
    },
  )

  step("delete: confirmed in the page; refused with the API's reason while an agent names it", async () => {
    const definition = sampleDefinition()
    Object.assign(definition.nodes[0].data, { greeting_type: 'audio', greeting_recording_id: 'welcome' })
    await createAgent(t, 'Greeter', undefined, definition)
    await page.getByRole('button', { name: 'Delete welcome' }).click()
    await page.getByRole('button', { name: 'Delete welcome for good' }).click()
    const refusal = page.getByRole('alert').filter({ hasText: "Recording 'welcome' cannot be deleted" })
    await refusal.waitFor()
    expect(await refusal.textContent()).toContain("agent 'Greeter'")
    expect(await listedIds()).toEqual(['farewell', 'welcome'])
    // its words may still change: the agent names its id
    await page.getByRole('button', { name: 'Edit welcome' }).click()
    await page.getByLabel('Transcript', { exact: true }).fill('Welcome to Acme.')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await rowOf('welcome').filter({ hasText: 'Welcome to Acme.' }).waitFor()

    await page.getByRole('button', { name: 'Delete farewell' }).click()
    // asked first: "Keep it" leaves it
    await page.getByRole('button', { name: 'Keep it' }).click()
    expect(await listedIds()).toEqual(['farewell', 'welcome'])
    await page.getByRole('button', { name: 'Delete farewell' }).click()
    await page.getByRole('button', { name: 'Delete farewell for good' }).click()
    await rowOf('farewell').waitFor({ state: 'detached' })
    expect(await listedIds()).toEqual(['welcome'])
    expect(consoleBrowser.dialogs).toEqual([])
  })

  step("a hostile transcript is shown as text; another organization's recording is still not listed", async () => {
    expect(
      (await createRecording(t, 'hostile', toneWav(700, 16_000, 300), { transcript: hostile('transcript') })).status,
    ).toBe(200)
    await page.reload()
    const row = rowOf('hostile')
    await row.waitFor()
    expect(await row.textContent()).toContain(hostile('transcript'))
    expect(await page.evaluate('window.__xss')).toBeUndefined()
    expect(consoleBrowser.xssRan).toEqual([])
    expect(await page.getByRole('cell', { name: 'theirs' }).count()).toBe(0)
    expect(await listedIds()).toEqual(['hostile', 'welcome'])
    expect(consoleBrowser.cspViolations).toEqual([])
  })

  step('no speech to text configured: Transcribe says so and links to the Models page', async () => {
    const connections = await t.request('GET', '/api/v1/organizations/provider-connections')
    expect(connections.status, connections.text).toBe(200)
    const [connection] = connections.body.connections
    const deaf = await t.request('POST', '/api/v1/organizations/model-configurations', {
      body: {
        name: 'No ears',
        is_default: true,
        llm: { provider_connection_uuid: connection.uuid, settings: { model: 'fake-llm' } },
      },
    })
    expect(deaf.status, deaf.text).toBe(200)
    await page.setInputFiles(FILES, [wavFile('quiet.wav', 300)])
    await uploaded('quiet.wav')
    await draftOf('quiet.wav').getByRole('button', { name: 'Transcribe' }).click()
    const refusal = draftOf('quiet.wav').getByRole('alert')
    await refusal.waitFor()
    expect(await refusal.textContent()).toStartWith('No speech to text is configured')
    expect(
      await refusal.getByRole('link', { name: 'Set up speech to text on the Models page' }).getAttribute('href'),
    ).toBe('#/models')
    expect(await draftOf('quiet.wav').getByLabel('Transcript of quiet.wav').inputValue()).toBe('')
  })
})
