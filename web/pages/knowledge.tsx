import { useEffect, useRef, useState } from 'react'
import { DOCUMENT_LIMITS, EXTENSIONS, extensionOf, FORMATS } from '../../src/knowledge/formats'
import { api, ApiError, query, type Schemas } from '../api'
import { href, navigate } from '../router'
import { putWithProgress } from '../upload'
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  type Loaded,
  Page,
  Show,
  StateBadge,
  Table,
  Time,
  useLoad,
  useSubmit,
} from '../ui'

/**
 * The knowledge base: the organization's documents (status followed while they are processed), adding files from the
 * browser through the signed upload URL, processing one again, deleting one, and a search as an agent would make it.
 */

type KnowledgeDocument = Schemas['CreateKnowledgeBaseProcessDocumentResponse']
type DocumentList = Schemas['GetKnowledgeBaseDocumentsResponse']
type SearchAnswer = Schemas['CreateKnowledgeBaseSearchResponse']
type Grant = Schemas['CreateKnowledgeBaseUploadUrlResponse']
type RetrievalMode = KnowledgeDocument['retrieval_mode']

const DOCUMENTS = '/api/v1/knowledge-base/documents'
const PAGE_SIZE = 20
const STATUSES = ['pending', 'processing', 'completed', 'failed'] as const
/** How often the list is read again while a document on it is pending or processing. */
const REFRESH_MS = 2000

const MODE_OPTIONS: { value: RetrievalMode; label: string }[] = [
  { value: 'chunked', label: 'Searched by meaning (chunked)' },
  { value: 'full_document', label: 'Given whole to the agent (full_document)' },
]
const MODE_HINT =
  'Chunked: cut into passages and embedded; an agent gets the passages nearest its question (needs an embeddings model). Whole: the whole text goes to the agent (at most 60,000 characters).'

const busy = (document: KnowledgeDocument) =>
  document.processing_status === 'pending' || document.processing_status === 'processing'

export function Knowledge({ params }: { params: URLSearchParams }) {
  const status = STATUSES.find((value) => value === params.get('status')) ?? ''
  const page = Math.max(1, Math.floor(Number(params.get('page'))) || 1)
  const documents = useLoad(
    () =>
      api<DocumentList>('GET', `${DOCUMENTS}${query({ status, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE })}`),
    [status, page],
  )
  useRefreshWhile(documents.data?.documents.some(busy) ?? false, documents)
  return (
    <Page title="Knowledge base">
      <AddDocuments onAdded={documents.reload} />
      <section className="card" aria-labelledby="documents-title">
        <header className="page-header">
          <h2 id="documents-title">Documents</h2>
          <div className="actions">
            <Field
              label="Status"
              value={status}
              onChange={(value) => navigate('/knowledge', { status: value })}
              options={[{ value: '', label: 'All' }, ...STATUSES.map((value) => ({ value, label: value }))]}
            />
          </div>
        </header>
        <Show loaded={documents} what="documents">
          {(list) => <DocumentTable list={list} status={status} page={page} onChange={documents.reload} />}
        </Show>
      </section>
      <TrySearch documents={documents.data?.documents ?? []} />
    </Page>
  )
}

/** Reads `loaded` again REFRESH_MS after each read while `refresh` holds; never once the page is gone. */
function useRefreshWhile(refresh: boolean, loaded: Loaded<unknown>) {
  const { loading, reload } = loaded
  useEffect(() => {
    if (!refresh || loading) return
    const timer = setTimeout(reload, REFRESH_MS)
    return () => clearTimeout(timer)
  }, [refresh, loading, reload])
}

function DocumentTable({
  list,
  status,
  page,
  onChange,
}: {
  list: DocumentList
  status: string
  page: number
  onChange: () => void
}) {
  if (list.documents.length === 0 && list.total === 0)
    return status ? (
      <Empty title={`No ${status} document.`}>
        <a href={href('/knowledge')}>Show all documents</a>
      </Empty>
    ) : (
      <Empty title="No document yet.">
        A document is what an agent consults while it talks: a price list, a handbook, your terms. Add a file above
        (PDF, DOCX, text, Markdown, CSV or JSON): its text is extracted and prepared in the background, then name it in
        an agent's node (Documents, in the agent editor) and the agent looks things up in it.
      </Empty>
    )
  const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE))
  return (
    <>
      <Table
        card={false}
        caption={`${list.total} ${list.total === 1 ? 'document' : 'documents'}, page ${page} of ${pages}`}
        columns={[
          'File',
          'Status',
          'Retrieval',
          'Chunks',
          'Embedding model',
          'Content',
          'Added',
          { hidden: 'Actions' },
        ]}
      >
        {list.documents.map((document) => (
          <DocumentRow key={document.document_uuid} document={document} onChange={onChange} />
        ))}
      </Table>
      <nav className="pager" aria-label="Pages">
        {page > 1 ? <a href={href('/knowledge', { status, page: page - 1 })}>Previous page</a> : null}
        {page < pages ? <a href={href('/knowledge', { status, page: page + 1 })}>Next page</a> : null}
      </nav>
    </>
  )
}

/** Pages and characters as the extraction counted them, and the file's size. */
function contentOf(document: KnowledgeDocument): string {
  const metadata = document.docling_metadata as { num_pages?: unknown; characters?: unknown }
  const parts = []
  if (typeof metadata.num_pages === 'number')
    parts.push(`${metadata.num_pages} ${metadata.num_pages === 1 ? 'page' : 'pages'}`)
  if (typeof metadata.characters === 'number') parts.push(`${metadata.characters.toLocaleString()} characters`)
  parts.push(fileSize(document.file_size_bytes))
  return parts.join(' · ')
}

function fileSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

function DocumentRow({ document, onChange }: { document: KnowledgeDocument; onChange: () => void }) {
  const action = useSubmit()
  const remove = action.submit(async () => {
    await api('DELETE', `${DOCUMENTS}/${document.document_uuid}`)
    onChange()
  })
  const chunked = document.retrieval_mode === 'chunked'
  return (
    <tr>
      <td>
        <span className="text">{document.filename}</span>
        {document.processing_status === 'failed' && document.processing_error ? (
          <div className="field-error text">{document.processing_error}</div>
        ) : null}
      </td>
      <td>
        <StateBadge state={document.processing_status} />
      </td>
      <td>{chunked ? 'chunked' : 'whole document'}</td>
      <td>{chunked ? document.total_chunks : '—'}</td>
      <td>{document.embedding_model ?? '—'}</td>
      <td>{contentOf(document)}</td>
      <td>
        <Time at={document.created_at} />
      </td>
      <td className="actions">
        {busy(document) ? null : <ProcessAgain document={document} submit={action.submit} onQueued={onChange} />}{' '}
        <ConfirmButton
          label={`Delete ${document.filename}`}
          confirmText={`Delete “${document.filename}” and its chunks`}
          onConfirm={remove}
        >
          Delete
        </ConfirmButton>
        <ErrorNote error={action.error} />
        <NoEmbeddingsHelp error={action.error} />
      </td>
    </tr>
  )
}

/** "Process again": asks the retrieval mode (the document's own first), then queues it. */
function ProcessAgain({
  document,
  submit,
  onQueued,
}: {
  document: KnowledgeDocument
  submit: ReturnType<typeof useSubmit>['submit']
  onQueued: () => void
}) {
  const [mode, setMode] = useState<RetrievalMode | null>(null)
  if (mode === null)
    return (
      <button
        type="button"
        className="secondary"
        onClick={() => setMode(document.retrieval_mode)}
        aria-label={`Process again: ${document.filename}`}
      >
        Process again
      </button>
    )
  const queue = submit(async () => {
    await api('POST', `${DOCUMENTS}/${document.document_uuid}/reprocess`, { retrieval_mode: mode })
    setMode(null)
    onQueued()
  })
  return (
    <>
      <Field
        label="Process as"
        value={mode}
        onChange={(value) => setMode(value as RetrievalMode)}
        options={MODE_OPTIONS}
      />
      <button type="button" onClick={queue}>
        Process “{document.filename}” again
      </button>{' '}
      <button type="button" className="secondary" onClick={() => setMode(null)}>
        Cancel
      </button>
    </>
  )
}

/** After a 422 that chunked needs embeddings: where to add a model, or the other mode. */
function NoEmbeddingsHelp({ error }: { error: ApiError | null }) {
  if (!error?.fieldMessage('retrieval_mode')) return null
  return (
    <p className="muted">
      Chunked documents are searched by meaning, which takes an embeddings model:{' '}
      <a href={href('/models')}>add one to the default model configuration</a>, or choose “Given whole to the agent”.
    </p>
  )
}

/** A file chosen to add, and how far it got. */
type Chosen = {
  id: number
  file: File
  /** Why the page will not send it (its type, its size), or null. */
  refusal: string | null
  progress: number | null
  /** Where it is, in words. */
  state: string
  error: Error | null
  /** Uploaded, not yet queued: processing is asked again for it without a second upload. */
  uploaded: { document_uuid: string; s3_key: string } | null
  queued: boolean
}

const MAX_MIB = DOCUMENT_LIMITS.maxBytes / 1024 / 1024

function refusalOf(file: File): string | null {
  const extension = extensionOf(file.name)
  if (!FORMATS[extension]) {
    const what = extension ? `a ${extension} file` : 'a file without an extension'
    const hint = extension === '.doc' ? ' (save a .doc as .docx)' : ''
    return `Not added: ${what} is not a type the knowledge base reads; it reads ${EXTENSIONS.join(', ')}${hint}.`
  }
  if (file.size === 0) return 'Not added: the file is empty.'
  if (file.size > DOCUMENT_LIMITS.maxBytes)
    return `Not added: ${fileSize(file.size)} is more than the ${MAX_MIB} MiB a document may have.`
  return null
}

/** The Content-Type to declare: the browser's when the API takes it for the extension, else the extension's own. */
function mimeTypeOf(file: File): string {
  const accepted = FORMATS[extensionOf(file.name)].mimeTypes
  return accepted.includes(file.type) ? file.type : accepted[0]
}

const namesRetrievalMode = (error: unknown) =>
  error instanceof ApiError && error.fieldMessage('retrieval_mode') !== undefined

function AddDocuments({ onAdded }: { onAdded: () => void }) {
  const input = useRef<HTMLInputElement>(null)
  const nextId = useRef(0)
  const [chosen, setChosen] = useState<Chosen[]>([])
  const [adding, setAdding] = useState(false)
  const [mode, setMode] = useState<RetrievalMode>('chunked')
  const { error, setError, submit } = useSubmit()
  const update = (id: number, change: Partial<Chosen>) =>
    setChosen((previous) => previous.map((entry) => (entry.id === id ? { ...entry, ...change } : entry)))
  const choose = (files: File[]) => {
    setError(null)
    setChosen(
      files.map((file) => ({
        id: nextId.current++,
        file,
        refusal: refusalOf(file),
        progress: null,
        state: 'Not added yet',
        error: null,
        uploaded: null,
        queued: false,
      })),
    )
  }
  const addOne = async (entry: Chosen) => {
    const { id, file } = entry
    let uploaded = entry.uploaded
    update(id, { error: null })
    if (!uploaded) {
      const mimeType = mimeTypeOf(file)
      update(id, { progress: 0, state: 'Uploading' })
      const grant = await api<Grant>('POST', '/api/v1/knowledge-base/upload-url', {
        filename: file.name,
        mime_type: mimeType,
        file_size: file.size,
      })
      await putWithProgress(grant.upload_url, file, mimeType, (progress) => update(id, { progress }))
      uploaded = { document_uuid: grant.document_uuid, s3_key: grant.s3_key }
      update(id, { uploaded, state: 'Uploaded, not added yet' })
    }
    await api('POST', '/api/v1/knowledge-base/process-document', { ...uploaded, retrieval_mode: mode })
    update(id, { queued: true, state: 'Added: it is processed in the list below' })
  }
  const add = submit(async () => {
    const waiting = chosen.filter((entry) => !entry.refusal && !entry.queued)
    if (waiting.length === 0)
      throw new ApiError(0, chosen.length ? 'None of these files can be added.' : 'Choose one or more files first.')
    setAdding(true)
    try {
      for (const entry of waiting) {
        try {
          await addOne(entry)
        } catch (caught) {
          // the mode is the form's: every file would meet the same answer, so the form shows it once, at the mode
          if (namesRetrievalMode(caught)) throw caught
          update(entry.id, { error: caught as Error, state: 'Not added', progress: null })
        }
      }
      if (input.current) input.current.value = ''
    } finally {
      setAdding(false)
      onAdded()
    }
  })
  return (
    <form className="card form" onSubmit={add} aria-labelledby="add-title">
      <h2 id="add-title">Add documents</h2>
      <div className="field">
        <label htmlFor="knowledge-files">Files</label>
        <input
          id="knowledge-files"
          ref={input}
          type="file"
          multiple
          accept={EXTENSIONS.join(',')}
          disabled={adding}
          aria-describedby="knowledge-files-hint"
          onChange={(event) => choose([...(event.target.files ?? [])])}
        />
        <small id="knowledge-files-hint" className="muted">
          PDF (with a text layer), DOCX, text, Markdown, CSV or JSON; at most {MAX_MIB} MiB each. A file identical to
          one already added fails as a duplicate.
        </small>
      </div>
      {chosen.length ? <ChosenFiles chosen={chosen} /> : null}
      <Field
        label="Retrieval mode"
        value={mode}
        onChange={(value) => setMode(value as RetrievalMode)}
        options={MODE_OPTIONS}
        error={error}
        path={['retrieval_mode']}
        hint={MODE_HINT}
      />
      <NoEmbeddingsHelp error={error} />
      <ErrorNote error={error} />
      <button type="submit" disabled={adding}>
        Upload and add
      </button>
    </form>
  )
}

function ChosenFiles({ chosen }: { chosen: Chosen[] }) {
  return (
    <ul className="plain" aria-label="Chosen files">
      {chosen.map((entry) => (
        <li key={entry.id}>
          <strong className="text">{entry.file.name}</strong> <span className="muted">{fileSize(entry.file.size)}</span>{' '}
          {entry.refusal ? (
            <span className="error">{entry.refusal}</span>
          ) : (
            <>
              <span role="status">{entry.state}</span>
              {entry.progress !== null ? (
                <>
                  {' '}
                  <progress max={1} value={entry.progress} aria-label={`Upload of ${entry.file.name}`} />
                </>
              ) : null}
              <ErrorNote error={entry.error} />
            </>
          )}
        </li>
      ))}
    </ul>
  )
}

/** A search of the chunked documents as an agent's retrieve_from_knowledge_base makes it (for trying the documents). */
function TrySearch({ documents }: { documents: KnowledgeDocument[] }) {
  const [text, setText] = useState('')
  const [limit, setLimit] = useState('5')
  const [answer, setAnswer] = useState<SearchAnswer | null>(null)
  const { error, submit } = useSubmit()
  const search = submit(async () => {
    setAnswer(null)
    setAnswer(await api<SearchAnswer>('POST', '/api/v1/knowledge-base/search', { query: text, limit: Number(limit) }))
  })
  return (
    <section className="card" aria-labelledby="search-title">
      <h2 id="search-title">Try a search</h2>
      <p className="muted">
        What an agent gets when it looks something up: the passages of the completed chunked documents nearest the
        question, by meaning, with their similarity (1 is the closest). A document given whole is not searched: the
        agent gets all of its text.
      </p>
      <form className="inline-form" onSubmit={search} aria-label="Search the documents">
        <Field label="Question" value={text} onChange={setText} error={error} path={['query']} required />
        <Field
          label="Passages at most"
          type="number"
          value={limit}
          onChange={setLimit}
          error={error}
          path={['limit']}
          min={1}
          max={50}
          required
        />
        <button type="submit">Search</button>
        <ErrorNote error={error} />
      </form>
      {answer ? <SearchResults answer={answer} documents={documents} /> : null}
    </section>
  )
}

function SearchResults({ answer, documents }: { answer: SearchAnswer; documents: KnowledgeDocument[] }) {
  const nameOf = (uuid: string) => documents.find((document) => document.document_uuid === uuid)?.filename ?? uuid
  return (
    <>
      {answer.chunks.length === 0 ? (
        <Empty title="No passage found.">
          Only completed documents in chunked mode are searched; the list above says where each one is.
        </Empty>
      ) : (
        <ol className="plain" aria-label="Passages found">
          {answer.chunks.map((chunk) => {
            const page = (chunk.chunk_metadata as { page?: unknown }).page
            return (
              <li key={chunk.id} className="card">
                <strong className="text">{chunk.filename}</strong>{' '}
                <span className="muted">
                  passage {chunk.chunk_index + 1}
                  {typeof page === 'number' ? `, page ${page}` : ''}
                </span>{' '}
                <span className="badge">similarity {chunk.similarity.toFixed(3)}</span>
                <p className="text">{chunk.contextualized_text}</p>
              </li>
            )
          })}
        </ol>
      )}
      {answer.unavailable_documents.length ? (
        <div className="notice card">
          <p className="empty-title">Not searched</p>
          <p className="muted">
            These documents were left out, and an agent would be told so. One embedded by another model than the default
            configuration's is searched again once processed again (Process again, above).
          </p>
          <ul className="plain" aria-label="Documents not searched">
            {answer.unavailable_documents.map((item) => (
              <li key={item.document_uuid}>
                <strong className="text">{nameOf(item.document_uuid)}</strong>: {item.reason}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </>
  )
}
