import { useId, useState } from 'react'
import { api, type ApiError, type Schemas } from '../api'
import {
  ConfirmButton,
  EditButton,
  Empty,
  ErrorNote,
  Field,
  FormEnd,
  LeaveGuard,
  type Loaded,
  Show,
  Table,
  Time,
  useSubmit,
  useUnsaved,
} from '../ui'

/**
 * The organization's credentials (the authentication header an HTTP or MCP tool, or a webhook, sends): listed, added
 * of any type the API takes, renamed, their secret replaced, deleted. The API never returns a secret; the page sends
 * one only when it is typed.
 */

type Credential = Schemas['CredentialResponse']
type CredentialType = Credential['credential_type']
/**
 * A field of `credential_data` (src/credentials/data.ts): `secret` ones are password inputs; `optional` ones are left
 * out when empty, `mayBeEmpty` ones sent empty.
 */
type DataField = {
  name: string
  label: string
  secret?: boolean
  optional?: boolean
  mayBeEmpty?: boolean
  hint?: string
}

const CREDENTIAL_TYPES: Record<CredentialType, { label: string; fields: DataField[] }> = {
  bearer_token: { label: 'Bearer token', fields: [{ name: 'token', label: 'Token', secret: true }] },
  api_key: {
    label: 'API key header',
    fields: [
      { name: 'api_key', label: 'API key', secret: true },
      { name: 'header_name', label: 'Header name', optional: true, hint: 'X-API-Key when left empty' },
    ],
  },
  basic_auth: {
    label: 'Basic auth',
    fields: [
      { name: 'username', label: 'Username' },
      { name: 'password', label: 'Password', secret: true, mayBeEmpty: true, hint: 'May be empty' },
    ],
  },
  custom_header: {
    label: 'Custom header',
    fields: [
      { name: 'header_name', label: 'Header name' },
      { name: 'header_value', label: 'Header value', secret: true },
    ],
  },
}
const TYPES = Object.keys(CREDENTIAL_TYPES) as CredentialType[]
const CREDENTIALS = '/api/v1/credentials'

export function Credentials({ loaded }: { loaded: Loaded<Credential[]> }) {
  const [editing, setEditing] = useState<Credential | null>(null)
  return (
    <section className="card" aria-labelledby="credentials-title">
      <h2 id="credentials-title">Credentials</h2>
      <Show loaded={loaded} what="credentials">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No credential yet.">
              Add the token, key or password an HTTP tool, an MCP server or a webhook sends, below.
            </Empty>
          ) : (
            <Table card={false} columns={['Name', 'Type', 'Description', 'Updated', { hidden: 'Actions' }]}>
              {list.map((credential) => (
                <CredentialRow
                  key={credential.uuid}
                  credential={credential}
                  onEdit={() => setEditing(credential)}
                  onDeleted={() => {
                    if (editing?.uuid === credential.uuid) setEditing(null)
                    loaded.reload()
                  }}
                />
              ))}
            </Table>
          )
        }
      </Show>
      {editing ? (
        <CredentialForm key={editing.uuid} editing={editing} onSaved={loaded.reload} onClose={() => setEditing(null)} />
      ) : null}
      <CredentialForm onSaved={loaded.reload} />
    </section>
  )
}

function CredentialRow({
  credential,
  onEdit,
  onDeleted,
}: {
  credential: Credential
  onEdit: () => void
  onDeleted: () => void
}) {
  const removal = useSubmit()
  const remove = removal.submit(async () => {
    await api('DELETE', `${CREDENTIALS}/${credential.uuid}`)
    onDeleted()
  })
  return (
    <tr>
      <td className="text">{credential.name}</td>
      <td>{CREDENTIAL_TYPES[credential.credential_type]?.label ?? credential.credential_type}</td>
      <td className="text">{credential.description ?? ''}</td>
      <td>
        <Time at={credential.updated_at} />
      </td>
      <td className="actions">
        <EditButton label={`Edit credential ${credential.name}`} onClick={onEdit} />
        <ConfirmButton
          label={`Delete credential ${credential.name}`}
          confirmText={`Delete “${credential.name}”`}
          onConfirm={remove}
        >
          Delete
        </ConfirmButton>
        <ErrorNote error={removal.error} />
      </td>
    </tr>
  )
}

const emptyData = () => ({}) as Record<string, string>

/**
 * What the form's guard compares: its data only as the fields typed in (they start empty and are emptied once saved),
 * so no secret is kept beside the form's own state.
 */
const guardedValues = (name: string, description: string, type: CredentialType, data: Record<string, string>) => ({
  name,
  description,
  type,
  typed: Object.keys(data).filter((field) => data[field] !== ''),
})

/** The `credential_data` to send: every field of the type (the API replaces the secret whole), optional ones when typed. */
function sentData(type: CredentialType, data: Record<string, string>) {
  return Object.fromEntries(
    CREDENTIAL_TYPES[type].fields
      .filter((field) => !(field.optional && !data[field.name]))
      .map((field) => [field.name, data[field.name] ?? '']),
  )
}

/** A new credential (POST), or `editing` one (PUT of what changed; its data only when some is typed or the type changed). */
function credentialBody(
  values: { name: string; description: string; type: CredentialType; data: Record<string, string> },
  editing?: Credential,
) {
  const typed = Object.values(values.data).some((value) => value !== '')
  if (!editing)
    return {
      name: values.name,
      ...(values.description ? { description: values.description } : {}),
      credential_type: values.type,
      credential_data: sentData(values.type, values.data),
    }
  const typeChanged = values.type !== editing.credential_type
  return {
    ...(values.name !== editing.name ? { name: values.name } : {}),
    ...(values.description !== (editing.description ?? '') ? { description: values.description || null } : {}),
    ...(typeChanged ? { credential_type: values.type } : {}),
    ...(typed || typeChanged ? { credential_data: sentData(values.type, values.data) } : {}),
  }
}

/** Adds a credential, or edits `editing` one: its stored data is never shown; typed data replaces it. */
function CredentialForm({
  editing,
  onSaved,
  onClose,
}: {
  editing?: Credential
  onSaved: () => void
  onClose?: () => void
}) {
  const [name, setName] = useState(editing?.name ?? '')
  const [description, setDescription] = useState(editing?.description ?? '')
  const [type, setType] = useState<CredentialType>(editing?.credential_type ?? 'bearer_token')
  const [data, setData] = useState(emptyData)
  // what is stored now: a second save sends only what changed since the first
  const [stored, setStored] = useState(editing)
  const [saved, setSaved] = useState(false)
  const { unsaved, markSaved } = useUnsaved(guardedValues(name, description, type, data))
  const { error, submit } = useSubmit()
  const titleId = useId()
  const save = submit(async () => {
    setSaved(false)
    const body = credentialBody({ name, description, type, data }, stored)
    if (stored) setStored(await api<Credential>('PUT', `${CREDENTIALS}/${stored.uuid}`, body))
    else await api('POST', CREDENTIALS, body)
    setData(emptyData())
    if (stored) {
      setSaved(true)
      markSaved(guardedValues(name, description, type, emptyData()))
    } else {
      setName('')
      setDescription('')
      // emptied for the next credential, its type kept
      markSaved(guardedValues('', '', type, emptyData()))
    }
    onSaved()
  })
  return (
    <form className="form" onSubmit={save} aria-labelledby={titleId}>
      <h3 id={titleId}>{editing ? `Edit credential “${editing.name}”` : 'Add a credential'}</h3>
      <LeaveGuard
        when={unsaved}
        message="A credential's form has changes that are not saved: leaving the page drops them."
      />
      <Field label="Credential name" value={name} onChange={setName} error={error} path={['name']} required />
      <Field
        label="Credential description"
        value={description}
        onChange={setDescription}
        error={error}
        path={['description']}
      />
      <Field
        label="Credential type"
        value={type}
        onChange={(next) => setType(next as CredentialType)}
        error={error}
        path={['credential_type']}
        options={TYPES.map((value) => ({ value, label: CREDENTIAL_TYPES[value].label }))}
      />
      <DataFields type={type} data={data} onChange={setData} error={error} editing={Boolean(editing)} />
      <div className="row">
        <FormEnd
          error={error}
          saved={saved}
          submitLabel={editing ? 'Save credential' : 'Add credential'}
          onClose={onClose}
        />
      </div>
    </form>
  )
}

function DataFields({
  type,
  data,
  onChange,
  error,
  editing,
}: {
  type: CredentialType
  data: Record<string, string>
  onChange: (data: Record<string, string>) => void
  error: ApiError | null
  editing: boolean
}) {
  const whole = error?.showAtList('credential_data')
  return (
    <fieldset>
      <legend>{CREDENTIAL_TYPES[type].label}</legend>
      {editing ? (
        <small className="muted">
          Stored, never shown. Leave these empty to keep it; what you type replaces it whole.
        </small>
      ) : null}
      {CREDENTIAL_TYPES[type].fields.map((field) => (
        <Field
          key={`${type}-${field.name}`}
          label={field.label}
          type={field.secret ? 'password' : 'text'}
          autoComplete={field.secret ? 'new-password' : 'off'}
          value={data[field.name] ?? ''}
          onChange={(value) => onChange({ ...data, [field.name]: value })}
          error={error}
          path={['credential_data', field.name]}
          required={!editing && !field.optional && !field.mayBeEmpty}
          hint={field.hint}
        />
      ))}
      {whole ? <small className="field-error">{whole}</small> : null}
    </fieldset>
  )
}
