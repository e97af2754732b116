import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { processQueuedDocuments } from '../../src/knowledge/processing'
import { createTestApp, type TestApp } from '../support/app'
import { callTool, say, startFakeModels, type FakeModels } from '../support/fake-models'
import {
  docxWithParagraphs,
  inProcessClient,
  MIME,
  pdfWithMillionObjects,
  pdfWithPages,
  uploadDocument,
  zipBombDocx,
} from '../support/knowledge'

/**
 * The knowledge base end to end through HTTP: uploads over the signed URL, background processing (drained here with
 * processQueuedDocuments), search, retrieval by agents in text chat, and hostile files. Embeddings and the LLM are
 * the fake OpenAI-compatible server (deterministic word-bucket vectors).
 */

let t: TestApp
let models: FakeModels
let client: ReturnType<typeof inProcessClient>
let other: { organizationId: number; key: string }

const DOCS = '/api/v1/knowledge-base/documents'

async function post(path: string, body: unknown, key = t.adminKey) {
  const response = await t.request('POST', path, { key, body })
  expect(response.status, response.text).toBe(200)
  return response.body
}

async function configureModels(key: string) {
  const connection = (
    await post(
      '/api/v1/organizations/provider-connections',
      { name: 'Fake', provider: 'openai', base_url: models.baseUrl },
      key,
    )
  ).uuid
  await post(
    '/api/v1/organizations/model-configurations',
    {
      name: 'Default',
      llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } },
      embeddings: { provider_connection_uuid: connection, settings: { model: 'fake-embed' } },
    },
    key,
  )
  return connection
}

async function upload(
  filename: string,
  bytes: Uint8Array,
  mime: string,
  { key = t.adminKey, mode = 'chunked' as 'chunked' | 'full_document' } = {},
) {
  const response = await uploadDocument(client, key, filename, bytes, mime, mode)
  expect(response.status, response.text).toBe(200)
  return response.body.document_uuid as string
}

const document = async (uuid: string, key = t.adminKey) => (await t.request('GET', `${DOCS}/${uuid}`, { key })).body

beforeAll(async () => {
  t = createTestApp()
  client = inProcessClient(t)
  models = startFakeModels()
  other = t.newOrg('other')
  await configureModels(t.adminKey)
  await configureModels(other.key)
})
afterAll(() => {
  models.stop()
  t.close()
})
beforeEach(() => models.reset())

const REFUND_PAGES = [
  'Welcome to Acme support. We answer within one business day.',
  'Refund policy: a refund is possible within 30 days of purchase with the receipt.',
]

describe('documents: upload, background processing, list, get, delete, search', () => {
  test('a PDF, a DOCX, Markdown and a CSV reach completed with chunks, embedding usage, and search finds the right one', async () => {
    const pdf = await upload('handbook.pdf', pdfWithPages(REFUND_PAGES), MIME.pdf)
    const docx = await upload(
      'shipping.docx',
      docxWithParagraphs(['Shipping takes five working days.', 'Parcels travel with DHL.']),
      MIME.docx,
    )
    const markdown = await upload(
      'hours.md',
      new TextEncoder().encode('# Opening hours\n\nThe shop opens at nine and closes at six.\n'),
      MIME.md,
    )
    const csv = await upload(
      'prices.csv',
      new TextEncoder().encode('product,price\nwidget,12 euros\ngadget,30 euros\n'),
      MIME.csv,
    )
    expect((await document(pdf)).processing_status).toBe('pending')

    expect(await processQueuedDocuments(t.ctx)).toBe(4)
    for (const uuid of [pdf, docx, markdown, csv]) {
      const row = await document(uuid)
      expect(row, JSON.stringify(row)).toMatchObject({
        processing_status: 'completed',
        processing_error: null,
        embedding_model: 'fake-embed',
        embedding_dimension: 64,
      })
      expect(row.total_chunks).toBeGreaterThan(0)
      expect(row.embedding_tokens).toBeGreaterThan(0)
    }
    expect((await document(pdf)).docling_metadata).toMatchObject({ num_pages: 2, document_type: 'pdf' })
    expect(models.requestsTo('/embeddings').every((request) => request.body.model === 'fake-embed')).toBe(true)

    const search = await post('/api/v1/knowledge-base/search', { query: 'refund within 30 days', limit: 2 })
    expect(search.chunks[0]).toMatchObject({
      document_uuid: pdf,
      filename: 'handbook.pdf',
      chunk_metadata: { page: 1, page_end: 2 },
    })
    expect(search.chunks[0].chunk_text).toContain('Refund policy')
    const markdownHit = await post('/api/v1/knowledge-base/search', { query: 'when does the shop open', limit: 1 })
    expect(markdownHit.chunks[0]).toMatchObject({
      document_uuid: markdown,
      contextualized_text: 'Opening hours\nThe shop opens at nine and closes at six.',
    })
    const csvHit = await post('/api/v1/knowledge-base/search', { query: 'gadget price', limit: 1 })
    expect(csvHit.chunks[0].chunk_text).toContain('product: gadget; price: 30 euros')
    const docxHit = await post('/api/v1/knowledge-base/search', {
      query: 'shipping DHL',
      limit: 1,
      document_uuids: [docx],
    })
    expect(docxHit.chunks[0].chunk_text).toContain('Shipping takes five working days.')

    const list = (await t.request('GET', `${DOCS}?limit=2`)).body
    expect(list).toMatchObject({ total: 4, limit: 2, offset: 0 })
    expect(list.documents.map((row: { document_uuid: string }) => row.document_uuid)).toEqual([csv, markdown])

    expect((await t.request('DELETE', `${DOCS}/${csv}`)).status).toBe(200)
    expect((await t.request('GET', `${DOCS}/${csv}`)).status).toBe(404)
    const afterDelete = await post('/api/v1/knowledge-base/search', { query: 'gadget price', limit: 5 })
    expect(afterDelete.chunks.map((chunk: { document_uuid: string }) => chunk.document_uuid)).not.toContain(csv)
  }, 60_000)

  test("a document completed while its organization's vectors are in memory is loaded at once, without a search", async () => {
    // The other organization's own key: its index is the one this test watches.
    const { organizationId, key } = other
    await upload('a.txt', new TextEncoder().encode('Alpha.'), MIME.txt, { key })
    await processQueuedDocuments(t.ctx)
    await post('/api/v1/knowledge-base/search', { query: 'alpha', limit: 1 }, key)
    const before = t.ctx.knowledge.vectors.status(organizationId).loadedDocuments
    const slicesBefore = t.ctx.knowledge.vectors.stats().slicesLoaded
    await upload('late.txt', new TextEncoder().encode('The late delivery fee is five euros.'), MIME.txt, { key })
    await processQueuedDocuments(t.ctx)
    expect(t.ctx.knowledge.vectors.status(organizationId).loadedDocuments).toBe(before + 1)
    expect(t.ctx.knowledge.vectors.stats().slicesLoaded).toBe(slicesBefore + 1)
    // Its search then loads nothing more.
    const found = await post('/api/v1/knowledge-base/search', { query: 'late delivery fee', limit: 1 }, key)
    expect(found.chunks[0].chunk_text).toContain('late delivery fee')
    expect(t.ctx.knowledge.vectors.stats().slicesLoaded).toBe(slicesBefore + 1)
  })

  test('another organization never sees, searches, deletes or processes the document', async () => {
    const mine = await upload('secret.txt', new TextEncoder().encode('The vault code is 4711.'), MIME.txt)
    await processQueuedDocuments(t.ctx)
    expect((await t.request('GET', `${DOCS}/${mine}`, { key: other.key })).status).toBe(404)
    expect((await t.request('DELETE', `${DOCS}/${mine}`, { key: other.key })).status).toBe(404)
    expect(
      (await t.request('GET', DOCS, { key: other.key })).body.documents.map(
        (row: { document_uuid: string }) => row.document_uuid,
      ),
    ).not.toContain(mine)
    const search = await post(
      '/api/v1/knowledge-base/search',
      { query: 'vault code', document_uuids: [mine] },
      other.key,
    )
    expect(search.chunks).toEqual([])
    expect(search.unavailable_documents).toEqual([
      { document_uuid: mine, reason: expect.stringContaining('not a document of this organization') },
    ])
    const grant = await post('/api/v1/knowledge-base/upload-url', { filename: 'x.txt', mime_type: MIME.txt })
    const stolen = await t.request('POST', '/api/v1/knowledge-base/process-document', {
      key: other.key,
      body: { document_uuid: grant.document_uuid, s3_key: grant.s3_key },
    })
    expect(stolen.status).toBe(404)
  }, 60_000)

  test('requests that cannot work are refused with the field named', async () => {
    const exe = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
      body: { filename: 'tool.exe', mime_type: 'application/octet-stream' },
    })
    expect(exe.status).toBe(422)
    expect(exe.body.detail[0].loc).toEqual(['body', 'filename'])
    const doc = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
      body: { filename: 'old.doc', mime_type: 'application/msword' },
    })
    expect(doc.body.detail[0].msg).toContain('save a .doc as .docx')
    const big = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
      body: { filename: 'a.pdf', mime_type: MIME.pdf, file_size: 26 * 1024 * 1024 },
    })
    expect(big.body.detail[0].loc).toEqual(['body', 'file_size'])
    const grant = await post('/api/v1/knowledge-base/upload-url', { filename: 'a.txt', mime_type: MIME.txt })
    const early = await t.request('POST', '/api/v1/knowledge-base/process-document', {
      body: { document_uuid: grant.document_uuid, s3_key: grant.s3_key },
    })
    expect(early.status).toBe(409)
    const wrongKey = await t.request('POST', '/api/v1/knowledge-base/process-document', {
      body: { document_uuid: grant.document_uuid, s3_key: 'knowledge_base/2/x/y.txt' },
    })
    expect(wrongKey.status).toBe(422)
    expect(wrongKey.body.detail[0].loc).toEqual(['body', 's3_key'])
    const bare = t.newOrg('no-embeddings')
    const noModel = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
      key: bare.key,
      body: { filename: 'a.txt', mime_type: MIME.txt },
    })
    await client.put(noModel.body.upload_url, new TextEncoder().encode('hello'), MIME.txt)
    const refused = await t.request('POST', '/api/v1/knowledge-base/process-document', {
      key: bare.key,
      body: { document_uuid: noModel.body.document_uuid, s3_key: noModel.body.s3_key },
    })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'retrieval_mode'],
      msg: expect.stringContaining('embeddings'),
    })
  })
})

describe('processing a document again', () => {
  test('a failed document (a duplicate) is processed again once the original is gone; org-scoped; 409 while queued', async () => {
    const text = new TextEncoder().encode('Deliveries leave the warehouse every Tuesday and Friday.')
    const original = await upload('deliveries.txt', text, MIME.txt)
    await processQueuedDocuments(t.ctx)
    const copy = await upload('deliveries-copy.txt', text, MIME.txt)
    // Queued, not processed yet: nothing to process again.
    const early = await t.request('POST', `${DOCS}/${copy}/reprocess`)
    expect(early.status).toBe(409)
    await processQueuedDocuments(t.ctx)
    expect(await document(copy)).toMatchObject({ processing_status: 'failed' })

    const theirs = await t.request('POST', `${DOCS}/${copy}/reprocess`, { key: other.key })
    expect(theirs.status).toBe(404)
    expect((await document(copy)).processing_status).toBe('failed')

    await t.request('DELETE', `${DOCS}/${original}`)
    const again = await t.request('POST', `${DOCS}/${copy}/reprocess`)
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ processing_status: 'pending', processing_error: null })
    await processQueuedDocuments(t.ctx)
    expect(await document(copy)).toMatchObject({ processing_status: 'completed', total_chunks: 1 })
    const found = await post('/api/v1/knowledge-base/search', { query: 'warehouse deliveries', document_uuids: [copy] })
    expect(found.chunks[0].document_uuid).toBe(copy)
  }, 60_000)

  test('a completed document is processed again, as full_document when asked; an unknown or deleted one is 404', async () => {
    const doc = await upload('hours.txt', new TextEncoder().encode('The shop opens at nine.'), MIME.txt)
    await processQueuedDocuments(t.ctx)
    const again = await t.request('POST', `${DOCS}/${doc}/reprocess`, { body: { retrieval_mode: 'full_document' } })
    expect(again.status).toBe(200)
    await processQueuedDocuments(t.ctx)
    expect(await document(doc)).toMatchObject({ processing_status: 'completed', retrieval_mode: 'full_document' })
    const bad = await t.request('POST', `${DOCS}/${doc}/reprocess`, { body: { retrieval_mode: 'everything' } })
    expect(bad.status).toBe(422)
    expect(bad.body.detail[0].loc).toEqual(['body', 'retrieval_mode'])
    await t.request('DELETE', `${DOCS}/${doc}`)
    expect((await t.request('POST', `${DOCS}/${doc}/reprocess`)).status).toBe(404)
    expect((await t.request('POST', `${DOCS}/${crypto.randomUUID()}/reprocess`)).status).toBe(404)
  }, 60_000)
})

describe('hostile files: a clear 4xx or failed with the reason, and the server keeps answering', () => {
  test('a 0-byte file is refused: as a declared size, and when processing is asked for', async () => {
    const sized = await t.request('POST', '/api/v1/knowledge-base/upload-url', {
      body: { filename: 'empty.pdf', mime_type: MIME.pdf, file_size: 0 },
    })
    expect(sized.status).toBe(422)
    const empty = await uploadDocument(client, t.adminKey, 'empty.pdf', new Uint8Array(0), MIME.pdf)
    expect(empty.status).toBe(400)
    expect(empty.body.detail).toContain('empty')
  })

  test('garbage claiming to be a PDF, a zip-bomb DOCX and a PDF of a million objects each end failed or completed, never stuck', async () => {
    const garbage = await upload('garbage.pdf', new TextEncoder().encode('this is not a pdf at all'), MIME.pdf)
    const bomb = await upload('bomb.docx', zipBombDocx(110 * 1024 * 1024), MIME.docx)
    const notZip = await upload('fake.docx', new TextEncoder().encode('PK but not really'), MIME.docx)
    const objects = await upload('objects.pdf', pdfWithMillionObjects(), MIME.pdf)
    const processing = processQueuedDocuments(t.ctx)
    // While extraction works in its worker, the API answers (health here): the event loop is free.
    const health = await t.request('GET', '/api/v1/health', { key: null })
    expect(health.status).toBe(200)
    await processing
    expect(await document(garbage)).toMatchObject({
      processing_status: 'failed',
      processing_error: 'the file is not a PDF (no %PDF- header)',
    })
    expect(await document(bomb)).toMatchObject({
      processing_status: 'failed',
      processing_error: expect.stringContaining('unpacks to more than'),
    })
    expect(await document(notZip)).toMatchObject({
      processing_status: 'failed',
      processing_error: expect.stringContaining('not a readable DOCX'),
    })
    const heavy = await document(objects)
    expect(['failed', 'completed']).toContain(heavy.processing_status)
    if (heavy.processing_status === 'failed') expect(heavy.processing_error).toBeTruthy()
  }, 240_000)
})

describe('retrieval in a conversation', () => {
  async function agentWithDocuments(documentUuids: string[], key = t.adminKey) {
    return t.request('POST', '/api/v1/workflow/create/definition', {
      key,
      body: {
        name: 'Support',
        workflow_definition: {
          nodes: [
            {
              id: '1',
              type: 'startCall',
              position: { x: 0, y: 0 },
              data: {
                name: 'Start',
                greeting: 'Hello!',
                prompt: 'Answer from the knowledge base.',
                document_uuids: documentUuids,
              },
            },
            { id: '2', type: 'endCall', position: { x: 200, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
          ],
          edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'done', condition: 'The caller is done' } }],
        },
      },
    })
  }

  test("the model gets the node's document chunks; the run logs results and timing; other organizations' documents are refused", async () => {
    const ours = await upload('policy.pdf', pdfWithPages([...REFUND_PAGES, 'Page three.']), MIME.pdf)
    const theirs = await upload(
      'their-policy.txt',
      new TextEncoder().encode('Refund policy: refunds within 30 days are never possible.'),
      MIME.txt,
      { key: other.key },
    )
    const pending = await upload('later.txt', new TextEncoder().encode('Not processed yet.'), MIME.txt)
    await processQueuedDocuments(t.ctx, 30_000)
    const queued = await upload('queued.txt', new TextEncoder().encode('Still in the queue.'), MIME.txt)
    expect(pending).toBeTruthy()

    const refused = await agentWithDocuments([ours, theirs])
    expect(refused.status).toBe(422)
    expect(JSON.stringify(refused.body)).toContain('data.document_uuids')
    expect(JSON.stringify(refused.body)).toContain(theirs)

    const created = await agentWithDocuments([ours, queued])
    expect(created.status, created.text).toBe(200)
    const workflowId = created.body.id
    const opened = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {})
    models.chat.queue(
      callTool('retrieve_from_knowledge_base', { query: 'refund within 30 days' }),
      say('You can get a refund within 30 days.'),
    )
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${opened.workflow_run_id}/messages`, {
      text: 'Can I get a refund?',
    })

    const [offered, answered] = models.requestsTo('/chat/completions')
    expect(offered.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain(
      'retrieve_from_knowledge_base',
    )
    const toolMessage = answered.body.messages.find((message: { role: string }) => message.role === 'tool')
    const result = JSON.parse(toolMessage.content)
    expect(result.chunks[0]).toMatchObject({ document_uuid: ours, filename: 'policy.pdf', page: 1 })
    expect(result.chunks[0].text).toContain('Refund policy')
    expect(toolMessage.content).not.toContain('never possible')
    expect(result.unavailable_documents).toEqual([{ document_uuid: queued, reason: 'not ready yet (pending)' }])

    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`)).body
    const [logged] = run.logs.tool_calls
    expect(logged).toMatchObject({
      function_name: 'retrieve_from_knowledge_base',
      type: 'knowledge_base',
      status: 'success',
      node_id: '1',
    })
    expect(logged.knowledge_base).toMatchObject({
      query: 'refund within 30 days',
      embedding_model: 'fake-embed',
      unavailable_documents: [{ document_uuid: queued }],
    })
    expect(logged.knowledge_base.results[0]).toMatchObject({ document_uuid: ours, filename: 'policy.pdf' })
    expect(typeof logged.knowledge_base.search_ms).toBe('number')
    expect(typeof logged.knowledge_base.embedding_ms).toBe('number')

    // The query's embedding tokens are the run's usage, keyed like the LLM's.
    expect(logged.knowledge_base.embedding_tokens).toBeGreaterThan(0)
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${opened.workflow_run_id}/end`, {})
    const ended = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`)).body
    expect(ended.usage_info.embeddings).toEqual({ 'openai|||fake-embed': logged.knowledge_base.embedding_tokens })
  }, 60_000)

  test("the organization's usage counts embedding tokens: each run's queries, and its documents' processing", async () => {
    // An organization of its own, so its totals are this test's alone.
    const { key } = t.newOrg('usage')
    await configureModels(key)
    const summary = async (query = '', asKey = key) => {
      const response = await t.request('GET', `/api/v1/organizations/usage/summary?group_by=agent${query}`, {
        key: asKey,
      })
      expect(response.status, response.text).toBe(200)
      return response.body
    }
    const othersBefore = (await summary('', other.key)).knowledge_base_embedding_tokens
    const doc = await upload('hours.txt', new TextEncoder().encode('The shop opens at nine on Saturdays.'), MIME.txt, {
      key,
    })
    await processQueuedDocuments(t.ctx)
    const ingested = (await document(doc, key)).embedding_tokens
    expect(ingested).toBeGreaterThan(0)
    const workflowId = (await agentWithDocuments([doc], key)).body.id
    const opened = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {}, key)
    models.chat.queue(callTool('retrieve_from_knowledge_base', { query: 'saturday opening' }), say('At nine.'))
    const sessionPath = `/api/v1/workflow/${workflowId}/text-chat/sessions/${opened.workflow_run_id}`
    await post(`${sessionPath}/messages`, { text: 'When do you open on Saturday?' }, key)
    await post(`${sessionPath}/end`, {}, key)
    const run = (await t.request('GET', `/api/v1/workflow/${workflowId}/runs/${opened.workflow_run_id}`, { key })).body
    const queried = run.usage_info.embeddings['openai|||fake-embed']
    expect(queried).toBeGreaterThan(0)

    const report = await t.request('GET', '/api/v1/organizations/usage/runs', { key })
    expect(report.status, report.text).toBe(200)
    expect(report.body.runs.map((item: Record<string, unknown>) => [item.id, item.embedding_tokens])).toEqual([
      [run.id, queried],
    ])
    expect(report.body.total_embedding_tokens).toBe(queried)
    const ours = await summary()
    expect(ours.groups).toEqual([
      expect.objectContaining({ key: String(workflowId), runs: 1, embedding_tokens: queried }),
    ])
    expect(ours.knowledge_base_embedding_tokens).toBe(ingested)
    expect((await summary('', other.key)).knowledge_base_embedding_tokens).toBe(othersBefore)
    // Within dates: a document processed before the range is not counted.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    expect((await summary(`&start_date=${tomorrow}`)).knowledge_base_embedding_tokens).toBe(0)
  }, 60_000)

  test('model_overrides.embeddings is the model the query is embedded with; documents of another model are reported', async () => {
    const doc = await upload(
      'faq.txt',
      new TextEncoder().encode('Our support line opens at eight in the morning.'),
      MIME.txt,
    )
    await processQueuedDocuments(t.ctx)
    const workflowId = (await agentWithDocuments([doc])).body.id
    const opened = await post(`/api/v1/workflow/${workflowId}/text-chat/sessions`, {
      model_overrides: { embeddings: { settings: { model: 'other-embed' } } },
    })
    models.chat.queue(callTool('retrieve_from_knowledge_base', { query: 'support hours' }), say('I do not know.'))
    await post(`/api/v1/workflow/${workflowId}/text-chat/sessions/${opened.workflow_run_id}/messages`, {
      text: 'When do you open?',
    })
    const toolMessage = models
      .requestsTo('/chat/completions')[1]
      .body.messages.find((message: { role: string }) => message.role === 'tool')
    const result = JSON.parse(toolMessage.content)
    expect(result.chunks).toEqual([])
    expect(result.unavailable_documents[0].reason).toContain('embedded with model fake-embed, not other-embed')
  }, 60_000)
})
