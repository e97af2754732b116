import { afterAll, beforeAll, describe, expect } from 'bun:test'
import type { Page } from 'playwright-core'
import {
  consoleSteps,
  hostile,
  launchConsoleBrowser,
  leavingAsksAndStays,
  leavingDoesNotAsk,
  type ConsoleBrowser,
} from '../support/console-browser'
import { compiledBinary } from '../support/compiled-binary'
import { callTool, say, startFakeModels, type FakeModelRequest, type FakeModels } from '../support/fake-models'
import { startBinaryTestApp, type HttpTestApp } from '../support/http-app'
import { waitFor } from '../support/wait'
import { configureFakeVoiceModels } from '../support/voice-models'

/**
 * The agent pages and the graph editor in a real browser against the compiled binary: an agent built through the UI
 * (three nodes, edges, an extraction variable), saved, published and reopened to the same JSON the API holds; a 422
 * pinned on its node; a text chat that walks the graph with the fake model server; versions, settings, undo; hostile
 * node labels and prompts shown as text. Screenshots land in test-artifacts/console/agent-editor/.
 */

let t: HttpTestApp
let models: FakeModels
let browser: ConsoleBrowser
let page: Page
let base: string
let agentId: number
let toolUuid: string
const COLLECT = 'agentNode-3'
const collectName = `Collect ${hostile('node-label')}`

/** The model: transitions when the caller says so, a calculator call, then the goodbye; extraction reads "Ada". */
function answer(request: FakeModelRequest) {
  if (request.body.response_format) return say('{"caller_name": "Ada"}')
  const offered: string[] = (request.body.tools ?? []).map((tool: any) => tool.function.name)
  const messages: any[] = request.body.messages
  const lastUser = String(messages.findLast((message) => message.role === 'user')?.content ?? '')
  const calculated = messages.some((message) =>
    message.tool_calls?.some((call: any) => call.function.name === 'calculator'),
  )
  if (offered.includes('ready')) return /book/.test(lastUser) ? callTool('ready', {}) : say('How can I help?')
  if (offered.includes('booked')) {
    if (!/Ada/.test(lastUser)) return say('What is your name?')
    return calculated ? callTool('booked', {}) : callTool('calculator', { expression: '6*7' })
  }
  return say('Goodbye, Ada.')
}

beforeAll(async () => {
  models = startFakeModels()
  models.chat.handler = answer
  t = await startBinaryTestApp(compiledBinary(), { waitForLogLines: false })
  base = await t.httpUrl()
  await configureFakeVoiceModels(t, models, { tts: 'builtin' })
  const tool = await t.request('POST', '/api/v1/tools/', {
    body: { name: 'Calculator', definition: { type: 'calculator' } },
  })
  expect(tool.status, tool.text).toBe(200)
  toolUuid = tool.body.tool_uuid
  browser = await launchConsoleBrowser('agent-editor')
  page = browser.page
}, 240_000)

afterAll(async () => {
  await browser?.browser.close()
  await t?.close()
  models?.stop()
})

const { inspect, step, go } = consoleSteps(
  () => browser,
  () => base,
)

const apiDefinition = async () => (await t.request('GET', `/api/v1/workflow/fetch/${agentId}`)).body
const editorJson = async () => {
  await page.getByRole('button', { name: 'JSON', exact: true }).click()
  const json = JSON.parse(await page.getByLabel('Definition JSON').inputValue())
  await page.getByRole('button', { name: 'Graph', exact: true }).click()
  return json
}

const nodeTitle = (on: Page, id: string) => on.locator(`.react-flow__node[data-id="${id}"] .graph-node-title`)
const leaveDialog = () => page.getByRole('dialog', { name: 'Leave without saving?' })
const navLink = (name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })
const hash = () => page.evaluate<string>('location.hash')
const focused = () => page.evaluate<string | undefined>('document.activeElement?.textContent')
const unsaved = async () => (await page.locator('.editor-status').textContent())!.includes('unsaved changes')

/** Renames the Start node through its form: an edit of the graph (one step of undo), unsaved. */
async function renameStart(on: Page, name: string) {
  await on.locator('.react-flow__node[data-id="start"]').click()
  await on.locator('form.node-form').getByLabel('Name', { exact: true }).fill(name)
  await nodeTitle(on, 'start').filter({ hasText: name }).waitFor()
}

/** Marks the canvas: the mark is still there only if the editor was not shown again from scratch. */
const markCanvas = () =>
  page.locator('.canvas').evaluate((canvas) => {
    canvas.dataset.probe = 'kept'
  })
const canvasMarked = async () => (await page.locator('.canvas').getAttribute('data-probe')) === 'kept'

describe('the agent editor', () => {
  step('sign in; the agents list is empty and says what to do; a new agent from the blank template', async () => {
    await page.goto(`${base}/`)
    await page.getByLabel('API key').fill(t.adminKey)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    await go('/agents', 'Agents')
    await page.getByText('No agent yet.').waitFor()
    await inspect('agents-empty')
    await page.getByRole('link', { name: 'New agent' }).click()
    await page.getByRole('heading', { level: 1, name: 'New agent' }).waitFor()
    // nothing typed yet: leaving does not ask
    await leavingDoesNotAsk(page)
    await go('/agents/new', 'New agent')
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Booking line')
    await page.getByRole('radio', { name: /^Receptionist/ }).check()
    await page.getByLabel(/^Transfer to/).waitFor()
    await page.getByRole('radio', { name: /^Blank/ }).check()
    await leavingAsksAndStays(page)
    expect(await page.getByRole('textbox', { name: 'Name', exact: true }).inputValue()).toBe('Booking line')
    await inspect('agent-new')
    // created: the page goes on to the editor without asking
    await page.getByRole('button', { name: 'Create agent' }).click()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    agentId = Number(new URL(page.url()).hash.split('/').at(-1))
    expect(agentId).toBeGreaterThan(0)
  })

  step('three nodes, edges and an extraction variable built through the UI, problems shown as typed', async () => {
    await page.locator('.react-flow__node').first().waitFor()
    await page.getByLabel('Node type').selectOption('agentNode')
    await page.getByRole('button', { name: 'Add node' }).click()
    const form = page.locator('form.node-form')
    await form.getByLabel('Name', { exact: true }).fill(collectName)
    // as typed: the empty prompt is a problem on the node and next to the field, before anything is saved
    await form.locator('[data-field="data.prompt"] .field-error', { hasText: 'Prompt is required' }).waitFor()
    await page.locator(`.react-flow__node[data-id="${COLLECT}"]`, { hasText: 'problem' }).waitFor()
    await form
      .getByLabel('Prompt', { exact: true })
      .fill(`Ask for the name of {{first_name}}. ${hostile('node-prompt')}`)
    await form.getByText('Not a variable of this agent yet: first_name').waitFor()
    await form.getByLabel('Extract variables').check()
    await form.getByRole('button', { name: 'Add a row to Variables to extract' }).click()
    await form.getByLabel('Variable name').fill('discarded')
    await form.getByRole('button', { name: 'Add a row to Variables to extract' }).click()
    const secondRow = form.getByRole('group', { name: 'Variables to extract row 2' })
    await secondRow.getByLabel('Variable name').fill('caller_name')
    await secondRow.evaluate((row) => {
      row.dataset.probe = 'second'
    })
    // a row removed before another: the rows after it keep their own elements (keyed by row, not by position)
    await form.getByRole('button', { name: 'Remove Variables to extract row 1' }).click()
    const [kept] = await form.locator('fieldset.row').all()
    expect(await form.locator('fieldset.row').count()).toBe(1)
    expect(await kept.getAttribute('data-probe')).toBe('second')
    expect(await kept.getByLabel('Variable name').inputValue()).toBe('caller_name')
    await form.getByRole('checkbox', { name: 'Calculator' }).check()
    await inspect('agent-editor-node-form')
    await form.getByRole('button', { name: 'Back to the outline' }).click()
    for (const [from, to, label, condition] of [
      ['start', COLLECT, 'Ready', 'The caller wants to book'],
      [COLLECT, 'end', 'Booked', 'The caller gave their name'],
    ]) {
      await page.getByLabel('From', { exact: true }).selectOption(from)
      await page.getByLabel('To', { exact: true }).selectOption(to)
      await page.getByRole('button', { name: 'Connect' }).click()
      await page.locator('form.node-form').getByLabel('Label', { exact: true }).fill(label)
      await page.locator('form.node-form').getByLabel('Condition', { exact: true }).fill(condition)
      await page.getByRole('button', { name: 'Back to the outline' }).click()
    }
    // moved on the canvas with the mouse: the position is part of the definition
    const box = (await page.locator(`.react-flow__node[data-id="${COLLECT}"]`).boundingBox())!
    await page.mouse.move(box.x + 30, box.y + 15)
    await page.mouse.down()
    await page.mouse.move(box.x + 130, box.y + 45, { steps: 8 })
    await page.mouse.up()
    const json = await editorJson()
    expect(json.nodes.map((node: any) => node.id)).toEqual(['start', 'end', COLLECT])
    expect(json.nodes[2].position.x).not.toBe(0)
    expect(await page.locator('.editor-status').textContent()).not.toContain('problem')
    // at 1280 px the canvas has the room: the test panel takes a column only while it is open
    expect(await page.getByRole('button', { name: 'Test the agent' }).getAttribute('aria-expanded')).toBe('false')
    expect((await page.locator('.canvas').boundingBox())!.width).toBeGreaterThan(800)
    await inspect('agent-editor')
    // at 390 px: one column, nothing wider than the screen, the canvas as wide as the page
    await page.setViewportSize({ width: 390, height: 844 })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    expect((await page.locator('.canvas').boundingBox())!.width).toBeGreaterThan(330)
    await inspect('agent-editor-390px')
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  step('saved and published; reopened, the editor holds exactly what the API returns', async () => {
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByText(/Draft saved/).waitFor()
    await page.getByRole('button', { name: 'Publish' }).click()
    await page.getByText(/Published version/).waitFor()
    const saved = await apiDefinition()
    expect(saved.version_status).toBe('published')
    const collect = saved.workflow_definition.nodes.find((node: any) => node.id === COLLECT)
    expect(collect.data).toMatchObject({
      name: collectName,
      extraction_enabled: true,
      extraction_variables: [{ name: 'caller_name', type: 'string' }],
      tool_uuids: [toolUuid],
    })
    expect(saved.workflow_definition.edges.map((edge: any) => edge.data.label)).toEqual(['Done', 'Ready', 'Booked'])
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    expect(await editorJson()).toEqual(saved.workflow_definition)
    expect(await page.locator('.editor-status').textContent()).not.toContain('unsaved')
  })

  step(
    'a text chat walks the graph: replies with their node, transitions, the tool call, extracted values',
    async () => {
      await page.getByRole('button', { name: 'Test the agent' }).click()
      expect(await page.getByRole('button', { name: 'Hide the test panel' }).getAttribute('aria-expanded')).toBe('true')
      await page.getByRole('button', { name: 'Start chat' }).click()
      const chat = page.getByRole('list', { name: 'Conversation' })
      await chat.getByText('Hello!').waitFor()
      await page.getByLabel('Your message').fill('I want to book')
      await page.getByRole('button', { name: 'Send' }).click()
      await chat.getByText('What is your name?').waitFor()
      expect(await chat.textContent()).toContain('transition ready: Start → ')
      expect(await chat.locator('.chat-agent').last().locator('.chat-node').textContent()).toBe(collectName)
      await page.getByLabel('Your message').fill('I am Ada')
      await page.getByRole('button', { name: 'Send' }).click()
      await chat.getByText('Goodbye, Ada.').waitFor()
      const text = await chat.textContent()
      expect(text).toContain('⚙ tool calculator({"expression":"6*7"})')
      expect(text).toContain('transition booked')
      await page.getByRole('list', { name: 'Conversation' }).or(page.getByLabel('Extracted values')).first().waitFor()
      await page
        .getByText(/caller_name/)
        .first()
        .waitFor()
      await inspect('agent-test-panel')
      await page.getByRole('button', { name: 'Restart' }).click()
      await waitFor('1 of .chat .chat-turn', async () => (await page.locator('.chat .chat-turn').count()) === 1, 10_000)
    },
    90_000,
  )

  step('versions: the readable diff, restore, then undo', async () => {
    await page.getByRole('button', { name: 'Versions', exact: true }).click()
    await page.getByRole('button', { name: 'Compare version 1 with the editor' }).click()
    const diff = page.getByRole('list', { name: 'Changes from version 1 to the editor' })
    await diff.getByText(/^Node “Collect .* added$/).waitFor()
    await inspect('agent-versions')
    await page.getByRole('button', { name: 'Restore version 1' }).click()
    expect((await editorJson()).nodes).toHaveLength(2)
    await page.getByRole('button', { name: 'Undo' }).click()
    expect((await editorJson()).nodes).toHaveLength(3)
  })

  step('settings: a refused value is shown next to its field; a good one is saved', async () => {
    await page.getByRole('button', { name: 'Settings', exact: true }).click()
    await page.getByLabel('Max call duration (seconds)').fill('0')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.locator('input[aria-invalid="true"]').waitFor()
    expect(await page.getByLabel('Max call duration (seconds)').getAttribute('aria-invalid')).toBe('true')
    await inspect('agent-settings-error')
    await page.getByLabel('Max call duration (seconds)').fill('900')
    await page.getByLabel('Voicemail detection').selectOption('true')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByText(/Draft saved/).waitFor()
    expect((await apiDefinition()).workflow_configurations).toMatchObject({
      max_call_duration_seconds: 900,
      voicemail_detection: { enabled: true },
    })
    await page.getByRole('button', { name: 'Graph', exact: true }).click()
  })

  step('unsaved edits: a nav link asks first; staying keeps the edit and its undo, leaving drops it', async () => {
    const editor = `#/agents/${agentId}`
    await renameStart(page, 'Front desk')
    expect(await unsaved()).toBe(true)
    // the editor's own tabs are not a way out
    for (const tab of ['Settings', 'Versions', 'JSON', 'Graph'])
      await page.getByRole('button', { name: tab, exact: true }).click()
    expect(await leaveDialog().isVisible()).toBe(false)
    await markCanvas()
    await navLink('Tools').click()
    await leaveDialog().waitFor()
    expect(await focused()).toBe('Stay on this page')
    await inspect('agent-editor-leave-dialog')
    // Escape stays: the editor as it was, the focus back on the link
    await page.keyboard.press('Escape')
    await leaveDialog().waitFor({ state: 'hidden' })
    // the browser goes back to the editor's entry after the dialog closes (history.go is asynchronous)
    await waitFor('the editor entry again', async () => (await hash()) === editor, 10_000)
    expect(await focused()).toBe('Tools')
    expect(await nodeTitle(page, 'start').textContent()).toBe('Front desk')
    expect(await unsaved()).toBe(true)
    await navLink('Tools').click()
    await page.getByRole('button', { name: 'Stay on this page' }).click()
    await leaveDialog().waitFor({ state: 'hidden' })
    await waitFor('the editor entry again', async () => (await hash()) === editor, 10_000)
    expect(await canvasMarked()).toBe(true)
    await page.getByRole('button', { name: 'Undo' }).click()
    await nodeTitle(page, 'start')
      .filter({ hasText: /^Start$/ })
      .waitFor()
    await page.getByRole('button', { name: 'Redo' }).click()
    await nodeTitle(page, 'start').filter({ hasText: 'Front desk' }).waitFor()
    await navLink('Tools').click()
    await page.getByRole('button', { name: 'Leave without saving' }).click()
    await page.getByRole('heading', { level: 1, name: 'Tools and credentials' }).waitFor()
    expect(await hash()).toBe('#/tools')
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    expect(await nodeTitle(page, 'start').textContent()).toBe('Start')
    expect(await unsaved()).toBe(false)
  })

  step('Back and Forward with unsaved edits ask too; once saved, nothing asks', async () => {
    const editor = `#/agents/${agentId}`
    await renameStart(page, 'Front desk')
    await markCanvas()
    await page.goBack()
    await leaveDialog().waitFor()
    await page.getByRole('button', { name: 'Stay on this page' }).click()
    await waitFor('the editor entry again', async () => (await hash()) === editor, 10_000)
    expect(await canvasMarked()).toBe(true)
    expect(await nodeTitle(page, 'start').textContent()).toBe('Front desk')
    // the Tools entry after the editor's is still there: Forward reaches it, and asks first
    await page.goForward()
    await leaveDialog().waitFor()
    await page.keyboard.press('Escape')
    await waitFor('the editor entry again', async () => (await hash()) === editor, 10_000)
    expect(await canvasMarked()).toBe(true)
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByText(/Draft saved/).waitFor()
    expect(await unsaved()).toBe(false)
    await navLink('Tools').click()
    await page.getByRole('heading', { level: 1, name: 'Tools and credentials' }).waitFor()
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    expect(await nodeTitle(page, 'start').textContent()).toBe('Front desk')
  })

  step('closing or reloading the tab with unsaved edits gets the browser prompt; once saved, none', async () => {
    // a tab of its own: the suite's page answers every dialog itself, and counts them as hostile values that ran
    const tab = await browser.context.newPage()
    const asked: string[] = []
    let answer: 'accept' | 'dismiss' = 'dismiss'
    tab.on('dialog', (dialog) => {
      asked.push(dialog.type())
      void (answer === 'accept' ? dialog.accept() : dialog.dismiss())
    })
    const heading = tab.getByRole('heading', { level: 1, name: 'Booking line' })
    try {
      await tab.goto(`${base}/#/agents/${agentId}`)
      await heading.waitFor()
      // a click first: Chromium prompts only on a page the user has interacted with
      await tab.locator('.react-flow__node[data-id="start"]').click()
      await tab.reload()
      await heading.waitFor()
      expect(asked).toEqual([])
      await renameStart(tab, 'Side desk')
      await tab.close({ runBeforeUnload: true })
      await waitFor('the beforeunload prompt', async () => asked.length === 1, 10_000)
      expect(asked).toEqual(['beforeunload'])
      // dismissed: the tab stays, with its edit
      expect(tab.isClosed()).toBe(false)
      expect(await nodeTitle(tab, 'start').textContent()).toBe('Side desk')
      answer = 'accept'
      await tab.reload()
      await heading.waitFor()
      expect(asked).toEqual(['beforeunload', 'beforeunload'])
      expect(await nodeTitle(tab, 'start').textContent()).toBe('Front desk')
      await renameStart(tab, 'Side desk')
      await tab.getByRole('button', { name: 'Save draft' }).click()
      await tab.getByText(/Draft saved/).waitFor()
      await tab.reload()
      await heading.waitFor()
      expect(asked).toHaveLength(2)
      expect(await nodeTitle(tab, 'start').textContent()).toBe('Side desk')
    } finally {
      await tab.close()
    }
  })

  step('each picker links to the page where what it offers is added; an empty one says so', async () => {
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    await page.locator('.react-flow__node[data-id="start"]').click()
    const form = page.locator('form.node-form')
    const tools = form.locator('[data-field="data.tool_uuids"]')
    expect(await tools.getByRole('link', { name: 'Manage tools' }).getAttribute('href')).toBe('#/tools')
    expect(await tools.textContent()).not.toContain('No tool')
    const documents = form.locator('[data-field="data.document_uuids"]')
    await documents.getByText('No document in the knowledge base yet.').waitFor()
    expect(await documents.getByRole('link', { name: 'Add a document' }).getAttribute('href')).toBe('#/knowledge')
    await form.getByLabel('Fetch data before the call').check()
    const credential = form.locator('[data-field="data.pre_call_fetch_credential_uuid"]')
    await credential.getByText('No credential in this organization yet.').waitFor()
    expect(await credential.getByRole('link', { name: 'Manage credentials' }).getAttribute('href')).toBe('#/tools')
    await form.getByLabel('Greeting type').selectOption('audio')
    const recording = form.locator('[data-field="data.greeting_recording_id"]')
    await recording.getByText('No recording in this organization yet.').waitFor()
    await inspect('agent-editor-pickers')
    // from the keyboard: the link comes right after its picker; with the edits unsaved, following it asks first
    await recording.getByRole('combobox').focus()
    await page.keyboard.press('Tab')
    expect(await focused()).toBe('Add a recording')
    await page.keyboard.press('Enter')
    await leaveDialog().waitFor()
    await page.getByRole('button', { name: 'Leave without saving' }).click()
    await page.getByRole('heading', { level: 1, name: 'Recordings' }).waitFor()
    expect(await hash()).toBe('#/recordings')
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
    await page.getByRole('button', { name: 'Settings', exact: true }).click()
    const models = page.getByRole('link', { name: 'Manage model configurations' })
    expect(await models.getAttribute('href')).toBe('#/models')
    await models.click()
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor()
    await page.goBack()
    await page.getByRole('heading', { level: 1, name: 'Booking line' }).waitFor()
  })

  step("the API's 422 pinned to its node and field: a tool archived since it was picked", async () => {
    expect((await t.request('DELETE', `/api/v1/tools/${toolUuid}`)).status).toBe(200)
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('alert').filter({ hasText: toolUuid }).first().waitFor()
    const node = page.locator(`.react-flow__node[data-id="${COLLECT}"]`)
    await node.getByText('1 problem').waitFor()
    await node.click()
    await page.locator('form.node-form [data-field="data.tool_uuids"] .field-error', { hasText: toolUuid }).waitFor()
    await inspect('agent-editor-422')
    const restored = await t.request('PUT', `/api/v1/tools/${toolUuid}`, { body: { status: 'active' } })
    expect(restored.status, restored.text).toBe(200)
  })

  step('the list: search, duplicate, archive and restore', async () => {
    await go('/agents', 'Agents')
    await page.getByRole('button', { name: 'Duplicate Booking line' }).click()
    await page.getByRole('heading', { level: 1, name: 'Copy of Booking line' }).waitFor()
    await go('/agents', 'Agents')
    await page.getByLabel('Search by name').fill('copy')
    await waitFor('1 of tr[data-agent-id]', async () => (await page.locator('tr[data-agent-id]').count()) === 1, 10_000)
    await page.getByRole('button', { name: 'Archive Copy of Booking line' }).click()
    await page.getByText('No agent matches.').waitFor()
    await page.getByLabel('Status').selectOption('archived')
    await page.getByRole('button', { name: 'Restore Copy of Booking line' }).click()
    await page.getByRole('button', { name: 'Restore Copy of Booking line' }).waitFor({ state: 'detached' })
    expect((await t.request('GET', '/api/v1/workflow/count')).body).toMatchObject({ active: 2, archived: 0 })
    await page.getByLabel('Status').selectOption('active,archived')
    await page.getByLabel('Search by name').fill('')
    await waitFor('2 of tr[data-agent-id]', async () => (await page.locator('tr[data-agent-id]').count()) === 2, 10_000)
    await inspect('agents')
  })

  step('signing out with unsaved edits asks first: staying keeps them, leaving signs out', async () => {
    await go(`/agents/${agentId}`, 'Booking line')
    await renameStart(page, 'Night desk')
    const signOut = page.getByRole('button', { name: 'Sign out' })
    await signOut.click()
    await leaveDialog().waitFor()
    await page.getByRole('button', { name: 'Stay on this page' }).click()
    await leaveDialog().waitFor({ state: 'hidden' })
    expect(await nodeTitle(page, 'start').textContent()).toBe('Night desk')
    expect(await unsaved()).toBe(true)
    expect(await signOut.isVisible()).toBe(true)
    await signOut.click()
    await page.getByRole('button', { name: 'Leave without saving' }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in to Ringbase' }).waitFor()
    expect(
      (await apiDefinition()).workflow_definition.nodes.find((node: any) => node.id === 'start').data.name,
    ).not.toBe('Night desk')
  })

  step('after all of it: no hostile label or prompt ran, and the pages never broke their CSP', async () => {
    expect(browser.xssRan).toEqual([])
    expect(browser.dialogs).toEqual([])
    expect(browser.cspViolations).toEqual([])
  })
})
