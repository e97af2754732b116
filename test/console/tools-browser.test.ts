import { afterAll, describe, expect } from 'bun:test'
import type { Locator, Page } from 'playwright-core'
import {
  type ConsoleBrowser,
  consoleOnBinarySuite,
  hostile,
  leavingAsksAndStays,
  leavingDoesNotAsk,
} from '../support/console-browser'
import type { HttpTestApp } from '../support/http-app'
import { type HostileMcpServer, startHostileMcpServer } from '../support/mcp-servers'
import { waitFor } from '../support/wait'
import { createRecording, toneWav } from '../support/recordings'
import { httpApiConfig } from '../support/tools'

/**
 * The Tools page in a real browser against the compiled binary: tools built from the metadata's fields (an HTTP tool
 * with a parameter, a header and a credential, read back exactly; a transfer with destinations; an end call playing a
 * recording picked by its name; MCP servers, listed and listed again), the API's 422 next to its field and a JSON text
 * refused in the page, edit, archive and restore; credentials of any type added, renamed, their secret replaced and
 * deleted, no secret ever in the page; the allowed hosts; hostile names as text; a trigger key kept out; another
 * organization's tools never listed. Photographed into test-artifacts/console/tools/.
 */

let t: HttpTestApp
let consoleBrowser: ConsoleBrowser
let page: Page
let base: string
let other: { key: string }
let mcp: HostileMcpServer
let crmToken: string

const TOOLS = '/api/v1/tools/'
const THEIR_TOOL = 'Their private lookup'

const { inspect, step, go } = consoleOnBinarySuite('tools', async (started) => {
  ;({ t, consoleBrowser, page, base } = started)
  mcp = startHostileMcpServer()
  other = t.newOrg('other')
  const theirs = await t.request('POST', TOOLS, {
    key: other.key,
    body: { name: THEIR_TOOL, definition: { type: 'calculator' } },
  })
  expect(theirs.status, theirs.text).toBe(200)
  const credential = await t.request('POST', '/api/v1/credentials', {
    body: { name: 'CRM token', credential_type: 'bearer_token', credential_data: { token: 'crm-token-secret-1' } },
  })
  expect(credential.status, credential.text).toBe(200)
  crmToken = credential.body.uuid
})
afterAll(() => mcp?.stop())

/** The organization's tools as the API lists them (`status` as the page's filter sends it). */
async function listed(status = 'active', key = t.adminKey): Promise<any[]> {
  const response = await t.request('GET', `${TOOLS}?status=${status}`, { key })
  expect(response.status, response.text).toBe(200)
  return response.body
}

const toolNamed = async (name: string) => (await listed('active,archived')).find((tool) => tool.name === name)

/** The requests the page sends until `stop()`: `METHOD path` and the body. */
function recordRequests() {
  const sent: { line: string; body: any }[] = []
  const listen = (request: { method(): string; url(): string; postData(): string | null }) => {
    const body = request.postData()
    sent.push({ line: `${request.method()} ${new URL(request.url()).pathname}`, body: body ? JSON.parse(body) : null })
  }
  page.on('request', listen)
  return {
    sent,
    changes: () => sent.filter((request) => !request.line.startsWith('GET ')),
    stop: () => page.off('request', listen),
  }
}

/** A tool's row in the list, by its name. */
const row = (name: string) =>
  page
    .getByRole('region', { name: 'Tools', exact: true })
    .getByRole('row')
    .filter({ has: page.locator('td:first-child > span.text').getByText(name, { exact: true }) })
const toolForm = (name = 'New tool') => page.getByRole('form', { name })
/** A field's own block: its label, control, hint and message. */
const fieldBlock = (form: Locator, label: string) =>
  form.locator('.field', { has: page.getByLabel(label, { exact: true }) })
/** The message the page shows next to a field (inside the field's own block). */
const fieldError = (form: Locator, label: string) => fieldBlock(form, label).locator('.field-error')

async function openNewTool(type: string) {
  await page.getByRole('button', { name: 'New tool' }).click()
  const form = toolForm()
  await form.waitFor()
  await form.getByLabel('Type', { exact: true }).selectOption(type)
  return form
}

const ORDER_URL = 'https://crm.example.com/orders/{{order_id}}'
/** The HTTP tool as stored: what the form sent, with the API's defaults filled in. */
const orderDefinition = (url = ORDER_URL) => ({
  schema_version: 1,
  type: 'http_api',
  config: httpApiConfig({
    method: 'POST',
    url,
    headers: { 'X-Team': 'support' },
    credential_uuid: crmToken,
    parameters: [{ name: 'order_id', type: 'string', description: 'The order number', required: true }],
  }),
})

describe('the Tools page', () => {
  step("no tool yet: says what one is; another organization's tools are not listed", async () => {
    await go('/tools', 'Tools and credentials')
    await page.getByText('No tool yet.').waitFor()
    expect(await page.locator('.empty').first().textContent()).toContain('Create one with “New tool”')
    expect(await page.content()).not.toContain(THEIR_TOOL)
    expect((await listed('active', other.key)).map((tool) => tool.name)).toEqual([THEIR_TOOL])
    await inspect('empty')
  })

  step(
    'an HTTP tool through the form (method, URL, a parameter, a header, a credential): stored exactly as filled',
    async () => {
      const form = await openNewTool('http_api')
      await form.getByLabel('Name', { exact: true }).fill('Order lookup')
      await form.getByLabel('Description', { exact: true }).fill('Looks an order up by its number.')
      // the metadata's defaults are filled in, a required field marked
      expect(await form.getByLabel('Timeout (ms)').inputValue()).toBe('5000')
      expect(await form.getByLabel('URL', { exact: true }).getAttribute('required')).not.toBeNull()
      // "Required." only under a field that can be left empty: not under the Method select, which always holds one
      expect(await fieldBlock(form, 'URL').textContent()).toContain('Required.')
      expect(await fieldBlock(form, 'Method').textContent()).not.toContain('Required.')
      await form.getByLabel('Method').selectOption('POST')
      await form.getByLabel('URL', { exact: true }).fill(ORDER_URL)
      await form.getByRole('button', { name: 'Add parameter', exact: true }).click()
      await form.getByLabel('Parameter 1 name').fill('order_id')
      expect(await form.getByLabel('Parameter 1 type').inputValue()).toBe('string')
      await form.getByLabel('Parameter 1 description').fill('The order number')
      expect(await form.getByLabel('Parameter 1 required').isChecked()).toBe(true)
      await form.getByRole('button', { name: 'Add header' }).click()
      await form.getByLabel('Header 1 name').fill('X-Team')
      await form.getByLabel('Header 1 value').fill('support')
      await form.getByLabel('Credential', { exact: true }).selectOption({ label: 'CRM token (bearer_token)' })
      await inspect('new-http-tool')
      const requests = recordRequests()
      try {
        await form.getByRole('button', { name: 'Create tool' }).click()
        await page.getByRole('status').filter({ hasText: 'Created “Order lookup”.' }).waitFor()
        expect(requests.changes().map((request) => request.line)).toEqual([`POST ${TOOLS}`])
      } finally {
        requests.stop()
      }
      const created = await toolNamed('Order lookup')
      const stored = await t.request('GET', `${TOOLS}${created.tool_uuid}`)
      expect(stored.body.description).toBe('Looks an order up by its number.')
      expect(stored.body.definition).toEqual(orderDefinition())
      await row('Order lookup').waitFor()
      expect(await row('Order lookup').textContent()).toContain('http_api')
      expect(await row('Order lookup').locator('code').textContent()).toBe(created.function_name)
    },
  )

  step(
    "the API's 422 next to the fields it names, nothing created; a JSON text that does not parse is refused in the page",
    async () => {
      const form = await openNewTool('http_api')
      await form.getByLabel('Name', { exact: true }).fill('Broken lookup')
      await form.getByLabel('URL', { exact: true }).fill('ftp://example.com/orders')
      await form.getByRole('button', { name: 'Add parameter', exact: true }).click()
      await form.getByLabel('Parameter 1 name').fill('order id')
      const requests = recordRequests()
      /** What the API says of the body the page sent last, asked directly; its message for `field` as a person reads it. */
      const refusal = async () => {
        const direct = await t.request('POST', TOOLS, { body: requests.changes().at(-1)!.body })
        expect(direct.status).toBe(422)
        return (field: string) =>
          direct.body.detail.find((item: any) => item.loc.join('.').endsWith(field)).msg.replace(/^Value error, /, '')
      }
      try {
        // the schema's refusal first (the parameter's name), then the rule of the URL
        await form.getByRole('button', { name: 'Create tool' }).click()
        await fieldError(form, 'Parameter 1 name').waitFor()
        const first = await refusal()
        expect(await fieldError(form, 'Parameter 1 name').textContent()).toBe(first('config.parameters.0.name'))
        expect(await form.getByLabel('Parameter 1 name').getAttribute('aria-invalid')).toBe('true')
        expect(await form.getByRole('alert').textContent()).toBe(
          'Not saved: a field needs a change (shown next to it).',
        )

        await form.getByLabel('Parameter 1 name').fill('order_id')
        await form.getByRole('button', { name: 'Create tool' }).click()
        await fieldError(form, 'URL').waitFor()
        const second = await refusal()
        expect(await fieldError(form, 'URL').textContent()).toBe(second('config.url'))
        expect(await fieldError(form, 'URL').textContent()).toContain('http:// or https://')
        expect(await form.getByLabel('URL', { exact: true }).getAttribute('aria-invalid')).toBe('true')
        expect(await fieldError(form, 'Parameter 1 name').count()).toBe(0)
        expect(await form.getByRole('alert').textContent()).toBe(
          'Not saved: a field needs a change (shown next to it).',
        )
        expect(requests.changes().map((request) => request.line)).toEqual([`POST ${TOOLS}`, `POST ${TOOLS}`])
        expect(await toolNamed('Broken lookup')).toBeUndefined()
        await inspect('refused-at-fields')

        requests.sent.length = 0
        await form.getByLabel('URL', { exact: true }).fill('https://crm.example.com/orders')
        await form.getByLabel('Method').selectOption('POST')
        await form.getByLabel('Body template (JSON)').fill('{"order": {{order_id}')
        await form.getByRole('button', { name: 'Create tool' }).click()
        const jsonError = fieldError(form, 'Body template (JSON)')
        await jsonError.waitFor()
        expect(await jsonError.textContent()).toStartWith('This is not valid JSON: ')
        expect(await form.getByLabel('Body template (JSON)').getAttribute('aria-invalid')).toBe('true')
        expect(await fieldError(form, 'URL').count()).toBe(0)
        expect(await form.getByRole('alert').textContent()).toBe(
          'Not saved: a field needs a change (shown next to it).',
        )
        expect(requests.changes()).toEqual([])
      } finally {
        requests.stop()
      }
      expect(await toolNamed('Broken lookup')).toBeUndefined()
      await form.getByRole('button', { name: 'Close' }).click()
      await form.waitFor({ state: 'detached' })
    },
  )

  step(
    'edited (the URL changed, the rest as stored), archived after a confirmation, listed as archived, restored',
    async () => {
      const tool = await toolNamed('Order lookup')
      await row('Order lookup').getByRole('button', { name: 'Edit tool Order lookup' }).click()
      const form = toolForm('Edit “Order lookup”')
      await form.waitFor()
      expect(await form.getByLabel('URL', { exact: true }).inputValue()).toBe(ORDER_URL)
      expect(await form.getByLabel('Parameter 1 name').inputValue()).toBe('order_id')
      expect(await form.getByLabel('Header 1 value').inputValue()).toBe('support')
      expect(await form.getByLabel('Credential', { exact: true }).inputValue()).toBe(crmToken)
      const newUrl = 'https://crm.example.com/v2/orders/{{order_id}}'
      await form.getByLabel('URL', { exact: true }).fill(newUrl)
      // the change not saved yet: leaving the page asks first, and staying keeps it
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview', exact: true }).click()
      const leave = page.getByRole('dialog', { name: 'Leave without saving?' })
      await leave.waitFor()
      await leave.getByRole('button', { name: 'Stay on this page' }).click()
      await leave.waitFor({ state: 'hidden' })
      await waitFor('back on the tools page', async () => (await page.evaluate('location.hash')) === '#/tools', 10_000)
      expect(await form.getByLabel('URL', { exact: true }).inputValue()).toBe(newUrl)
      const requests = recordRequests()
      try {
        await form.getByRole('button', { name: 'Save tool' }).click()
        await form.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
        expect(requests.changes().map((request) => request.line)).toEqual([`PUT ${TOOLS}${tool.tool_uuid}`])
      } finally {
        requests.stop()
      }
      expect((await t.request('GET', `${TOOLS}${tool.tool_uuid}`)).body.definition).toEqual(orderDefinition(newUrl))
      await form.getByRole('button', { name: 'Close' }).click()

      await row('Order lookup').getByRole('button', { name: 'Archive tool Order lookup' }).click()
      const confirm = row('Order lookup').getByRole('button', { name: 'Archive “Order lookup”' })
      await confirm.waitFor()
      // asked, not done
      expect((await toolNamed('Order lookup')).status).toBe('active')
      await confirm.click()
      await row('Order lookup').waitFor({ state: 'detached' })
      expect((await toolNamed('Order lookup')).status).toBe('archived')
      await page.getByLabel('Status', { exact: true }).selectOption('archived')
      await row('Order lookup').locator('.badge', { hasText: 'archived' }).waitFor()
      await row('Order lookup').getByRole('button', { name: 'Restore tool Order lookup' }).click()
      await row('Order lookup').waitFor({ state: 'detached' })
      expect((await toolNamed('Order lookup')).status).toBe('active')
      await page.getByLabel('Status', { exact: true }).selectOption('active')
      await row('Order lookup').locator('.badge', { hasText: 'active' }).waitFor()
      expect(consoleBrowser.dialogs).toEqual([])
    },
  )

  step("a transfer from the metadata's fields: its defaults, destinations as rows, stored as filled", async () => {
    const form = await openNewTool('transfer_call')
    await form.getByLabel('Name', { exact: true }).fill('Transfer to a team')
    expect(await form.getByLabel('Destination source').inputValue()).toBe('static')
    expect(await form.getByLabel('Ring timeout (seconds)').inputValue()).toBe('30')
    await form.getByLabel('Destination source').selectOption('llm_choice')
    // none given: the API's 422 is the list's own
    await form.getByRole('button', { name: 'Create tool' }).click()
    const destinations = form.getByRole('group', { name: 'Destinations' })
    await destinations.locator('.field-error', { hasText: 'llm_choice needs at least one destination' }).waitFor()
    await form.getByRole('button', { name: 'Add destination' }).click()
    await form.getByLabel('Destination 1 name').fill('billing')
    await form.getByLabel('Destination 1 number or SIP URI').fill('201')
    await form.getByLabel('Destination 1 description').fill('Invoices and refunds')
    await form.getByRole('button', { name: 'Add destination' }).click()
    await form.getByLabel('Destination 2 name').fill('sales')
    await form.getByLabel('Destination 2 number or SIP URI').fill('202')
    await form.getByRole('button', { name: 'Create tool' }).click()
    await page.getByRole('status').filter({ hasText: 'Created “Transfer to a team”.' }).waitFor()
    const created = await toolNamed('Transfer to a team')
    expect((await t.request('GET', `${TOOLS}${created.tool_uuid}`)).body.definition).toEqual({
      schema_version: 1,
      type: 'transfer_call',
      config: {
        destination_source: 'llm_choice',
        destination: null,
        destinations: [
          { name: 'billing', destination: '201', description: 'Invoices and refunds' },
          { name: 'sales', destination: '202', description: null },
        ],
        messageType: 'none',
        customMessage: null,
        audioRecordingId: null,
        timeout: 30,
      },
    })
  })

  step(
    "a message's recording picked among the organization's by its name (a link to add one while there is none); its id saved",
    async () => {
      let form = await openNewTool('end_call')
      const picker = () => form.getByLabel('Audio recording', { exact: true })
      expect(await picker().locator('option').allTextContents()).toEqual(['None'])
      await form.getByText('No recording in this organization yet.').waitFor()
      expect(await form.getByRole('link', { name: 'Add a recording' }).getAttribute('href')).toBe('#/recordings')
      await form.getByRole('button', { name: 'Close' }).click()
      await form.waitFor({ state: 'detached' })

      const made = await createRecording(t, 'goodbye_tone', toneWav(440, 16_000, 300), { transcript: 'Goodbye.' })
      expect(made.status, made.text).toBe(200)
      await page.reload()
      await page.getByRole('heading', { level: 1, name: 'Tools and credentials' }).waitFor()
      form = await openNewTool('end_call')
      await picker().locator('option', { hasText: 'goodbye_tone' }).waitFor({ state: 'attached' })
      expect(await picker().locator('option').allTextContents()).toEqual(['None', 'goodbye_tone'])
      expect(await form.getByText('No recording in this organization yet.').count()).toBe(0)
      await form.getByLabel('Name', { exact: true }).fill('Hang up with a tone')
      await form.getByLabel('Message type', { exact: true }).selectOption('audio')
      await picker().selectOption({ label: 'goodbye_tone' })
      await inspect('recording-picker')
      await form.getByRole('button', { name: 'Create tool' }).click()
      await page.getByRole('status').filter({ hasText: 'Created “Hang up with a tone”.' }).waitFor()
      const created = await toolNamed('Hang up with a tone')
      const stored = (await t.request('GET', `${TOOLS}${created.tool_uuid}`)).body.definition.config
      expect(stored).toMatchObject({ messageType: 'audio', audioRecordingId: 'goodbye_tone' })

      await row('Hang up with a tone').getByRole('button', { name: 'Edit tool Hang up with a tone' }).click()
      form = toolForm('Edit “Hang up with a tone”')
      expect(await picker().inputValue()).toBe('goodbye_tone')
      await form.getByRole('button', { name: 'Close' }).click()
      await form.waitFor({ state: 'detached' })
    },
  )

  step(
    'MCP servers: what one offers shown in its row, an unreachable one\'s error as text; "List again" keeps the last list',
    async () => {
      const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
      const closedUrl = `http://127.0.0.1:${closed.port}/mcp`
      void closed.stop(true)
      for (const [name, url] of [
        ['Ledger server', mcp.url('well-behaved')],
        ['Gone server', closedUrl],
      ]) {
        const form = await openNewTool('mcp')
        await form.getByLabel('Name', { exact: true }).fill(name)
        expect(await form.getByLabel('Transport').inputValue()).toBe('streamable_http')
        await form.getByLabel('URL', { exact: true }).fill(url)
        await form.getByRole('button', { name: 'Create tool' }).click()
        await page
          .getByRole('status')
          .filter({ hasText: `Created “${name}”.` })
          .waitFor()
      }
      const offers = row('Ledger server').getByRole('list', { name: 'Tools Ledger server offers' })
      expect(await offers.getByRole('listitem').allTextContents()).toEqual(['add Adds two numbers'])
      const gone = await toolNamed('Gone server')
      expect(gone.definition.config.discovery_error).toBeTruthy()
      expect(await row('Gone server').locator('.field-error').textContent()).toBe(
        gone.definition.config.discovery_error,
      )
      expect(await row('Gone server').getByText('No tool listed.').count()).toBe(1)
      await inspect('mcp-rows')

      // the server goes away: listed again, its error shows and the last list stays
      mcp.stop()
      const requests = recordRequests()
      try {
        await row('Ledger server').getByRole('button', { name: 'List again: Ledger server' }).click()
        await row('Ledger server').getByRole('status').filter({ hasText: 'the last list stays' }).waitFor()
        const ledger = await toolNamed('Ledger server')
        expect(requests.changes().map((request) => request.line)).toEqual([
          `POST ${TOOLS}${ledger.tool_uuid}/mcp/refresh`,
        ])
        expect(ledger.definition.config.discovery_error).toBeTruthy()
        expect(await row('Ledger server').locator('p.field-error').textContent()).toBe(
          ledger.definition.config.discovery_error,
        )
        expect(await offers.getByRole('listitem').allTextContents()).toEqual(['add Adds two numbers'])
      } finally {
        requests.stop()
      }
    },
  )

  step(
    'credentials: one of another type added, renamed, its secret replaced, deleted after a confirmation; no secret in the page',
    async () => {
      const section = page.getByRole('region', { name: 'Credentials' })
      const add = section.getByRole('form', { name: 'Add a credential' })
      await add.getByLabel('Credential name').fill('Billing key')
      await add.getByLabel('Credential type').selectOption('api_key')
      expect(await add.getByLabel('API key', { exact: true }).getAttribute('type')).toBe('password')
      await add.getByLabel('API key', { exact: true }).fill('sk-billing-secret-42')
      await add.getByLabel('Header name').fill('X-Billing-Key')
      await leavingAsksAndStays(page)
      expect(await add.getByLabel('Credential name').inputValue()).toBe('Billing key')
      expect(await add.getByLabel('API key', { exact: true }).inputValue()).toBe('sk-billing-secret-42')
      const requests = recordRequests()
      try {
        await add.getByRole('button', { name: 'Add credential' }).click()
        const credentialRow = section.getByRole('row').filter({ hasText: 'Billing key' })
        await credentialRow.waitFor()
        expect(await credentialRow.textContent()).toContain('API key header')
        expect(requests.changes()[0].body).toEqual({
          name: 'Billing key',
          credential_type: 'api_key',
          credential_data: { api_key: 'sk-billing-secret-42', header_name: 'X-Billing-Key' },
        })
        expect(await add.getByLabel('API key', { exact: true }).inputValue()).toBe('')
        // added: the form is emptied (its type kept for the next one), and leaving asks nothing
        await leavingDoesNotAsk(page)
        await go('/tools', 'Tools and credentials')

        await credentialRow.getByRole('button', { name: 'Edit credential Billing key' }).click()
        const edit = section.getByRole('form', { name: 'Edit credential “Billing key”' })
        expect(await edit.getByLabel('API key', { exact: true }).inputValue()).toBe('')
        await edit.getByLabel('Credential name').fill('Billing key (prod)')
        await leavingAsksAndStays(page)
        expect(await edit.getByLabel('Credential name').inputValue()).toBe('Billing key (prod)')
        requests.sent.length = 0
        await edit.getByRole('button', { name: 'Save credential' }).click()
        await edit.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
        // renamed only: the stored secret is kept, nothing of it sent
        expect(requests.changes().map((request) => request.body)).toEqual([{ name: 'Billing key (prod)' }])
        await edit.getByLabel('API key', { exact: true }).fill('sk-billing-replaced-77')
        requests.sent.length = 0
        await edit.getByRole('button', { name: 'Save credential' }).click()
        await waitFor('the PUT', () => requests.changes().length === 1, 5_000, 20)
        await edit.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
        expect(requests.changes()[0].body).toEqual({ credential_data: { api_key: 'sk-billing-replaced-77' } })
        const html = await page.content()
        for (const secret of ['sk-billing-secret-42', 'sk-billing-replaced-77', 'crm-token-secret-1'])
          expect(html).not.toContain(secret)
        // saved, the secret's field emptied: leaving asks nothing
        await leavingDoesNotAsk(page)
        await go('/tools', 'Tools and credentials')
      } finally {
        requests.stop()
      }
      const stored = (await t.request('GET', '/api/v1/credentials')).body.find(
        (item: any) => item.name === 'Billing key (prod)',
      )
      expect(stored.credential_type).toBe('api_key')
      await inspect('credentials')

      const renamed = section.getByRole('row').filter({ hasText: 'Billing key (prod)' })
      await renamed.getByRole('button', { name: 'Delete credential Billing key (prod)' }).click()
      const confirm = renamed.getByRole('button', { name: 'Delete “Billing key (prod)”' })
      await confirm.waitFor()
      expect((await t.request('GET', `/api/v1/credentials/${stored.uuid}`)).status).toBe(200)
      await confirm.click()
      await renamed.waitFor({ state: 'detached' })
      expect((await t.request('GET', `/api/v1/credentials/${stored.uuid}`)).status).toBe(404)

      // one deleted behind the page's back: the API's refusal is shown with its message
      const doomed = await t.request('POST', '/api/v1/credentials', {
        body: {
          name: 'Doomed',
          credential_type: 'custom_header',
          credential_data: { header_name: 'X-A', header_value: 'b' },
        },
      })
      await page.reload()
      const doomedRow = section.getByRole('row').filter({ hasText: 'Doomed' })
      await doomedRow.waitFor()
      expect((await t.request('DELETE', `/api/v1/credentials/${doomed.body.uuid}`)).status).toBe(200)
      await doomedRow.getByRole('button', { name: 'Delete credential Doomed' }).click()
      await doomedRow.getByRole('button', { name: 'Delete “Doomed”' }).click()
      expect(await doomedRow.getByRole('alert').textContent()).toBe('Credential not found')

      // one a tool sends: the API's 409 names the tool, and the credential stays
      const crmRow = section.getByRole('row').filter({ hasText: 'CRM token' })
      await crmRow.getByRole('button', { name: 'Delete credential CRM token' }).click()
      await crmRow.getByRole('button', { name: 'Delete “CRM token”' }).click()
      const refusal = await crmRow.getByRole('alert').textContent()
      expect(refusal).toContain("Credential 'CRM token' cannot be deleted while it is named by tool 'Order lookup'")
      expect((await t.request('GET', '/api/v1/credentials')).body.map((item: any) => item.name)).toContain('CRM token')
    },
  )

  step('allowed hosts: a host the API refuses shown next to it; two set, then any host again', async () => {
    const form = page.getByRole('form', { name: 'Allowed hosts' })
    const region = page.getByRole('region', { name: 'Allowed hosts' })
    expect(await region.getByText('Now: any host').count()).toBe(1)
    await form.getByLabel('Any host').uncheck()
    await form.getByRole('button', { name: 'Add a host' }).click()
    await form.getByLabel('Host 1', { exact: true }).fill('api.example.com')
    await form.getByRole('button', { name: 'Add a host' }).click()
    await form.getByLabel('Host 2', { exact: true }).fill('not a host!')
    await leavingAsksAndStays(page)
    expect(await form.getByLabel('Host 1', { exact: true }).inputValue()).toBe('api.example.com')
    await form.getByRole('button', { name: 'Save allowed hosts' }).click()
    await fieldError(form, 'Host 2').waitFor()
    expect(await form.getByLabel('Host 2', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect(await fieldError(form, 'Host 1').count()).toBe(0)
    expect((await t.request('GET', '/api/v1/organizations/tool-settings')).body.allowed_hosts).toBeNull()

    await form.getByLabel('Host 2', { exact: true }).fill('*.Example.org:8443')
    await form.getByRole('button', { name: 'Save allowed hosts' }).click()
    await form.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    expect((await t.request('GET', '/api/v1/organizations/tool-settings')).body.allowed_hosts).toEqual([
      'api.example.com',
      '*.example.org:8443',
    ])
    await region.getByText('Now: api.example.com, *.example.org:8443').waitFor()
    await inspect('allowed-hosts')
    // saved (the host as the API stored it, in lower case): leaving asks nothing
    expect(await form.getByLabel('Host 2', { exact: true }).inputValue()).toBe('*.example.org:8443')
    await leavingDoesNotAsk(page)
    await go('/tools', 'Tools and credentials')

    await form.getByLabel('Any host').check()
    await form.getByRole('button', { name: 'Save allowed hosts' }).click()
    await region.getByText('Now: any host').waitFor()
    expect((await t.request('GET', '/api/v1/organizations/tool-settings')).body.allowed_hosts).toBeNull()
  })

  step(
    "hostile names and descriptions render as text; the list is the organization's own, never another's",
    async () => {
      const name = `Lookup ${hostile('tool-name')}`
      const made = await t.request('POST', TOOLS, {
        body: { name, description: hostile('tool-description'), definition: { type: 'calculator' } },
      })
      expect(made.status, made.text).toBe(200)
      await page.reload()
      await page.getByLabel('Status', { exact: true }).selectOption('active,archived')
      await row(name).waitFor()
      expect(await row(name).locator('td:first-child .muted').textContent()).toBe(hostile('tool-description'))
      expect(await page.locator('main img, main script').count()).toBe(0)
      expect(consoleBrowser.xssRan).toEqual([])
      expect(consoleBrowser.cspViolations).toEqual([])
      const shown = await page.locator('tbody td:first-child > span.text').allTextContents()
      expect([...shown].sort()).toEqual((await listed('active,archived')).map((tool) => tool.name).sort())
      expect(shown).not.toContain(THEIR_TOOL)
      expect(await page.content()).not.toContain(THEIR_TOOL)
    },
  )

  step("a trigger key: no Tools page, nothing of the organization's tools read", async () => {
    const context = await consoleBrowser.browser.newContext()
    try {
      const key = t.newOrg('default', 'trigger').key
      const signIn = await context.request.post(`${base}/api/v1/auth/session`, { data: { api_key: key } })
      expect(signIn.status()).toBe(200)
      const triggerPage = await context.newPage()
      const asked: string[] = []
      triggerPage.on('request', (request) => asked.push(new URL(request.url()).pathname))
      await triggerPage.goto(`${base}/#/tools`)
      await triggerPage.getByText('This page does not exist, or this key may not see it.').waitFor()
      expect(await triggerPage.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual([
        'Overview',
        'Runs',
      ])
      expect(
        asked.filter((path) => path.startsWith('/api/v1/tools') || path.startsWith('/api/v1/credentials')),
      ).toEqual([])
      expect(await triggerPage.content()).not.toContain('Order lookup')
      for (const path of [TOOLS, '/api/v1/credentials', '/api/v1/organizations/tool-settings'])
        expect((await t.request('GET', path, { key })).status).toBe(403)
    } finally {
      await context.close()
    }
  })
})
