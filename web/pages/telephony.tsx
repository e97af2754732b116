import { useId, useState } from 'react'
import { api } from '../api'
import { href } from '../router'
import {
  ConfirmButton,
  EditButton,
  Empty,
  ErrorNote,
  Field,
  LeaveGuard,
  Page,
  Show,
  StateBadge,
  Table,
  useLoad,
  useSubmit,
  useUnsaved,
} from '../ui'

type UiField = {
  name: string
  label: string
  type: string
  required: boolean
  sensitive: boolean
  description: string | null
  placeholder: string | null
  options: { value: string; label: string }[] | null
}
type Provider = { provider: string; display_name: string; fields: UiField[] }

/** `a.b.c` → nested object keys. */
function setPath(target: Record<string, any>, dotted: string, value: unknown) {
  const parts = dotted.split('.')
  let node = target
  for (const part of parts.slice(0, -1)) node = node[part] ??= {}
  node[parts.at(-1)!] = value
}

export function Telephony({ params }: { params: URLSearchParams }) {
  const numbersOf = Number(params.get('numbers')) || null
  const [editing, setEditing] = useState<number | null>(null)
  const removal = useSubmit()
  const remove = (id: number) =>
    removal.submit(async () => {
      await api('DELETE', `/api/v1/organizations/telephony-configs/${id}`)
      if (editing === id) setEditing(null)
      configurations.reload()
    })
  const configurations = useLoad(
    () => api<{ configurations: any[] }>('GET', '/api/v1/organizations/telephony-configs'),
    [],
  )
  const metadata = useLoad(
    () => api<{ providers: Provider[] }>('GET', '/api/v1/organizations/telephony-providers/metadata'),
    [],
  )
  return (
    <Page title="Telephony">
      <Show loaded={configurations} what="telephony configurations">
        {({ configurations: list }) =>
          list.length === 0 ? (
            <Empty title="No telephony configuration yet.">
              Connect your PBX (Asterisk ARI) or a carrier below to place and answer calls.
            </Empty>
          ) : (
            <Table columns={['Name', 'Provider', 'Connection', 'Numbers', 'Outbound', 'Actions']}>
              {list.map((config) => (
                <tr key={config.id}>
                  <td>
                    <a href={href('/telephony', { numbers: config.id })}>{config.name}</a>
                    {config.is_default_outbound ? <span className="muted"> (default)</span> : null}
                  </td>
                  <td>{config.provider}</td>
                  <td>
                    <StateBadge
                      state={
                        config.inactive
                          ? 'inactive'
                          : config.connected === false
                            ? 'disconnected'
                            : config.connected
                              ? 'connected'
                              : 'configured'
                      }
                    />
                  </td>
                  <td>{config.phone_number_count}</td>
                  <td>{config.is_ready_for_outbound ? 'ready' : (config.outbound_blocked_reason ?? 'not ready')}</td>
                  <td className="actions">
                    <EditButton label={`Edit configuration ${config.name}`} onClick={() => setEditing(config.id)} />
                    <ConfirmButton
                      label={`Delete configuration ${config.name}`}
                      confirmText={`Delete “${config.name}” and its numbers`}
                      onConfirm={remove(config.id)}
                    >
                      Delete
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
      <ErrorNote error={removal.error} />
      {editing ? (
        <Show loaded={metadata} what="providers">
          {({ providers }) => (
            <EditConfiguration
              id={editing}
              providers={providers}
              onSaved={configurations.reload}
              onClose={() => setEditing(null)}
            />
          )}
        </Show>
      ) : null}
      {numbersOf ? <PhoneNumbers configurationId={numbersOf} onChanged={configurations.reload} /> : null}
      <TestCall configurations={configurations.data?.configurations ?? []} />
      <Show loaded={metadata} what="providers">
        {({ providers }) => <ConfigurationForm providers={providers} onSaved={configurations.reload} />}
      </Show>
    </Page>
  )
}

/** `a.b.c` of a nested object; undefined when absent. */
const getPath = (source: Record<string, any> | undefined, dotted: string): unknown =>
  dotted.split('.').reduce<any>((node, part) => (node && typeof node === 'object' ? node[part] : undefined), source)

/** A field's value as the form holds it (text), from what the API stored. */
const asText = (value: unknown) =>
  value === undefined || value === null ? '' : Array.isArray(value) ? value.join(', ') : String(value)

/** A field's text as the API takes it. */
function fromText(field: UiField, raw: string): unknown {
  if (field.type === 'number') return Number(raw)
  if (field.type === 'boolean') return raw === 'true'
  if (field.type === 'string-array')
    return raw
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean)
  return raw
}

const isSecret = (field: UiField) => field.sensitive || field.type === 'password'

/**
 * A configuration's form, built from its provider's metadata: a new one (POST), or `editing` one (PUT of the fields
 * changed only). An edited configuration's secrets are shown masked as a hint and their fields left empty: a secret is
 * sent only when one is typed, so the stored one is never overwritten by its mask.
 */
function ConfigurationForm({
  providers,
  editing,
  onSaved,
  onCancel,
}: {
  providers: Provider[]
  editing?: { id: number; name: string; provider: string; credentials: Record<string, any> }
  onSaved: () => void
  onCancel?: () => void
}) {
  const [providerName, setProviderName] = useState(editing?.provider ?? providers[0]?.provider ?? '')
  const provider = providers.find((item) => item.provider === providerName)
  const fields = (provider?.fields ?? []).filter((field) => field.name !== 'provider' && field.type !== 'readonly')
  const storedText = (field: UiField) => (isSecret(field) ? '' : asText(getPath(editing?.credentials, field.name)))
  const [name, setName] = useState(editing?.name ?? '')
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(fields.map((field) => [field.name, storedText(field)])),
  )
  const [saved, setSaved] = useState<string | null>(null)
  // what was typed; a new configuration's form is emptied once added, so it then holds nothing unsaved
  const { unsaved, markSaved } = useUnsaved([name, Object.entries(values).filter(([, value]) => value !== '')])
  const { error, submit } = useSubmit()
  const save = submit(async () => {
    setSaved(null)
    const config: Record<string, any> = editing ? {} : { provider: providerName }
    for (const field of fields) {
      const raw = values[field.name] ?? ''
      if (editing ? raw === storedText(field) : raw === '') continue
      setPath(config, field.name, raw === '' ? null : fromText(field, raw))
    }
    const body = editing
      ? { ...(name !== editing.name ? { name } : {}), ...(Object.keys(config).length ? { config } : {}) }
      : { name, config }
    const result = editing
      ? await api('PUT', `/api/v1/organizations/telephony-configs/${editing.id}`, body)
      : await api('POST', '/api/v1/organizations/telephony-configs', body)
    setSaved(result.name ?? name)
    if (editing) markSaved()
    else {
      setValues({})
      setName('')
    }
    onSaved()
  })
  const title = editing ? `Edit “${editing.name}”` : 'Add a configuration'
  const titleId = useId()
  return (
    <form className="card form" onSubmit={save} aria-labelledby={titleId}>
      <h2 id={titleId}>{title}</h2>
      <LeaveGuard
        when={unsaved}
        message="A telephony configuration's form has changes that are not saved: leaving the page drops them."
      />
      {editing ? null : (
        <Field
          label="Provider"
          value={providerName}
          onChange={(value) => {
            setProviderName(value)
            setValues({})
          }}
          options={providers.map((item) => ({ value: item.provider, label: item.display_name }))}
        />
      )}
      <Field label="Name" value={name} onChange={setName} error={error} path={['name']} required />
      {fields.map((field) => {
        const stored = editing && isSecret(field) ? asText(getPath(editing.credentials, field.name)) : ''
        return (
          <Field
            key={`${providerName}-${field.name}`}
            label={field.label}
            type={isSecret(field) ? 'password' : field.type === 'number' ? 'number' : 'text'}
            value={values[field.name] ?? ''}
            onChange={(value) => setValues({ ...values, [field.name]: value })}
            error={error}
            path={['config', ...field.name.split('.')]}
            otherPaths={[['config', providerName, ...field.name.split('.')]]}
            required={field.required && !stored}
            hint={stored ? `Stored: ${stored}. Leave empty to keep it.` : (field.description ?? undefined)}
            autoComplete={field.sensitive ? 'new-password' : 'off'}
            options={
              field.type === 'select' && field.options
                ? [{ value: '', label: 'Choose…' }, ...field.options]
                : field.type === 'boolean'
                  ? [
                      { value: '', label: 'Default' },
                      { value: 'true', label: 'Yes' },
                      { value: 'false', label: 'No' },
                    ]
                  : undefined
            }
          />
        )
      })}
      <ErrorNote error={error} />
      {saved ? (
        <p role="status" className="ok">
          Saved “{saved}”. Secrets are stored encrypted and shown masked.
        </p>
      ) : null}
      <div className="actions">
        <button type="submit">Save configuration</button>
        {onCancel ? (
          <button type="button" className="secondary" onClick={onCancel}>
            Close
          </button>
        ) : null}
      </div>
    </form>
  )
}

/** The configuration being edited, loaded with its (masked) credentials. */
function EditConfiguration({
  id,
  providers,
  onSaved,
  onClose,
}: {
  id: number
  providers: Provider[]
  onSaved: () => void
  onClose: () => void
}) {
  const loaded = useLoad(() => api('GET', `/api/v1/organizations/telephony-configs/${id}`), [id])
  return (
    <Show loaded={loaded} what="the configuration">
      {(detail: any) => (
        <ConfigurationForm
          key={id}
          providers={providers}
          editing={{ id, name: detail.name, provider: detail.provider, credentials: detail.credentials ?? {} }}
          onSaved={onSaved}
          onCancel={onClose}
        />
      )}
    </Show>
  )
}

type Agent = { id: number; name: string; status: string; workflow_uuid: string }

const useAgents = () => useLoad(() => api<Agent[]>('GET', '/api/v1/workflow/fetch'), [])

const agentOptions = (agents: Agent[] | null, none: string) => [
  { value: '', label: none },
  ...(agents ?? [])
    .filter((agent) => agent.status !== 'archived')
    .map((agent) => ({ value: String(agent.id), label: agent.name })),
]

/** The phone numbers of one configuration, with the agent that answers each, and a form to add one. */
function PhoneNumbers({ configurationId, onChanged }: { configurationId: number; onChanged: () => void }) {
  const path = `/api/v1/organizations/telephony-configs/${configurationId}/phone-numbers`
  const numbers = useLoad(() => api<{ phone_numbers: any[] }>('GET', path), [configurationId])
  const agents = useAgents()
  const [address, setAddress] = useState('')
  const [label, setLabel] = useState('')
  const [inbound, setInbound] = useState('')
  const { unsaved, markSaved } = useUnsaved([address, label, inbound])
  const { error, submit } = useSubmit()
  const add = submit(async () => {
    await api('POST', path, {
      address,
      ...(label ? { label } : {}),
      ...(inbound ? { inbound_workflow_id: Number(inbound) } : {}),
    })
    setAddress('')
    setLabel('')
    // emptied for the next number, its inbound agent kept: nothing left unsaved
    markSaved(['', '', inbound])
    numbers.reload()
    onChanged()
  })
  return (
    <section className="card" aria-labelledby="numbers-title">
      <h2 id="numbers-title">Phone numbers</h2>
      <Show loaded={numbers} what="phone numbers">
        {({ phone_numbers: list }) =>
          list.length === 0 ? (
            <Empty title="No phone number on this configuration.">Add one to answer its calls with an agent.</Empty>
          ) : (
            <Table card={false} columns={['Number', 'Label', 'Inbound agent', 'Caller id']}>
              {list.map((number) => (
                <tr key={number.id}>
                  <td>{number.address}</td>
                  <td>{number.label ?? '—'}</td>
                  <td>{number.inbound_workflow_name ?? '—'}</td>
                  <td>{number.is_default_caller_id ? 'default' : ''}</td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
      <form className="inline-form" onSubmit={add} aria-labelledby="new-number-title">
        <h3 id="new-number-title">Add a number</h3>
        <LeaveGuard
          when={unsaved}
          message="The new phone number's form has changes that are not saved: leaving the page drops them."
        />
        <Field
          label="Number"
          value={address}
          onChange={setAddress}
          error={error}
          path={['address']}
          required
          hint="E.164, an extension or a SIP URI"
        />
        <Field label="Label" value={label} onChange={setLabel} error={error} path={['label']} />
        <Field
          label="Inbound agent"
          value={inbound}
          onChange={setInbound}
          error={error}
          path={['inbound_workflow_id']}
          options={agentOptions(agents.data, 'None')}
        />
        <ErrorNote error={error} />
        <button type="submit">Add number</button>
      </form>
    </section>
  )
}

type StartedRun = { workflowId: number; runId: number; runName: string }

/**
 * Calls a number with an agent's draft (else its published version) through the public trigger, which accepts the
 * browser's session: the same call an API client makes with a key.
 */
function TestCall({ configurations }: { configurations: { id: number; name: string }[] }) {
  const agents = useAgents()
  const [agentId, setAgentId] = useState('')
  const [phoneNumber, setPhoneNumber] = useState('')
  const [configurationId, setConfigurationId] = useState('')
  const [started, setStarted] = useState<StartedRun | null>(null)
  const { error, submit } = useSubmit()
  const call = submit(async () => {
    setStarted(null)
    const agent = agents.data?.find((item) => String(item.id) === agentId)
    if (!agent) throw new Error('Choose an agent')
    const body = {
      phone_number: phoneNumber,
      ...(configurationId ? { telephony_configuration_id: Number(configurationId) } : {}),
    }
    const answer = await api<{ workflow_run_id: number; workflow_run_name: string }>(
      'POST',
      `/api/v1/public/agent/test/workflow/${agent.workflow_uuid}`,
      body,
    )
    setStarted({ workflowId: agent.id, runId: answer.workflow_run_id, runName: answer.workflow_run_name })
  })
  return (
    <form className="card form" onSubmit={call} aria-labelledby="test-call-title">
      <h2 id="test-call-title">Test call</h2>
      <Field
        label="Agent"
        value={agentId}
        onChange={setAgentId}
        options={agentOptions(agents.data, 'Choose…')}
        required
      />
      <Field
        label="Phone number"
        value={phoneNumber}
        onChange={setPhoneNumber}
        error={error}
        path={['phone_number']}
        required
        hint="The number to call, with the agent's draft (else its published version)"
      />
      <Field
        label="Telephony configuration"
        value={configurationId}
        onChange={setConfigurationId}
        error={error}
        path={['telephony_configuration_id']}
        options={[
          { value: '', label: 'Default outbound' },
          ...configurations.map((config) => ({ value: String(config.id), label: config.name })),
        ]}
      />
      <ErrorNote error={error} />
      {started ? (
        <p role="status" className="ok">
          Calling: <a href={href(`/runs/${started.workflowId}/${started.runId}`)}>{started.runName}</a>
        </p>
      ) : null}
      <button type="submit">Call</button>
    </form>
  )
}
