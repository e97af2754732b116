import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compiledBinary } from './support/compiled-binary'
import { startFakeModels, type FakeModels } from './support/fake-models'
import { docxWithParagraphs, MIME, pdfWithPages } from './support/knowledge'
import { callApi, SOURCE_COMMAND, startServe } from './support/serve-process'

/**
 * The knowledge base in a real process: the compiled binary extracts a PDF and a DOCX in its embedded worker (unpdf,
 * mammoth) to completed documents; and a server killed while a document is processing (its embeddings request held
 * open by the fake) takes the document up again after a restart, once its lease ran out, and completes it — never
 * leaving it `processing`.
 */

const KEY = 'rb_test_knowledge_key_0123456789'
let binary: string
let dataDir: string
let models: FakeModels
let running: Awaited<ReturnType<typeof startServe>> | null = null

beforeAll(() => {
  binary = compiledBinary()
  models = startFakeModels()
}, 300_000)
afterAll(() => {
  models.stop()
})
afterEach(async () => {
  running?.server.kill('SIGKILL')
  await running?.server.exited
  running = null
  rmSync(dataDir, { recursive: true, force: true })
  models.reset()
})

async function start(command: string | string[]) {
  running = await startServe(command, ['--dir', dataDir], {
    RINGBASE_BOOTSTRAP_API_KEY: KEY,
    RINGBASE_LOG_LEVEL: 'info',
    RINGBASE_KNOWLEDGE_LEASE_SECONDS: '1',
  })
}

const api = (method: string, path: string, body?: unknown) => callApi(running!.url, KEY, method, path, body)

async function configureModels() {
  const connection = (
    await api('POST', '/api/v1/organizations/provider-connections', {
      name: 'Fake',
      provider: 'openai',
      base_url: models.baseUrl,
    })
  ).uuid
  await api('POST', '/api/v1/organizations/model-configurations', {
    name: 'Default',
    llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } },
    embeddings: { provider_connection_uuid: connection, settings: { model: 'fake-embed' } },
  })
}

async function submit(filename: string, bytes: Uint8Array, mimeType: string): Promise<string> {
  const grant = await api('POST', '/api/v1/knowledge-base/upload-url', { filename, mime_type: mimeType })
  const { pathname, search } = new URL(grant.upload_url)
  const put = await fetch(`${running!.url}${pathname}${search}`, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': mimeType },
  })
  expect(put.status).toBe(200)
  return (
    await api('POST', '/api/v1/knowledge-base/process-document', {
      document_uuid: grant.document_uuid,
      s3_key: grant.s3_key,
    })
  ).document_uuid
}

/** Polls the document until it leaves pending/processing (the test's own timeout bounds it). */
async function settled(uuid: string) {
  for (;;) {
    const document = await api('GET', `/api/v1/knowledge-base/documents/${uuid}`)
    if (document.processing_status === 'completed' || document.processing_status === 'failed') return document
    await Bun.sleep(100)
  }
}

test('the compiled binary turns a PDF and a DOCX into searchable documents', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-knowledge-'))
  await start(binary)
  await configureModels()
  const pdf = await submit(
    'guide.pdf',
    pdfWithPages(['Installation needs a 10 amp fuse.', 'Cleaning: use a dry cloth only.']),
    MIME.pdf,
  )
  const docx = await submit('terms.docx', docxWithParagraphs(['Payment is due within fourteen days.']), MIME.docx)
  expect(await settled(pdf)).toMatchObject({ processing_status: 'completed', docling_metadata: { num_pages: 2 } })
  expect(await settled(docx)).toMatchObject({ processing_status: 'completed' })
  const found = await api('POST', '/api/v1/knowledge-base/search', { query: 'payment due days', limit: 1 })
  expect(found.chunks[0]).toMatchObject({ document_uuid: docx, chunk_text: 'Payment is due within fourteen days.' })
}, 120_000)

test('a server killed while a document is processing completes it after the restart', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-knowledge-'))
  await start(SOURCE_COMMAND)
  await configureModels()
  // The first embeddings request never answers: the document stays in processing until the kill.
  let held!: () => void
  const embeddingsAsked = new Promise<void>((resolve) => {
    held = resolve
  })
  models.embeddings.queue(() => {
    held()
    return { delayMs: 600_000 }
  })
  const uuid = await submit('notes.txt', new TextEncoder().encode('The meeting room is on the second floor.'), MIME.txt)
  await embeddingsAsked
  expect((await api('GET', `/api/v1/knowledge-base/documents/${uuid}`)).processing_status).toBe('processing')
  running!.server.kill('SIGKILL')
  await running!.server.exited

  await start(SOURCE_COMMAND)
  const document = await settled(uuid)
  expect(document).toMatchObject({ processing_status: 'completed', processing_attempts: 2, total_chunks: 1 })
}, 120_000)
