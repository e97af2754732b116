import { afterAll, beforeAll, describe, expect } from 'bun:test'
import type { BrowserContext, Page } from 'playwright-core'
import { join } from 'node:path'
import {
  buildBinary,
  consoleSteps,
  hostile,
  launchConsoleBrowser,
  type ConsoleBrowser,
} from '../support/console-browser'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'
import { startBinaryTestApp, type HttpTestApp } from '../support/http-app'
import { createConfiguration } from '../support/telephony'
import { createVoiceAgent, placeCall, untilWritten, type VoiceAgent } from '../support/voice-calls'
import { configureFakeVoiceModels } from '../support/voice-models'
import { waitFor } from '../support/wait'

/**
 * The console in a real browser (Debian's chromium, driven by playwright-core) against the compiled binary, with the
 * fake Asterisk and the fake model server: what an admin does, under the page's real Content-Security-Policy. Every
 * page is checked with axe-core and photographed into test-artifacts/console/ for a person to look at.
 */

let build: { binary: string; remove: () => void }
let t: HttpTestApp
let fake: FakeAri
let models: FakeModels
let consoleBrowser: ConsoleBrowser
let context: BrowserContext
let page: Page
let base: string
let agent: VoiceAgent
let agentName: string
let voiceRunId: number
let xssRan: string[]
let cspViolations: string[]
let dialogs: string[]

beforeAll(async () => {
  build = buildBinary()
  models = startFakeModels()
  // the campaign's contacts (any endpoint but the traces' own) answer and stay on the line until hung up
  fake = await startFakeAri({ defaultScenario: 'answered-stays-up' })
  t = await startBinaryTestApp(build.binary, { waitForLogLines: false })
  base = await t.httpUrl()
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
  agent = await createVoiceAgent(t)
  agentName = `Agent ${hostile('agent-name')}`.slice(0, 250)
  expect((await t.request('PUT', `/api/v1/workflow/${agent.id}`, { body: { name: agentName } })).status).toBe(200)
  await waitFor(
    'ARI connected',
    async () => (await t.request('GET', '/api/v1/health')).body.ari.connected === 1,
    10_000,
  )
  consoleBrowser = await launchConsoleBrowser()
  ;({ context, page, xssRan, cspViolations, dialogs } = consoleBrowser)
}, 240_000)

afterAll(async () => {
  await consoleBrowser?.browser.close()
  await t?.close()
  await fake?.close()
  models?.stop()
  build?.remove()
})

const { inspect, step, go } = consoleSteps(
  () => consoleBrowser,
  () => base,
)

describe('the console', () => {
  step(
    'sign-in: a wrong key is refused next to the form; the key makes an HttpOnly session, never stored in the page',
    async () => {
      const response = await page.goto(`${base}/`)
      const csp = response!.headers()['content-security-policy']
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      await page.getByRole('heading', { name: 'Sign in to Ringbase' }).waitFor()
      // the detector works (and is emptied again)
      await page.evaluate("window.__xss = 'probe'")
      await waitFor('the probe reported', () => xssRan.includes('probe'))
      xssRan.length = 0
      await inspect('sign-in')
      await page.getByLabel('API key').fill('rb_not-a-key')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid or archived API key')
      await page.getByLabel('API key').fill(t.adminKey)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
      const [cookie] = await context.cookies()
      expect(cookie).toMatchObject({ name: 'ringbase_session', httpOnly: true, sameSite: 'Strict' })
      expect(cookie.value).not.toContain(t.adminKey)
      const stored = await page.evaluate<string>(
        'JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie',
      )
      expect(stored).not.toContain(t.adminKey)
      expect(stored).not.toContain(cookie.value)
      await inspect('overview-empty')
    },
    60_000,
  )

  step(
    'a live call appears on the overview with its agent and number, and leaves it when it ends',
    async () => {
      await go('/', 'Overview')
      await page.getByText('No call in progress.').waitFor()
      const call = await placeCall(t, fake, agent)
      voiceRunId = call.runId
      const row = page.locator(`tr[data-run-id="${call.runId}"]`)
      await row.waitFor()
      expect(await row.textContent()).toContain(agentName)
      expect(await row.textContent()).toContain('outbound')
      expect(await row.textContent()).toContain('Local/102@test')
      await page.locator(`tr[data-run-id="${call.runId}"]`, { hasText: 'talking' }).waitFor()
      await inspect('overview-live-call')
      fake.hangup(call.callId)
      await row.waitFor({ state: 'detached' })
      await untilWritten(t, agent, call.runId)
    },
    120_000,
  )

  step(
    "a run's page: the recording in a player with its two tracks, seekable from the transcript; downloads",
    async () => {
      await go('/runs', 'Runs')
      await page.locator(`a[href="#/runs/${agent.id}/${voiceRunId}"]`).click()
      await page.getByRole('heading', { name: 'Transcript' }).waitFor()
      expect(await page.locator('audio').getAttribute('src')).toMatch(/^\/api\/v1\/public\/download\//)
      await page.locator('.waveform svg').first().waitFor()
      expect(await page.locator('.waveform svg').count()).toBe(2)
      await page
        .getByRole('button', { name: /^Play from 0:0/ })
        .first()
        .click()
      expect(await page.getByRole('link', { name: 'Download the recording' }).count()).toBe(1)
      expect(await page.getByRole('link', { name: 'Download the transcript' }).count()).toBe(1)
      await inspect('run')
    },
    60_000,
  )

  step(
    "a conversation's transcript: what the caller said and what the model answered, hostile both, shown as text",
    async () => {
      models.chat.handler = () => say(`Of course ${hostile('model-output')}`)
      const sessions = `/api/v1/workflow/${agent.id}/text-chat/sessions`
      const opened = await t.request('POST', sessions, { body: {} })
      expect(opened.status, opened.text).toBe(200)
      const runId = opened.body.workflow_run_id
      const answer = await t.request('POST', `${sessions}/${runId}/messages`, {
        body: { text: `Book a table ${hostile('transcript')}` },
      })
      expect(answer.status, answer.text).toBe(200)
      expect((await t.request('POST', `${sessions}/${runId}/end`, { body: {} })).status).toBe(200)
      await page.goto(`${base}/#/runs/${agent.id}/${runId}`)
      await page.getByRole('heading', { name: 'Transcript' }).waitFor()
      const transcript = page.locator('ol.transcript')
      await transcript.getByText('Book a table', { exact: false }).waitFor()
      expect(await transcript.textContent()).toContain(hostile('transcript'))
      expect(await transcript.textContent()).toContain(hostile('model-output'))
      expect(await page.locator('.turn .speaker').allTextContents()).toContain('Caller')
      await inspect('run-text-chat')
    },
    60_000,
  )

  step(
    'a campaign from a CSV chosen in the browser: upload with progress, then started and followed',
    async () => {
      await go('/campaigns', 'Campaigns')
      await inspect('campaigns-empty')
      await page.getByRole('link', { name: 'New campaign' }).click()
      await page.getByRole('heading', { level: 1, name: 'New campaign' }).waitFor()
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill(`Spring ${hostile('campaign-name')}`)
      await page.getByLabel('Agent', { exact: true }).selectOption(String(agent.id))
      const cell = `"${hostile('csv-cell').replaceAll('"', '""')}"`
      const contacts = (phone: string) => ({
        name: 'contacts.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(`phone_number,name\n103,ok\n${phone},${cell}\n`),
      })
      await page.getByLabel(/^Contacts/).setInputFiles(contacts('555 0100'))
      await page.getByRole('button', { name: 'Upload and create' }).click()
      // The server names the rows it refused (the header is row 1): shown as it said it.
      await page.getByRole('alert').filter({ hasText: 'Invalid phone numbers in rows: 3' }).waitFor()
      await inspect('campaign-new-row-error')
      await page.getByLabel(/^Contacts/).setInputFiles(contacts('104'))
      await page.getByRole('button', { name: 'Upload and create' }).click()
      await page.getByRole('heading', { name: 'Progress' }).waitFor()
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Spring ${hostile('campaign-name')}`)
      await page.getByRole('button', { name: 'Start' }).click()
      // the dialler calls the first contact; its call stays up, and the page follows over the events stream
      await page.getByRole('button', { name: 'Pause' }).waitFor()
      await page
        .locator('.facts div', { hasText: 'Dial attempts' })
        .locator('dd', { hasText: /^[12]$/ })
        .waitFor()
      await inspect('campaign')
      await page.getByRole('button', { name: 'Pause' }).click()
      await page.getByRole('button', { name: 'Resume' }).click()
      await page.getByRole('button', { name: 'Cancel campaign' }).click()
      await page.locator('.facts .badge', { hasText: 'stopped' }).waitFor()
      for (const id of fake.liveChannelIds()) fake.hangup(id)
    },
    60_000,
  )

  step(
    'a campaign with a dialling window: the form sends its schedule (weekdays, the times, the time zone)',
    async () => {
      await go('/campaigns/new', 'New campaign')
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Office hours')
      await page.getByLabel('Agent', { exact: true }).selectOption(String(agent.id))
      await page.getByLabel('Dial from (HH:MM)').fill('09:00')
      await page.getByLabel('Dial until (HH:MM)').fill('17:30')
      await page.getByLabel('Time zone of the window').fill('Europe/Paris')
      await page
        .getByLabel(/^Contacts/)
        .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from('phone_number\n105\n') })
      await page.getByRole('button', { name: 'Upload and create' }).click()
      await page.getByRole('heading', { level: 1, name: 'Office hours' }).waitFor()
      const id = Number(new URL(page.url()).hash.split('/').at(-1))
      const campaign = await t.request('GET', `/api/v1/campaign/${id}`)
      expect(campaign.body.schedule_config).toEqual({
        enabled: true,
        timezone: 'Europe/Paris',
        slots: [0, 1, 2, 3, 4].map((day) => ({ day_of_week: day, start_time: '09:00', end_time: '17:30' })),
      })
    },
    60_000,
  )

  step(
    'a telephony configuration through the form made from the provider metadata: the error next to its field, then saved',
    async () => {
      await go('/telephony', 'Telephony')
      await page.getByLabel('Provider').selectOption('ari')
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Second PBX')
      await page.getByLabel('ARI URL').fill('not a url')
      await page.getByLabel('ARI Username').fill('ringbase')
      await page.getByLabel('ARI Password').fill('secret-password')
      await page.getByRole('button', { name: 'Save configuration' }).click()
      const url = page.getByLabel('ARI URL')
      await page.locator('input[aria-invalid="true"]').first().waitFor()
      expect(await url.getAttribute('aria-invalid')).toBe('true')
      await inspect('telephony-error')
      await url.fill(fake.url)
      await page.getByRole('button', { name: 'Save configuration' }).click()
      await page.getByText('Saved “Second PBX”').waitFor()
      await page.getByRole('cell', { name: 'Second PBX' }).waitFor()
      expect(await page.content()).not.toContain('secret-password')
      await inspect('telephony')
      // its phone numbers, each with the agent that answers it
      await page.getByRole('link', { name: 'Second PBX' }).click()
      await page.getByRole('heading', { name: 'Phone numbers' }).waitFor()
      await page.getByLabel('Number', { exact: true }).fill('1000')
      await page.getByLabel('Inbound agent').selectOption(String(agent.id))
      await page.getByRole('button', { name: 'Add number' }).click()
      await page.getByRole('cell', { name: agentName }).waitFor()
      await inspect('telephony-numbers')
    },
    60_000,
  )

  step(
    'a test call: an agent and a number start a run through the public trigger with the session; its link opens the run',
    async () => {
      await go('/telephony', 'Telephony')
      await page.getByLabel('Agent', { exact: true }).selectOption(String(agent.id))
      await page.getByLabel('Phone number', { exact: true }).fill('Local/103@test')
      await page.getByRole('button', { name: 'Call', exact: true }).click()
      const link = page.getByRole('status').getByRole('link', { name: /^WR-TEST-/ })
      await link.waitFor()
      const runName = await link.textContent()
      await inspect('telephony-test-call')
      await link.click()
      await page.getByRole('heading', { level: 1, name: runName! }).waitFor()
      const [callee] = fake.liveChannelIds()
      if (callee) fake.hangup(callee)
    },
    60_000,
  )

  step(
    'a model server added and checked, and a model configuration created through the forms',
    async () => {
      await go('/models', 'Models')
      await page.getByRole('textbox', { name: 'Name' }).first().fill('Lab server')
      await page.getByLabel('Base URL').fill(models.baseUrl)
      await page.getByRole('button', { name: 'Add server' }).click()
      await page.getByRole('button', { name: 'Check Lab server' }).click()
      await page.getByText(/^OK: \d+ models/).waitFor()
      await page.getByRole('textbox', { name: 'Name' }).nth(1).fill('Lab voice')
      await page.getByLabel('LLM server').selectOption({ label: 'Lab server' })
      await page.getByRole('button', { name: 'Add configuration' }).click()
      await page.getByText('Lab voice').waitFor()
      await page.getByLabel('Currency').fill('usd')
      await page.getByLabel('Telephony, per minute').fill('0.01')
      await page.getByRole('button', { name: 'Save prices' }).click()
      await page.locator('.field-error', { hasText: "String should match pattern '^[A-Z]{3}$'" }).waitFor()
      expect(await page.getByLabel('Currency').getAttribute('aria-invalid')).toBe('true')
      await page.getByLabel('Currency').fill('EUR')
      await page.getByRole('button', { name: 'Save prices' }).click()
      await page.getByText('Saved: runs that finish from now on are costed with it.').waitFor()
      await inspect('models')
      // the overview's health: the server just checked, and the data dir's disk space
      await go('/', 'Overview')
      await page
        .locator('li', { hasText: 'Lab server' })
        .getByText(/checked/)
        .waitFor()
      await page.getByText(/^Data dir disk: [\d.]+ [KMGT]?B free of [\d.]+ [KMGT]?B$/).waitFor()
      await inspect('overview-health')
      await go('/tools', 'Tools and credentials')
      await page.getByLabel('Credential name').fill(`CRM ${hostile('credential-name')}`)
      await page.getByLabel('Token', { exact: true }).fill('tok-secret-123')
      await page.getByRole('button', { name: 'Add credential' }).click()
      await page.getByText(`CRM ${hostile('credential-name')}`).waitFor()
      expect(await page.content()).not.toContain('tok-secret-123')
      await inspect('tools')
    },
    60_000,
  )

  step(
    'an API key created (shown once) and revoked; usage charts',
    async () => {
      await go('/keys', 'API keys')
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Integration')
      await page.getByRole('button', { name: 'Create key' }).click()
      const shown = await page.getByLabel('The new API key').textContent()
      expect(shown).toMatch(/^rb_/)
      expect((await fetch(`${base}/api/v1/user/api-keys`, { headers: { 'x-api-key': shown! } })).status).toBe(200)
      await inspect('keys')
      await page.getByRole('button', { name: 'I have copied it' }).click()
      expect(await page.content()).not.toContain(shown!)
      await page.getByRole('button', { name: 'Revoke key Integration' }).click()
      await page.getByRole('button', { name: 'Reactivate key Integration' }).waitFor()
      expect((await fetch(`${base}/api/v1/user/api-keys`, { headers: { 'x-api-key': shown! } })).status).toBe(401)
      await go('/usage', 'Usage and cost (last 30 days)')
      await page.getByText('Calls by outcome').waitFor()
      await inspect('usage')
    },
    60_000,
  )

  step(
    'usable at 390 px; a trigger key sees only its pages; sign-out ends the session',
    async () => {
      await page.setViewportSize({ width: 390, height: 844 })
      await go('/', 'Overview')
      await page.screenshot({ path: join(consoleBrowser.shots, 'overview-390px.png'), fullPage: true })
      await go('/runs', 'Runs')
      await inspect('runs-390px')
      await page.setViewportSize({ width: 1280, height: 860 })
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByRole('heading', { name: 'Sign in to Ringbase' }).waitFor()
      expect(await context.cookies()).toEqual([])
      await page.getByLabel('API key').fill(t.newOrg('default', 'trigger').key)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor()
      expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual([
        'Overview',
        'Runs',
      ])
      // It may read the runs of an agent it knows, not the organization's usage.
      await page.getByLabel('Agent id').fill(String(agent.id))
      await page.getByRole('button', { name: 'Show runs' }).click()
      await page.getByRole('link', { name: /^WR-/ }).first().waitFor()
      await inspect('runs-trigger-key')
      await go('/', 'Overview')
      await page.goto(`${base}/#/keys`)
      await page.getByText('This page does not exist, or this key may not see it.').waitFor()
    },
    60_000,
  )
  step('after all of it: no hostile value ran anywhere, and the pages never broke their own CSP', async () => {
    expect(xssRan).toEqual([])
    expect(dialogs).toEqual([])
    expect(cspViolations).toEqual([])
  })
})
