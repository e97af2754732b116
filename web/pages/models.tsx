import { useId, useState } from 'react'
import { api, type Schemas } from '../api'
import { ConfirmButton, EditButton, Empty, ErrorNote, Field, FormEnd, Page, Show, useLoad, useSubmit } from '../ui'

export function Models() {
  const connections = useLoad(
    () => api<{ connections: any[] }>('GET', '/api/v1/organizations/provider-connections'),
    [],
  )
  const configurations = useLoad(
    () => api<{ configurations: Configuration[] }>('GET', '/api/v1/organizations/model-configurations'),
    [],
  )
  const [checks, setChecks] = useState<Record<string, string>>({})
  const [editingServer, setEditingServer] = useState<Connection | null>(null)
  const [editingConfiguration, setEditingConfiguration] = useState<string | null>(null)
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
    <Page title="Models">
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
                    <EditButton label={`Edit server ${connection.name}`} onClick={() => setEditingServer(connection)} />{' '}
                    <ConfirmButton
                      label={`Delete server ${connection.name}`}
                      confirmText={`Delete “${connection.name}”`}
                      onConfirm={removal.submit(async () => {
                        await api('DELETE', `/api/v1/organizations/provider-connections/${connection.uuid}`)
                        connections.reload()
                      })}
                    >
                      Delete
                    </ConfirmButton>
                  </li>
                ))}
              </ul>
            )
          }
        </Show>
        <ErrorNote error={removal.error} />
        {editingServer ? (
          <ConnectionForm
            key={editingServer.uuid}
            editing={editingServer}
            onSaved={connections.reload}
            onClose={() => setEditingServer(null)}
          />
        ) : null}
        <ConnectionForm onSaved={connections.reload} />
      </section>
      <section className="card" aria-labelledby="configurations-title">
        <h2 id="configurations-title">Model configurations</h2>
        <Show loaded={configurations} what="model configurations">
          {({ configurations: list }) =>
            list.length === 0 ? (
              <Empty title="No model configuration yet.">
                Create one: the LLM, and optionally speech to text and a voice.
              </Empty>
            ) : (
              <ul className="plain">
                {list.map((item) => (
                  <li key={item.uuid}>
                    <strong>{item.name}</strong>
                    {item.is_default ? <span className="muted"> (default)</span> : null}{' '}
                    <EditButton
                      label={`Edit configuration ${item.name}`}
                      onClick={() => setEditingConfiguration(item.uuid)}
                    />{' '}
                    <ConfirmButton
                      label={`Delete configuration ${item.name}`}
                      confirmText={`Delete “${item.name}”`}
                      onConfirm={removal.submit(async () => {
                        await api('DELETE', `/api/v1/organizations/model-configurations/${item.uuid}`)
                        configurations.reload()
                      })}
                    >
                      Delete
                    </ConfirmButton>
                  </li>
                ))}
              </ul>
            )
          }
        </Show>
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
      <PriceCard />
    </Page>
  )
}

type Connection = { uuid: string; name: string; base_url: string; api_key: string | null }

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
  const [name, setName] = useState(editing?.name ?? '')
  const [baseUrl, setBaseUrl] = useState(editing?.base_url ?? '')
  const [key, setKey] = useState('')
  const [saved, setSaved] = useState(false)
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
      <h3 id={titleId}>{editing ? `Edit “${editing.name}”` : 'Add a model server'}</h3>
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

type Configuration = Schemas['ModelConfigurationResponse']
/** A stored configuration section: a model server's (with its settings) or the built-in voice. */
type Section = Configuration['llm']

/** The choice shown for a voice on a model server, which this form keeps as stored. */
const SERVER_VOICE = 'server'
const BUILTIN_VOICES = ['slt', 'rms', 'awb', 'kal16']

/** What the form shows of a stored configuration (or of a new one). */
function formValues(stored?: Configuration) {
  const tts = stored?.tts
  return {
    name: stored?.name ?? '',
    llm: stored?.llm.provider_connection_uuid ?? '',
    model: typeof stored?.llm.settings.model === 'string' ? stored.llm.settings.model : '',
    voice: !stored ? 'slt' : !tts ? '' : tts.builtin ? String(tts.settings.voice ?? '') : SERVER_VOICE,
  }
}

type FormValues = ReturnType<typeof formValues>

/** The LLM section to send: the stored one's other settings (temperature, …) kept, since a sent section replaces it. */
function llmSection(values: FormValues, stored?: Section) {
  const { model: _replaced, ...kept } = stored?.settings ?? {}
  const settings = { ...kept, ...(values.model ? { model: values.model } : {}) }
  return {
    provider_connection_uuid: values.llm,
    ...(Object.keys(settings).length ? { settings } : {}),
  }
}

const builtinVoice = (voice: string) => (voice ? { builtin: true, settings: { voice } } : null)

/** The body of a new configuration (POST), or of an edited one (PUT): only its name and the sections changed. */
function configurationBody(values: FormValues, editing?: Configuration) {
  if (!editing)
    return {
      name: values.name,
      llm: llmSection(values),
      ...(values.voice ? { tts: builtinVoice(values.voice) } : {}),
    }
  const stored = formValues(editing)
  return {
    ...(values.name !== stored.name ? { name: values.name } : {}),
    ...(values.llm !== stored.llm || values.model !== stored.model ? { llm: llmSection(values, editing.llm) } : {}),
    ...(values.voice !== stored.voice ? { tts: builtinVoice(values.voice) } : {}),
  }
}

/**
 * A model configuration's form: a new one (POST), or `editing` one (PUT of its name and the sections changed; the
 * sections it does not show — speech to text, embeddings, realtime, a voice on a model server — are kept as stored).
 * A configuration names its model servers, never their keys: nothing secret is shown or sent.
 */
function ConfigurationForm({
  connections,
  editing,
  onSaved,
  onClose,
}: {
  connections: Connection[]
  editing?: Configuration
  onSaved: () => void
  onClose?: () => void
}) {
  const [values, setValues] = useState(() => formValues(editing))
  const [saved, setSaved] = useState(false)
  const { error, submit } = useSubmit()
  const titleId = useId()
  const set = (name: keyof FormValues) => (value: string) => setValues({ ...values, [name]: value })
  const save = submit(async () => {
    setSaved(false)
    const body = configurationBody(values, editing)
    if (editing) {
      await api('PUT', `/api/v1/organizations/model-configurations/${editing.uuid}`, body)
      setSaved(true)
    } else {
      await api('POST', '/api/v1/organizations/model-configurations', body)
      setValues({ ...values, name: '', model: '' })
    }
    onSaved()
  })
  const voices = [
    { value: '', label: 'None' },
    ...(formValues(editing).voice === SERVER_VOICE ? [{ value: SERVER_VOICE, label: 'On its model server' }] : []),
    ...BUILTIN_VOICES.map((voice) => ({ value: voice, label: voice })),
  ]
  return (
    <form className="inline-form" onSubmit={save} aria-labelledby={titleId}>
      <h3 id={titleId}>{editing ? `Edit “${editing.name}”` : 'Add a configuration'}</h3>
      <Field label="Name" value={values.name} onChange={set('name')} error={error} path={['name']} required />
      <Field
        label="LLM server"
        value={values.llm}
        onChange={set('llm')}
        error={error}
        path={['llm', 'provider_connection_uuid']}
        required
        options={[
          { value: '', label: 'Choose a model server' },
          ...connections.map((item) => ({ value: item.uuid, label: item.name })),
        ]}
      />
      <Field
        label="LLM model"
        value={values.model}
        onChange={set('model')}
        error={error}
        path={['llm', 'settings', 'model']}
      />
      <Field
        label="Built-in voice"
        value={values.voice}
        onChange={set('voice')}
        error={error}
        path={['tts']}
        options={voices}
      />
      <FormEnd
        error={error}
        saved={saved}
        submitLabel={editing ? 'Save configuration' : 'Add configuration'}
        onClose={onClose}
      />
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

/** The prices runs are costed with (their cost_info). */
function PriceCard() {
  const loaded = useLoad(
    () => api<{ price_card: Record<string, unknown> | null }>('GET', '/api/v1/organizations/price-card'),
    [],
  )
  const [values, setValues] = useState<Record<string, string> | null>(null)
  const [saved, setSaved] = useState(false)
  const { error, submit } = useSubmit()
  const shown =
    values ??
    Object.fromEntries(
      Object.entries(loaded.data?.price_card ?? {}).map(([name, value]) => [name, String(value ?? '')]),
    )
  const save = submit(async () => {
    setSaved(false)
    const body: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(shown))
      if (value !== '') body[name] = name === 'currency' ? value : Number(value)
    await api('PUT', '/api/v1/organizations/price-card', body)
    setSaved(true)
  })
  const set = (name: string) => (value: string) => setValues({ ...shown, [name]: value })
  return (
    <form className="card inline-form" onSubmit={save} aria-labelledby="price-card-title">
      <h2 id="price-card-title">Price card</h2>
      <Field
        label="Currency"
        value={shown.currency ?? ''}
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
          value={shown[name] ?? ''}
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
