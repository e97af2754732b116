import { describe, expect } from 'bun:test'
import type { Page } from 'playwright-core'
import { type ConsoleBrowser, consoleOnBinarySuite, hostile } from '../support/console-browser'
import type { FakeModels } from '../support/fake-models'
import type { HttpTestApp } from '../support/http-app'
import { httpClient, MIME, uploadDocument } from '../support/knowledge'
import { waitFor } from '../support/wait'

/**
 * The knowledge base's page in a real browser against the compiled binary: files added from the browser (refused in
 * the page, the API's errors in place, without and with an embeddings model: the fake model server's), followed to
 * completed or failed without a reload, a search, processing again under another model, deletion, hostile names, and
 * another organization's documents never shown. Photographed into test-artifacts/console/knowledge/.
 */

let t: HttpTestApp
let models: FakeModels
let consoleBrowser: ConsoleBrowser
let page: Page
let base: string
let other: { key: string }

const DOCS = '/api/v1/knowledge-base/documents'
const OTHER_FILENAME = 'other-organization-prices.txt'
const REFUNDS = [
  'Refund policy: a refund is possible within 30 days of purchase with the receipt.',
  'Opening hours: the shop opens at nine and closes at six from Monday to Saturday.',
  'Shipping takes five working days, and parcels travel with a tracked courier.',
].join('\n')

const { inspect, step, go } = consoleOnBinarySuite('knowledge', async (started) => {
  ;({ t, models, consoleBrowser, page, base } = started)
  // another organization's document, complete: the page must never list it
  other = t.newOrg('other')
  const theirs = await uploadDocument(
    httpClient(t, base),
    other.key,
    OTHER_FILENAME,
    new TextEncoder().encode('Their secret prices.'),
    MIME.txt,
    'full_document',
  )
  expect(theirs.status, theirs.text).toBe(200)
  await documentCompleted(theirs.body.document_uuid, other.key)
})

async function documentCompleted(uuid: string, key = t.adminKey) {
  await waitFor(
    `document ${uuid} processed`,
    async () =>
      ['completed', 'failed'].includes((await t.request('GET', `${DOCS}/${uuid}`, { key })).body.processing_status),
    20_000,
    50,
  )
}

/** The organization's documents as the API lists them. */
async function listed(key = t.adminKey, status?: string): Promise<any[]> {
  const response = await t.request('GET', `${DOCS}?limit=100${status ? `&status=${status}` : ''}`, { key })
  expect(response.status, response.text).toBe(200)
  return response.body.documents
}

const byName = async (filename: string) => (await listed()).find((document) => document.filename === filename)

/** The requests the page sends until `stop()`, as `METHOD path`. */
function recordRequests() {
  const sent: string[] = []
  const listen = (request: { method(): string; url(): string }) => {
    sent.push(`${request.method()} ${new URL(request.url()).pathname}`)
  }
  page.on('request', listen)
  return { sent, stop: () => page.off('request', listen) }
}

const text = (content: string) => Buffer.from(content)

/** Chooses files in the page's file input (name, bytes and the type the browser would give them). */
async function choose(files: { name: string; content: Buffer; mimeType?: string }[]) {
  await page
    .getByLabel('Files', { exact: true })
    .setInputFiles(
      files.map((file) => ({ name: file.name, mimeType: file.mimeType ?? 'text/plain', buffer: file.content })),
    )
}

const addButton = () => page.getByRole('button', { name: 'Upload and add' })
/** A chosen file's line in the form. */
const chosen = (name: string) =>
  page.getByRole('list', { name: 'Chosen files' }).getByRole('listitem').filter({ hasText: name })
/** A document's row in the list, by its file name. */
const row = (filename: string) =>
  page.getByRole('row').filter({ has: page.locator(NAME).getByText(filename, { exact: true }) })
/** A row's file name (a failed one's first cell holds its error too). */
const NAME = 'td:first-child > span.text'
const FILE_NAMES = `tbody ${NAME}`
/** The texts of a document's row, cell by cell (the actions' cell left out; its error after a failed one's name). */
const cells = async (filename: string) => (await row(filename).getByRole('cell').allTextContents()).slice(0, 7)
const badgeOf = (filename: string, state: string) => row(filename).locator('.badge', { hasText: state })

/** Marks the document, so a test can tell later that the page was not loaded again. */
const markPage = () => page.evaluate('window.notReloaded = true')
const stillMarked = () => page.evaluate('window.notReloaded === true')

/** The default model configuration's embeddings: the fake model server's `model`. */
async function useEmbeddings(model: string) {
  const connection = (await t.request('GET', '/api/v1/organizations/provider-connections')).body.connections.find(
    (item: { name: string }) => item.name === 'Fake',
  )
  const configuration = (await t.request('GET', '/api/v1/organizations/model-configurations')).body.configurations.find(
    (item: { is_default: boolean }) => item.is_default,
  )
  const saved = await t.request('PUT', `/api/v1/organizations/model-configurations/${configuration.uuid}`, {
    body: { embeddings: { provider_connection_uuid: connection.uuid, settings: { model } } },
  })
  expect(saved.status, saved.text).toBe(200)
}

async function search(query: string) {
  const form = page.getByRole('form', { name: 'Search the documents' })
  await form.getByLabel('Question').fill(query)
  await form.getByRole('button', { name: 'Search' }).click()
}

describe('the knowledge page', () => {
  step(
    "after Tools in the nav; no document yet: says what one is for and how to add one, another organization's not listed",
    async () => {
      await go('/knowledge', 'Knowledge base')
      const nav = await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()
      expect(nav.slice(nav.indexOf('Tools'), nav.indexOf('Tools') + 2)).toEqual(['Tools', 'Knowledge'])
      expect(await page.getByRole('link', { name: 'Knowledge' }).getAttribute('aria-current')).toBe('page')
      await page.getByText('No document yet.').waitFor()
      const empty = (await page.locator('.empty').first().textContent()) ?? ''
      expect(empty).toContain('A document is what an agent consults while it talks')
      expect(empty).toContain('Add a file above')
      expect(await page.content()).not.toContain(OTHER_FILENAME)
      // it exists, in its own organization
      expect((await listed(other.key)).map((document) => document.filename)).toEqual([OTHER_FILENAME])
      await inspect('empty')
    },
  )

  step(
    'a file of a type the knowledge base does not read is stopped in the page: its reason, nothing uploaded',
    async () => {
      const requests = recordRequests()
      try {
        await choose([
          { name: 'photo.png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]), mimeType: 'image/png' },
          { name: 'letter.doc', content: text('old word'), mimeType: 'application/msword' },
        ])
        expect(await chosen('photo.png').textContent()).toContain(
          'Not added: a .png file is not a type the knowledge base reads; it reads .pdf, .docx, .txt, .md, .markdown, .csv, .json.',
        )
        expect(await chosen('letter.doc').textContent()).toContain('(save a .doc as .docx)')
        await addButton().click()
        await page.getByRole('alert').filter({ hasText: 'None of these files can be added.' }).waitFor()
        expect(requests.sent.filter((request) => request.startsWith('POST ') || request.startsWith('PUT '))).toEqual([])
      } finally {
        requests.stop()
      }
    },
  )

  step(
    'no embeddings model: chunked is refused at the mode with where to add one; whole document adds the same upload',
    async () => {
      const requests = recordRequests()
      try {
        await choose([{ name: 'hours.txt', content: text('The shop opens at nine and closes at six.') }])
        expect(await page.getByLabel('Retrieval mode').inputValue()).toBe('chunked')
        await addButton().click()
        const modeField = page.locator('.field', { has: page.getByLabel('Retrieval mode') })
        await modeField.locator('.field-error').waitFor()
        expect(await modeField.locator('.field-error').textContent()).toBe(
          'chunked documents need embeddings: no embeddings model is configured: add an `embeddings` section to the default model configuration, or use full_document',
        )
        expect(await page.getByLabel('Retrieval mode').getAttribute('aria-invalid')).toBe('true')
        expect(
          await page.getByRole('link', { name: 'add one to the default model configuration' }).getAttribute('href'),
        ).toBe('#/models')
        expect(await chosen('hours.txt').textContent()).toContain('Uploaded, not added yet')
        expect(await listed()).toEqual([])
        await inspect('no-embeddings-model')

        await page.getByLabel('Retrieval mode').selectOption('full_document')
        await addButton().click()
        await chosen('hours.txt').getByText('Added: it is processed in the list below').waitFor()
        await badgeOf('hours.txt', 'completed').waitFor({ timeout: 20_000 })
        // the file went up once: the second try only asked for processing again
        expect(requests.sent.filter((request) => request.startsWith('POST ') || request.startsWith('PUT '))).toEqual([
          'POST /api/v1/knowledge-base/upload-url',
          expect.stringMatching(/^PUT \//),
          'POST /api/v1/knowledge-base/process-document',
          'POST /api/v1/knowledge-base/process-document',
        ])
      } finally {
        requests.stop()
      }
      const stored = await byName('hours.txt')
      expect(stored).toMatchObject({ retrieval_mode: 'full_document', processing_status: 'completed' })
      expect(await cells('hours.txt')).toEqual([
        'hours.txt',
        'completed',
        'whole document',
        '—',
        '—',
        `${stored.docling_metadata.characters} characters · ${stored.file_size_bytes} B`,
        expect.any(String),
      ])
    },
  )

  step(
    'with an embeddings model: two files at once, each with its progress, followed to completed without a reload',
    async () => {
      await useEmbeddings('fake-embed')
      await markPage()
      const requests = recordRequests()
      const prices = 'product,price\nwidget,12 euros\ngadget,30 euros\n'
      try {
        await choose([
          { name: 'refunds.txt', content: text(REFUNDS) },
          {
            name: 'prices.csv',
            content: text(prices),
            mimeType: 'text/csv',
          },
        ])
        await page.getByLabel('Retrieval mode').selectOption('chunked')
        await addButton().click()
        for (const name of ['refunds.txt', 'prices.csv']) {
          await chosen(name).getByText('Added: it is processed in the list below').waitFor()
          expect(
            await page.getByLabel(`Upload of ${name}`).evaluate((bar) => (bar as unknown as { value: number }).value),
          ).toBe(1)
        }
        expect(requests.sent.filter((request) => request.startsWith('PUT ')).length).toBe(2)
      } finally {
        requests.stop()
      }
      for (const name of ['refunds.txt', 'prices.csv']) await badgeOf(name, 'completed').waitFor({ timeout: 20_000 })
      expect(await stillMarked()).toBe(true)
      for (const [name, content] of [
        ['refunds.txt', REFUNDS],
        ['prices.csv', prices],
      ]) {
        const stored = await byName(name)
        expect(stored.file_size_bytes).toBe(Buffer.byteLength(content))
        expect(stored.total_chunks).toBeGreaterThan(0)
        expect((await cells(name)).slice(0, 5)).toEqual([
          name,
          'completed',
          'chunked',
          String(stored.total_chunks),
          'fake-embed',
        ])
      }
    },
  )

  step(
    'the list is read again while a document is processing, and no more once none is, or once the page is left',
    async () => {
      const held = Promise.withResolvers<void>()
      models.embeddings.queue(async () => {
        await held.promise
        return {}
      })
      await choose([
        { name: 'slow.md', content: text('# Slow\n\nThis one waits for its embeddings.\n'), mimeType: 'text/markdown' },
      ])
      await addButton().click()
      await badgeOf('slow.md', 'processing').waitFor({ timeout: 10_000 })
      const reads = recordRequests()
      try {
        const listReads = () => reads.sent.filter((request) => request === `GET ${DOCS}`).length
        await waitFor('two more reads of the list', () => listReads() >= 2, 6_000, 50)
        // left while it is still processing: nothing more is read
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tools' }).click()
        await page.getByRole('heading', { level: 1, name: 'Tools and credentials' }).waitFor()
        const whenLeft = listReads()
        await page.waitForTimeout(4_500)
        expect(listReads()).toBe(whenLeft)
        held.resolve()
        await documentCompleted((await byName('slow.md')).document_uuid)
        await go('/knowledge', 'Knowledge base')
        await badgeOf('slow.md', 'completed').waitFor()
        // nothing pending or processing: the one read of the page, then none
        const afterOpening = listReads()
        await page.waitForTimeout(4_500)
        expect(listReads()).toBe(afterOpening)
      } finally {
        held.resolve()
        reads.stop()
      }
    },
  )

  step(
    "errors in place: an empty file stopped in the page, the API's refusal on its file's line, a duplicate failed naming the other; the status filter",
    async () => {
      const longName = `${'n'.repeat(300)}.txt`
      const refusal = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
        body: { filename: longName, mime_type: 'text/plain' },
      })
      expect(refusal.status).toBe(422)
      const requests = recordRequests()
      try {
        await choose([
          { name: 'empty.txt', content: Buffer.alloc(0) },
          { name: longName, content: text('A name too long.') },
          { name: 'refunds-copy.txt', content: text(REFUNDS) },
        ])
        expect(await chosen('empty.txt').textContent()).toContain('Not added: the file is empty.')
        await addButton().click()
        await chosen('refunds-copy.txt').getByText('Added: it is processed in the list below').waitFor()
        expect(await chosen(longName).getByRole('alert').textContent()).toBe(`filename: ${refusal.body.detail[0].msg}`)
        expect(await chosen(longName).getByRole('status').textContent()).toBe('Not added')
        // the empty file was never sent, the one the API refused got no further than its upload URL
        expect(requests.sent.filter((request) => request.startsWith('POST ') || request.startsWith('PUT '))).toEqual([
          'POST /api/v1/knowledge-base/upload-url',
          'POST /api/v1/knowledge-base/upload-url',
          expect.stringMatching(/^PUT \//),
          'POST /api/v1/knowledge-base/process-document',
        ])
      } finally {
        requests.stop()
      }
      await badgeOf('refunds-copy.txt', 'failed').waitFor({ timeout: 20_000 })
      const original = await byName('refunds.txt')
      expect(await row('refunds-copy.txt').locator('.field-error').textContent()).toBe(
        `the same file as document ${original.document_uuid} (refunds.txt)`,
      )
      expect((await byName('refunds-copy.txt')).processing_error).toBe(
        `the same file as document ${original.document_uuid} (refunds.txt)`,
      )
      await inspect('list-completed-and-failed')

      await page.getByLabel('Status').selectOption('failed')
      await page.getByText('1 document, page 1 of 1').waitFor()
      expect(page.url()).toEndWith('#/knowledge?status=failed')
      const failedRows = await page.locator(FILE_NAMES).allTextContents()
      expect(failedRows).toEqual((await listed(t.adminKey, 'failed')).map((document) => document.filename))
      expect(failedRows).toEqual(['refunds-copy.txt'])
      await page.getByLabel('Status').selectOption('')
      await row('hours.txt').waitFor()
    },
  )

  step('a search finds the passage with its similarity, as the API answers it to an agent', async () => {
    const question = 'refund within 30 days'
    await search(question)
    const found = page.getByRole('list', { name: 'Passages found' }).getByRole('listitem')
    await found.first().waitFor()
    const answer = await t.request('POST', '/api/v1/knowledge-base/search', { body: { query: question, limit: 5 } })
    expect(answer.status, answer.text).toBe(200)
    expect(await found.count()).toBe(answer.body.chunks.length)
    const best = answer.body.chunks[0]
    expect(best.filename).toBe('refunds.txt')
    const first = (await found.first().textContent()) ?? ''
    expect(first).toContain('refunds.txt')
    expect(first).toContain(`similarity ${best.similarity.toFixed(3)}`)
    expect(first).toContain('Refund policy: a refund is possible within 30 days')
    expect(await page.getByRole('list', { name: 'Documents not searched' }).count()).toBe(0)
    await inspect('search')
  })

  step(
    'another embeddings model: the search names what it left out and why; processed again, the document is found again',
    async () => {
      await useEmbeddings('fake-embed-2')
      await search('refund within 30 days')
      const left = page.getByRole('list', { name: 'Documents not searched' })
      await left.waitFor()
      expect(await left.getByRole('listitem').filter({ hasText: 'refunds.txt' }).textContent()).toBe(
        'refunds.txt: embedded with model fake-embed, not fake-embed-2 (the model this search uses): process it again to search it',
      )
      expect(await page.getByRole('list', { name: 'Passages found' }).count()).toBe(0)

      await row('refunds.txt').getByRole('button', { name: 'Process again: refunds.txt' }).click()
      expect(await row('refunds.txt').getByLabel('Process as').inputValue()).toBe('chunked')
      await row('refunds.txt').getByRole('button', { name: 'Process “refunds.txt” again' }).click()
      await row('refunds.txt').getByRole('cell', { name: 'fake-embed-2', exact: true }).waitFor({ timeout: 20_000 })
      await badgeOf('refunds.txt', 'completed').waitFor()
      expect(await byName('refunds.txt')).toMatchObject({
        processing_status: 'completed',
        embedding_model: 'fake-embed-2',
      })

      await search('refund within 30 days')
      await page.getByRole('list', { name: 'Passages found' }).waitFor()
      expect(
        await page.getByRole('list', { name: 'Passages found' }).getByRole('listitem').first().textContent(),
      ).toContain('refunds.txt')
      expect(await left.getByRole('listitem').filter({ hasText: 'refunds.txt' }).count()).toBe(0)
      expect(await left.getByRole('listitem').filter({ hasText: 'prices.csv' }).count()).toBe(1)
    },
  )

  step('delete asks in the page first, then the document leaves the list and the API', async () => {
    const prices = await byName('prices.csv')
    await row('prices.csv').getByRole('button', { name: 'Delete prices.csv' }).click()
    const confirm = row('prices.csv').getByRole('button', { name: 'Delete “prices.csv” and its chunks' })
    await confirm.waitFor()
    // asked, not done
    expect((await t.request('GET', `${DOCS}/${prices.document_uuid}`)).status).toBe(200)
    await confirm.click()
    await row('prices.csv').waitFor({ state: 'detached' })
    expect((await t.request('GET', `${DOCS}/${prices.document_uuid}`)).status).toBe(404)
    expect(await byName('prices.csv')).toBeUndefined()
    expect(consoleBrowser.dialogs).toEqual([])
  })

  step(
    "a hostile file name and the error naming it render as text; another organization's document never listed",
    async () => {
      const name = `${hostile('knowledge-filename')}.txt`
      const client = httpClient(t, base)
      const content = new TextEncoder().encode('Hostile names are only text.')
      const first = await uploadDocument(client, t.adminKey, name, content, MIME.txt, 'full_document')
      expect(first.status, first.text).toBe(200)
      await documentCompleted(first.body.document_uuid)
      const copy = await uploadDocument(client, t.adminKey, 'copy.txt', content, MIME.txt, 'full_document')
      expect(copy.status, copy.text).toBe(200)
      await documentCompleted(copy.body.document_uuid)
      // the page shows nothing pending: it reads the list again when loaded again
      await page.reload()
      await row(name).waitFor()
      expect(await row('copy.txt').locator('.field-error').textContent()).toBe(
        `the same file as document ${first.body.document_uuid} (${name})`,
      )
      expect(await page.locator('main img, main script').count()).toBe(0)
      expect(consoleBrowser.xssRan).toEqual([])
      expect(consoleBrowser.cspViolations).toEqual([])
      const shown = await page.locator(FILE_NAMES).allTextContents()
      expect(shown.sort()).toEqual((await listed()).map((document) => document.filename).sort())
      expect(shown).not.toContain(OTHER_FILENAME)
      expect(await page.content()).not.toContain(OTHER_FILENAME)
    },
  )
})
