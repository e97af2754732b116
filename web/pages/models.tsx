import { useId, useState } from 'react'
import { api } from '../api'
import { ConfigurationForm, type Configuration } from './model-configuration'
import {
  ConfirmButton,
  EditButton,
  Empty,
  ErrorNote,
  Field,
  FormEnd,
  LeaveGuard,
  type Loaded,
  Page,
  Show,
  useLoad,
  useSubmit,
  useUnsaved,
} from '../ui'

type Connections = { connections: Connection[] }
type Configurations = { configurations: Configuration[] }

export function Models() {
  const connections = useLoad(() => api<Connections>('GET', '/api/v1/organizations/provider-connections'), [])
  const configurations = useLoad(() => api<Configurations>('GET', '/api/v1/organizations/model-configurations'), [])
  return (
    <Page title="Models">
      <ServersSection connections={connections} />
      <ConfigurationsSection configurations={configurations} connections={connections} />
      <PriceCard />
    </Page>
  )
}

/** An item's Edit and Delete (asked first) buttons, named for it ("Edit server Lab GPU"). */
function EditAndDelete(props: { what: string; name: string; onEdit: () => void; onDelete: () => void }) {
  return (
    <>
      <EditButton label={`Edit ${props.what}`} onClick={props.onEdit} />{' '}
      <ConfirmButton label={`Delete ${props.what}`} confirmText={`Delete “${props.name}”`} onConfirm={props.onDelete}>
        Delete
      </ConfirmButton>
    </>
  )
}

/** The model servers: each checked, edited or deleted in place, and the form that adds one. */
function ServersSection({ connections }: { connections: Loaded<Connections> }) {
  const [checks, setChecks] = useState<Record<string, string>>({})
  // the server being edited, by uuid: its form reads the latest list (a save re-reads it), never a stale row
  const [editingServer, setEditingServer] = useState<string | null>(null)
  const editedServer = connections.data?.connections.find((connection) => connection.uuid === editingServer)
  const removal = useSubmit()
  const check = async (uuid: string) => {
    setChecks((previous) => ({ ...previous, [uuid]: 'Checking…' }))
    try {
      const result = await api('POST', `/api/v1/organizations/provider-connections/${uuid}/check`)
      setChecks((previous) => ({
        ...previous,
        [uuid]: result.ok ? `OK: ${result.models.length} models` : `Failed: ${result.error}`,
      }))
    } catch (caught) {
      setChecks((previous) => ({ ...previous, [uuid]: `Failed: ${(caught as Error).message}` }))
    }
  }
  return (
    <section className="card" aria-labelledby="connections-title">
      <h2 id="connections-title">Model servers</h2>
      <Show loaded={connections} what="model servers">
        {({ connections: list }) =>
          list.length === 0 ? (
            <Empty title="No model server yet.">
              Add an OpenAI-compatible server (vLLM, Ollama, a speech server) below.
            </Empty>
          ) : (
            <ul className="plain">
              {list.map((connection) => (
                <li key={connection.uuid}>
                  <strong>{connection.name}</strong>{' '}
                  <span className="muted">
                    {connection.provider} · {connection.base_url} · key {connection.api_key ?? 'none'}
                  </span>{' '}
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => check(connection.uuid)}
                    aria-label={`Check ${connection.name}`}
                  >
                    Check
                  </button>{' '}
                  <span role="status">{checks[connection.uuid] ?? ''}</span>{' '}
                  <EditAndDelete
                    what={`server ${connection.name}`}
                    name={connection.name}
                    onEdit={() => setEditingServer(connection.uuid)}
                    onDelete={removal.submit(async () => {
                      await api('DELETE', `/api/v1/organizations/provider-connections/${connection.uuid}`)
                      connections.reload()
                    })}
                  />
                </li>
              ))}
            </ul>
          )
        }
      </Show>
      <ErrorNote error={removal.error} />
      {editedServer ? (
        <ConnectionForm
          key={editedServer.uuid}
          editing={editedServer}
          onSaved={connections.reload}
          onClose={() => setEditingServer(null)}
        />
      ) : null}
      <ConnectionForm onSaved={connections.reload} />
    </section>
  )
}

/** The model configurations: each edited or deleted in place, and the form that adds one. */
function ConfigurationsSection({
  configurations,
  connections,
}: {
  configurations: Loaded<Configurations>
  connections: Loaded<Connections>
}) {
  const [editingConfiguration, setEditingConfiguration] = useState<string | null>(null)
  const removal = useSubmit()
  return (
    <section className="card" aria-labelledby="configurations-title">
      <h2 id="configurations-title">Model configurations</h2>
      <Show loaded={configurations} what="model configurations">
        {({ configurations: list }) =>
          list.length === 0 ? (
            <Empty title="No model configuration yet.">
              Create one: the LLM, and optionally speech to text, a voice, embeddings or a realtime model.
            </Empty>
          ) : (
            <ul className="plain">
              {list.map((item) => (
                <li key={item.uuid}>
                  <strong>{item.name}</strong>
                  {item.is_default ? <span className="muted"> (default)</span> : null}{' '}
                  <EditAndDelete
                    what={`configuration ${item.name}`}
                    name={item.name}
                    onEdit={() => setEditingConfiguration(item.uuid)}
                    onDelete={removal.submit(async () => {
                      await api('DELETE', `/api/v1/organizations/model-configurations/${item.uuid}`)
                      configurations.reload()
                    })}
                  />
                </li>
              ))}
            </ul>
          )
        }
      </Show>
      <ErrorNote error={removal.error} />
      <Show loaded={connections} what="model servers">
        {({ connections: servers }) => {
          // the stored configuration as last loaded: what the form compares its fields with after each save
          const editing = configurations.data?.configurations.find((item) => item.uuid === editingConfiguration)
          return (
            <>
              {editing ? (
                <ConfigurationForm
                  key={editing.uuid}
                  connections={servers}
                  editing={editing}
                  onSaved={configurations.reload}
                  onClose={() => setEditingConfiguration(null)}
                />
              ) : null}
              <ConfigurationForm connections={servers} onSaved={configurations.reload} />
            </>
          )
        }}
      </Show>
    </section>
  )
}

type Connection = { uuid: string; name: string; provider: string; base_url: string; api_key: string | null }

/**
 * A model server's form: a new one (POST), or `editing` one (PUT of the fields changed). Its stored key is shown
 * masked as a hint and sent only when one is typed: the mask never overwrites it.
 */
function ConnectionForm({
  editing,
  onSaved,
  onClose,
}: {
  editing?: Connection
  onSaved: () => void
  onClose?: () => void
}) {
  // named after the server as opened: a rename saved here does not retitle the form under the admin
  const [title] = useState(editing ? `Edit “${editing.name}”` : 'Add a model server')
  const [name, setName] = useState(editing?.name ?? '')
  const [baseUrl, setBaseUrl] = useState(editing?.base_url ?? '')
  const [key, setKey] = useState('')
  const [saved, setSaved] = useState(false)
  // the key only as typed or not: its field starts empty and is emptied once saved (its value is kept out of this)
  const { unsaved, markSaved } = useUnsaved([name, baseUrl, key !== ''])
  const { error, submit } = useSubmit()
  const titleId = useId()
  const save = submit(async () => {
    setSaved(false)
    if (editing) {
      await api('PUT', `/api/v1/organizations/provider-connections/${editing.uuid}`, {
        ...(name !== editing.name ? { name } : {}),
        ...(baseUrl !== editing.base_url ? { base_url: baseUrl } : {}),
        ...(key ? { api_key: key } : {}),
      })
      setSaved(true)
      markSaved([name, baseUrl, false])
    } else {
      await api('POST', '/api/v1/organizations/provider-connections', {
        name,
        provider: 'openai',
        base_url: baseUrl,
        ...(key ? { api_key: key } : {}),
      })
      setName('')
      setBaseUrl('')
    }
    setKey('')
    onSaved()
  })
  return (
    <form className="inline-form" onSubmit={save} aria-labelledby={titleId}>
      <h3 id={titleId}>{title}</h3>
      <LeaveGuard
        when={unsaved}
        message="A model server's form has changes that are not saved: leaving the page drops them."
      />
      <Field label="Name" value={name} onChange={setName} error={error} path={['name']} required />
      <Field
        label="Base URL"
        value={baseUrl}
        onChange={setBaseUrl}
        error={error}
        path={['base_url']}
        required
        hint="e.g. http://10.0.0.5:8000/v1"
      />
      <Field
        label="API key"
        type="password"
        value={key}
        onChange={setKey}
        error={error}
        path={['api_key']}
        autoComplete="new-password"
        hint={editing?.api_key ? `Stored: ${editing.api_key}. Leave empty to keep it.` : undefined}
      />
      <FormEnd error={error} saved={saved} submitLabel={editing ? 'Save server' : 'Add server'} onClose={onClose} />
    </form>
  )
}

const PRICES = [
  ['llm_input_per_1k_tokens', 'LLM input, per 1k tokens'],
  ['llm_output_per_1k_tokens', 'LLM output, per 1k tokens'],
  ['stt_per_minute', 'Speech to text, per minute'],
  ['tts_per_1k_characters', 'Text to speech, per 1k characters'],
  ['telephony_per_minute', 'Telephony, per minute'],
] as const

type PriceCardBody = Record<string, unknown> | null

/** The prices runs are costed with (their cost_info). */
function PriceCard() {
  const loaded = useLoad(() => api<{ price_card: PriceCardBody }>('GET', '/api/v1/organizations/price-card'), [])
  return (
    <Show loaded={loaded} what="the price card">
      {({ price_card }) => <PriceCardForm stored={price_card} />}
    </Show>
  )
}

/** The price card as the form holds it: each price as text, by name. */
const priceValues = (stored: PriceCardBody) =>
  Object.fromEntries(Object.entries(stored ?? {}).map(([name, value]) => [name, String(value ?? '')]))

function PriceCardForm({ stored }: { stored: PriceCardBody }) {
  const [values, setValues] = useState(() => priceValues(stored))
  const [saved, setSaved] = useState(false)
  const { unsaved, markSaved } = useUnsaved(values)
  const { error, submit } = useSubmit()
  const save = submit(async () => {
    setSaved(false)
    const body: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(values))
      if (value !== '') body[name] = name === 'currency' ? value : Number(value)
    await api('PUT', '/api/v1/organizations/price-card', body)
    setSaved(true)
    markSaved()
  })
  const set = (name: string) => (value: string) => setValues({ ...values, [name]: value })
  return (
    <form className="card inline-form" onSubmit={save} aria-labelledby="price-card-title">
      <h2 id="price-card-title">Price card</h2>
      <LeaveGuard
        when={unsaved}
        message="The price card has changes that are not saved: leaving the page drops them."
      />
      <Field
        label="Currency"
        value={values.currency ?? ''}
        onChange={set('currency')}
        error={error}
        path={['currency']}
        hint="ISO 4217, e.g. USD"
      />
      {PRICES.map(([name, label]) => (
        <Field
          key={name}
          label={label}
          type="number"
          value={values[name] ?? ''}
          onChange={set(name)}
          error={error}
          path={[name]}
        />
      ))}
      <ErrorNote error={error} />
      {saved ? (
        <p role="status" className="ok">
          Saved: runs that finish from now on are costed with it.
        </p>
      ) : null}
      <button type="submit">Save prices</button>
    </form>
  )
}
