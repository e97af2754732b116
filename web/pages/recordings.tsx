import { useEffect, useRef, useState } from 'react'
import { api, ApiError, type Schemas } from '../api'
import { href } from '../router'
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  FormEnd,
  LeaveGuard,
  Page,
  Show,
  Table,
  Time,
  useLoad,
  useSubmit,
  useUnsaved,
} from '../ui'
import { putWithProgress } from '../upload'

type Recording = Schemas['UpdateWorkflowRecordingsResponse']

/** The API's bounds (src/api/workflow-recordings/model.ts): checked here first, so a refused file is never uploaded. */
const MAX_BYTES = 5 * 1024 * 1024
const MAX_FILES = 20
const RECORDING_ID = /^[A-Za-z0-9_-]{1,64}$/
const WAV_TYPES = ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave']
const MP3_TYPES = ['audio/mpeg', 'audio/mp3']

/** Audio the organization uploads once and its agents play instead of speaking (docs/recordings.md). */
export function Recordings() {
  const loaded = useLoad(() => api<Schemas['GetWorkflowRecordingsResponse']>('GET', '/api/v1/workflow-recordings/'), [])
  return (
    <Page title="Recordings">
      <AddRecordings onCreated={loaded.reload} />
      <section className="card" aria-labelledby="stored-title">
        <h2 id="stored-title">Stored recordings</h2>
        <Show loaded={loaded} what="recordings">
          {({ recordings }) =>
            recordings.length === 0 ? (
              <Empty title="No recording yet.">
                A recording is audio an agent plays instead of speaking: a greeting (the Start node's{' '}
                <code>greeting_recording_id</code>, or a campaign row's <code>greeting_override_recording_id</code>),
                the speech of a transition (<code>transition_speech_recording_id</code>), a tool's message (
                <code>audioRecordingId</code>, <code>customMessageRecordingId</code>), or a clip the model picks from{' '}
                <code>RECORDING_ID:</code> in a prompt. Add WAV or MP3 files above: agents name each by its recording
                id, and its transcript is the agent's turn in the call's transcript.
              </Empty>
            ) : (
              <RecordingTable recordings={recordings} onChanged={loaded.reload} />
            )
          }
        </Show>
      </section>
    </Page>
  )
}

/** Why the page refuses a file before any upload, or null; and the content type its upload declares. */
function checkFile(file: File): { refusal: string | null; contentType: string } {
  const extension = file.name.toLowerCase().split('.').pop()
  const byName = extension === 'wav' ? 'audio/wav' : extension === 'mp3' ? 'audio/mpeg' : ''
  const contentType = [...WAV_TYPES, ...MP3_TYPES].includes(file.type) ? file.type : file.type === '' ? byName : ''
  if (contentType === '')
    return {
      refusal: `not a WAV or MP3 file (${file.type || 'unknown type'}): only WAV and MP3 are taken`,
      contentType,
    }
  if (file.size === 0) return { refusal: 'the file is empty', contentType }
  if (file.size > MAX_BYTES)
    return { refusal: `${fileSize(file.size)} is over the 5 MiB a recording may weigh`, contentType }
  return { refusal: null, contentType }
}

const fileSize = (bytes: number) =>
  bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`

type Draft = {
  file: File
  /** The browser's own copy of the file, for its player (the CSP allows media from blob:). */
  objectUrl: string
  storageKey: string
  recordingId: string
  transcript: string
  /** The upload's progress, 0 to 1; the upload's error once it failed. */
  progress: number
  uploadError: Error | null
}

/** A signed upload URL for each accepted file, and its draft (named by the server, not uploaded yet). */
async function grantUploads(accepted: { file: File; contentType: string }[]) {
  const grant = await api<Schemas['CreateWorkflowRecordingsUploadUrlResponse']>(
    'POST',
    '/api/v1/workflow-recordings/upload-url',
    {
      files: accepted.map(({ file, contentType }) => ({
        filename: file.name,
        mime_type: contentType,
        file_size: file.size,
      })),
    },
  )
  const added: Draft[] = accepted.map(({ file }, index) => ({
    file,
    objectUrl: URL.createObjectURL(file),
    storageKey: grant.items[index].storage_key,
    recordingId: grant.items[index].recording_id,
    transcript: '',
    progress: 0,
    uploadError: null,
  }))
  return { added, uploadUrls: grant.items.map((item) => item.upload_url) }
}

/** The files the page refused before uploading, each with why. */
function RefusedFiles({ reasons }: { reasons: string[] }) {
  if (reasons.length === 0) return null
  return (
    <div role="alert" className="error">
      <p>Not uploaded:</p>
      <ul>
        {reasons.map((reason) => (
          <li key={reason}>{reason}</li>
        ))}
      </ul>
    </div>
  )
}

/** Files chosen, refused in the page or uploaded to signed URLs, each with its form; then created all at once. */
function AddRecordings({ onCreated }: { onCreated: () => void }) {
  const [drafts, setDrafts] = useState<Draft[]>([])
  const [refused, setRefused] = useState<string[]>([])
  const [created, setCreated] = useState<string[]>([])
  const picking = useSubmit()
  // files uploaded and not saved as recordings yet: the form opened with none, and holds none once they are saved
  const { unsaved } = useUnsaved(drafts.map((draft) => [draft.storageKey, draft.recordingId, draft.transcript]))
  const { error, setError, submit } = useSubmit()
  const input = useRef<HTMLInputElement>(null)
  const shown = useRef<Draft[]>([])
  shown.current = drafts
  useEffect(() => () => shown.current.forEach((draft) => URL.revokeObjectURL(draft.objectUrl)), [])

  const change = (storageKey: string, patch: Partial<Draft>) =>
    setDrafts((previous) => previous.map((draft) => (draft.storageKey === storageKey ? { ...draft, ...patch } : draft)))
  const remove = (storageKey: string) => {
    setError(null)
    setDrafts((previous) => {
      for (const draft of previous) if (draft.storageKey === storageKey) URL.revokeObjectURL(draft.objectUrl)
      return previous.filter((draft) => draft.storageKey !== storageKey)
    })
  }

  const choose = picking.submit(async () => {
    const files = Array.from(input.current?.files ?? [])
    if (input.current) input.current.value = ''
    setCreated([])
    const checked = files.map((file) => ({ file, ...checkFile(file) }))
    setRefused(checked.flatMap(({ file, refusal }) => (refusal ? [`${file.name}: ${refusal}`] : [])))
    const accepted = checked.filter((item) => item.refusal === null)
    if (accepted.length === 0) return
    if (drafts.length + accepted.length > MAX_FILES)
      throw new ApiError(0, `At most ${MAX_FILES} files at once: save or remove some first`)
    const { added, uploadUrls } = await grantUploads(accepted)
    setDrafts((previous) => [...previous, ...added])
    await Promise.all(
      added.map((draft, index) =>
        putWithProgress(uploadUrls[index], draft.file, accepted[index].contentType, (progress) =>
          change(draft.storageKey, { progress }),
        ).then(
          () => change(draft.storageKey, { progress: 1 }),
          (uploadError: Error) => change(draft.storageKey, { uploadError }),
        ),
      ),
    )
  })

  const save = submit(async () => {
    if (drafts.some((draft) => draft.uploadError)) throw new ApiError(0, 'Remove the files that did not upload first')
    if (drafts.some((draft) => draft.progress < 1)) throw new ApiError(0, 'Wait for the uploads to finish')
    const problems = recordingIdProblems(drafts)
    if (problems.length > 0) throw new ApiError(422, problems)
    const recordings = drafts.map((draft) => ({
      recording_id: draft.recordingId,
      transcript: draft.transcript,
      storage_key: draft.storageKey,
    }))
    try {
      await api('POST', '/api/v1/workflow-recordings/', { recordings })
    } catch (caught) {
      throw takenAtFields(caught, drafts)
    }
    for (const draft of drafts) URL.revokeObjectURL(draft.objectUrl)
    setCreated(drafts.map((draft) => draft.recordingId))
    setDrafts([])
    onCreated()
  })

  return (
    <section className="card" aria-labelledby="add-title">
      <h2 id="add-title">Add recordings</h2>
      <LeaveGuard
        when={unsaved}
        message="Files uploaded here are not saved as recordings yet: leaving the page drops them."
      />
      <div className="form">
        <div className="field">
          <label htmlFor="recording-files">Audio files (WAV or MP3, at most 5 MiB each)</label>
          <input
            id="recording-files"
            ref={input}
            type="file"
            multiple
            accept=".wav,.mp3,audio/wav,audio/mpeg"
            onChange={() => choose()}
            aria-describedby="recording-files-hint"
          />
          <small id="recording-files-hint" className="muted">
            Each file chosen is uploaded at once, then named and transcribed below before it is saved.
          </small>
        </div>
        <RefusedFiles reasons={refused} />
        <ErrorNote error={picking.error} />
      </div>
      {created.length > 0 ? (
        <p role="status" className="ok">
          Saved: {created.join(', ')}.
        </p>
      ) : null}
      {drafts.length > 0 ? (
        <form className="form" onSubmit={save} aria-label="New recordings">
          {drafts.map((draft, index) => (
            <DraftFields
              key={draft.storageKey}
              draft={draft}
              index={index}
              error={error}
              onChange={(patch) => change(draft.storageKey, patch)}
              onRemove={() => remove(draft.storageKey)}
            />
          ))}
          <FormEnd
            error={error}
            saved={false}
            submitLabel={drafts.length === 1 ? 'Save recording' : 'Save recordings'}
          />
        </form>
      ) : null}
    </section>
  )
}

/** The page's own check of the names (the API's rule, and no name twice in one save), as the API's 422 would say it. */
function recordingIdProblems(drafts: Draft[]) {
  return drafts.flatMap((draft, index) => {
    const loc = ['body', 'recordings', index, 'recording_id']
    if (!RECORDING_ID.test(draft.recordingId))
      return [{ loc, msg: '1 to 64 of A–Z, a–z, 0–9, _ and -', type: 'pattern' }]
    if (drafts.findIndex((other) => other.recordingId === draft.recordingId) !== index)
      return [{ loc, msg: 'another file above has this name', type: 'duplicate' }]
    return []
  })
}

/** The 409 of a taken name, shown next to each file whose name it lists (`…: id, id`); another error as it is. */
function takenAtFields(caught: unknown, drafts: Draft[]): unknown {
  if (!(caught instanceof ApiError) || caught.status !== 409) return caught
  const taken = caught.message.split(': ').pop()?.split(', ') ?? []
  const problems = drafts.flatMap((draft, index) =>
    taken.includes(draft.recordingId)
      ? [
          {
            loc: ['body', 'recordings', index, 'recording_id'],
            msg: `'${draft.recordingId}' is already used in this organization: choose another name`,
            type: 'conflict',
          },
        ]
      : [],
  )
  return problems.length > 0 ? new ApiError(409, problems) : caught
}

/** One file being added: its player, its upload's progress, its name and transcript, and what the API said of it. */
function DraftFields({
  draft,
  index,
  error,
  onChange,
  onRemove,
}: {
  draft: Draft
  index: number
  error: ApiError | null
  onChange: (patch: Partial<Draft>) => void
  onRemove: () => void
}) {
  const [transcribing, setTranscribing] = useState(false)
  const [transcribeError, setTranscribeError] = useState<ApiError | null>(null)
  const uploaded = draft.progress >= 1 && !draft.uploadError
  const fileProblem = error?.showAtField('recordings', index, 'storage_key')
  const transcribe = async () => {
    setTranscribing(true)
    setTranscribeError(null)
    try {
      const answer = await api<{ transcript: string }>('POST', '/api/v1/workflow-recordings/transcribe', {
        storage_key: draft.storageKey,
      })
      onChange({ transcript: answer.transcript })
    } catch (caught) {
      setTranscribeError(caught instanceof ApiError ? caught : new ApiError(0, (caught as Error).message))
    } finally {
      setTranscribing(false)
    }
  }
  return (
    <fieldset aria-invalid={fileProblem ? true : undefined}>
      <legend>{draft.file.name}</legend>
      <p className="muted">{fileSize(draft.file.size)}</p>
      {/* biome-ignore lint/a11y/useMediaCaption: browsers draw no captions for <audio>; the transcript is the field below */}
      <audio controls preload="metadata" src={draft.objectUrl} aria-label={`Listen to ${draft.file.name}`} />
      <progress max={1} value={draft.progress} aria-label={`Upload of ${draft.file.name}`} />
      <span className="muted" role="status">
        {draft.uploadError
          ? 'Upload failed.'
          : uploaded
            ? 'Uploaded.'
            : `Uploading… ${Math.round(draft.progress * 100)}%`}
      </span>
      <ErrorNote error={draft.uploadError} />
      {fileProblem ? (
        <p className="field-error" role="alert">
          This file was refused: {fileProblem}
        </p>
      ) : null}
      <Field
        label={`Recording id of ${draft.file.name}`}
        value={draft.recordingId}
        onChange={(recordingId) => onChange({ recordingId })}
        error={error}
        path={['recordings', index, 'recording_id']}
        required
        hint="1 to 64 of A–Z, a–z, 0–9, _ and -: the name agents and tools use"
      />
      <Field
        label={`Transcript of ${draft.file.name}`}
        value={draft.transcript}
        onChange={(transcript) => onChange({ transcript })}
        error={error}
        path={['recordings', index, 'transcript']}
        required
        multiline={{ maxLength: 10_000 }}
        hint="What the recording says: the agent's turn in the call's transcript and the model's context"
      />
      <TranscribeError error={transcribeError} />
      <div className="filter-actions">
        <button type="button" className="secondary" onClick={transcribe} disabled={!uploaded || transcribing}>
          {transcribing ? 'Transcribing…' : 'Transcribe'}
        </button>
        <button type="button" className="secondary" onClick={onRemove} aria-label={`Remove ${draft.file.name}`}>
          Remove
        </button>
      </div>
    </fieldset>
  )
}

/** Why transcribing failed; when no speech to text is configured (400), where to configure one. */
function TranscribeError({ error }: { error: ApiError | null }) {
  if (!error) return null
  return (
    <p className="error" role="alert">
      {error.message}
      {error.status === 400 ? (
        <>
          {' '}
          <a href={href('/models')}>Set up speech to text on the Models page</a> (the default model configuration's
          speech to text), or type the transcript.
        </>
      ) : null}
    </p>
  )
}

function describeFormat(format: Recording['source_format']) {
  const channels = format.channels === 1 ? 'mono' : format.channels === 2 ? 'stereo' : `${format.channels} channels`
  return `${format.container.toUpperCase()}, ${format.encoding}, ${format.sample_rate / 1000} kHz, ${channels}`
}

/** The stored recordings, each with its player, an edit and a delete (a rename or delete is refused while something names it). */
function RecordingTable({ recordings, onChanged }: { recordings: Recording[]; onChanged: () => void }) {
  const [editing, setEditing] = useState<Recording | null>(null)
  const { error, submit } = useSubmit()
  const remove = (recording: Recording) =>
    submit(async () => {
      await api('DELETE', `/api/v1/workflow-recordings/${encodeURIComponent(recording.recording_id)}`)
      onChanged()
    })()
  return (
    <>
      <ErrorNote error={error} />
      {editing ? (
        <EditForm
          key={editing.id}
          recording={editing}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            onChanged()
          }}
        />
      ) : null}
      <Table
        card={false}
        columns={['Recording id', 'Transcript', 'Duration', 'Format', 'Created', 'Listen', { hidden: 'Actions' }]}
      >
        {recordings.map((recording) => (
          <tr key={recording.id}>
            <td>
              <code>{recording.recording_id}</code>
            </td>
            <td className="text">{recording.transcript || <span className="muted">none</span>}</td>
            <td>{(recording.duration_ms / 1000).toFixed(1)} s</td>
            <td>{describeFormat(recording.source_format)}</td>
            <td>
              <Time at={recording.created_at} />
            </td>
            <td>
              {/* biome-ignore lint/a11y/useMediaCaption: browsers draw no captions for <audio>; the transcript is beside it */}
              <audio
                controls
                preload="none"
                className="recording-player"
                src={`/api/v1/workflow-recordings/${encodeURIComponent(recording.recording_id)}/audio`}
                aria-label={`Listen to ${recording.recording_id}`}
              />
            </td>
            <td>
              <div className="filter-actions">
                <button
                  type="button"
                  className="secondary"
                  onClick={() => setEditing(recording)}
                  aria-label={`Edit ${recording.recording_id}`}
                >
                  Edit
                </button>
                <ConfirmButton
                  label={`Delete ${recording.recording_id}`}
                  confirmText={`Delete ${recording.recording_id} for good`}
                  onConfirm={() => remove(recording)}
                >
                  Delete
                </ConfirmButton>
              </div>
            </td>
          </tr>
        ))}
      </Table>
    </>
  )
}

/** A new recording_id and/or transcript (the API's PATCH: a rename is refused while something names the recording). */
function EditForm({ recording, onClose, onSaved }: { recording: Recording; onClose: () => void; onSaved: () => void }) {
  const [recordingId, setRecordingId] = useState(recording.recording_id)
  const [transcript, setTranscript] = useState(recording.transcript)
  // saving closes the form: nothing to mark saved
  const { unsaved } = useUnsaved([recordingId, transcript])
  const { error, submit } = useSubmit()
  const save = submit(async () => {
    if (!RECORDING_ID.test(recordingId))
      throw new ApiError(422, [
        { loc: ['body', 'recording_id'], msg: '1 to 64 of A–Z, a–z, 0–9, _ and -', type: 'pattern' },
      ])
    await api('PATCH', `/api/v1/workflow-recordings/${recording.id}`, { recording_id: recordingId, transcript })
    onSaved()
  })
  return (
    <form className="inline-form" onSubmit={save} aria-labelledby="edit-title">
      <h3 id="edit-title">Edit {recording.recording_id}</h3>
      <LeaveGuard when={unsaved} message="The recording's changes are not saved: leaving the page drops them." />
      <Field
        label="Recording id"
        value={recordingId}
        onChange={setRecordingId}
        error={error}
        path={['recording_id']}
        required
        hint="A new id is refused while an agent or tool names the recording: change those first"
      />
      <Field
        label="Transcript"
        value={transcript}
        onChange={setTranscript}
        error={error}
        path={['transcript']}
        multiline={{ maxLength: 10_000 }}
        hint="What the recording says: the agent's turn in transcripts and the model's context, from the next call on"
      />
      <FormEnd error={error} saved={false} submitLabel="Save" onClose={onClose} />
    </form>
  )
}
