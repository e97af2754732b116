import { useId, useState } from 'react'
import { api, type ApiError, type Schemas } from '../api'
import { Checkbox, Field, FormEnd, LeaveGuard, useSubmit, useUnsaved } from '../ui'
import { SERVICES, type Service, type Setting } from './model-settings'

export type Configuration = Schemas['ModelConfigurationResponse']
type Connection = { uuid: string; name: string }

/** The server choice of a text-to-speech section that is the voice built into the binary. */
const BUILTIN = 'builtin'
const BUILTIN_VOICES = ['slt', 'rms', 'awb', 'kal16']

/** A section as the form holds it: its server ('' none, BUILTIN the built-in voice) and its settings as text, by key. */
type SectionValues = { server: string; settings: Record<string, string> }
type FormValues = { name: string; isDefault: boolean; sections: Record<Service, SectionValues> }

const settingsOf = (service: Service) => SERVICES.find((item) => item.service === service)!.settings

function storedValue(settings: Record<string, unknown> | undefined, key: string): unknown {
  return key
    .split('.')
    .reduce<unknown>((inside, name) => (inside as Record<string, unknown> | undefined)?.[name], settings)
}

function sectionValues(service: Service, stored: Configuration['llm'] | null | undefined): SectionValues {
  const shown = (key: string) => {
    const value = storedValue(stored?.settings, key)
    // streaming: true is the OpenAI socket, which the form names 'openai'
    if (key === 'streaming' && value === true) return 'openai'
    return value === undefined || value === null ? '' : String(value)
  }
  return {
    server: !stored ? '' : stored.builtin ? BUILTIN : (stored.provider_connection_uuid ?? ''),
    settings: Object.fromEntries(settingsOf(service).map(({ key }) => [key, shown(key)])),
  }
}

/** What the form shows of a stored configuration; a new one starts with the built-in voice. */
function formValues(stored?: Configuration): FormValues {
  const sections = Object.fromEntries(
    SERVICES.map(({ service }) => [service, sectionValues(service, stored?.[service])]),
  ) as Record<Service, SectionValues>
  if (!stored) sections.tts = { server: BUILTIN, settings: { ...sections.tts.settings, voice: 'slt' } }
  return { name: stored?.name ?? '', isDefault: stored?.is_default ?? false, sections }
}

/** The section's settings to send: the filled ones, as the API types them, nested where their key says. */
function sentSettings(service: Service, values: Record<string, string>) {
  const settings: Record<string, unknown> = {}
  for (const setting of settingsOf(service)) {
    const text = values[setting.key]
    if (text === '') continue
    const [outer, inner] = setting.key.split('.')
    const value = setting.number ? Number(text) : text
    if (inner) settings[outer] = { ...(settings[outer] as object | undefined), [inner]: value }
    else settings[outer] = value
  }
  return settings
}

/** The section to send (null: none); a sent section replaces the stored one, so every setting shown is sent. */
function sectionBody(service: Service, values: SectionValues) {
  if (!values.server) return null
  if (values.server === BUILTIN) return { builtin: true, settings: { voice: values.settings.voice || 'slt' } }
  const settings = sentSettings(service, values.settings)
  return { provider_connection_uuid: values.server, ...(Object.keys(settings).length ? { settings } : {}) }
}

const sameSection = (a: SectionValues, b: SectionValues) => JSON.stringify(a) === JSON.stringify(b)

/** The body of a new configuration (POST), or of an edited one (PUT): only what changed. */
function configurationBody(values: FormValues, editing?: Configuration) {
  const stored = editing ? formValues(editing) : undefined
  const body: Record<string, unknown> = !stored || values.name !== stored.name ? { name: values.name } : {}
  // a new configuration that is not asked to be the default is left to the API's rule (the first one is)
  if (stored ? values.isDefault !== stored.isDefault : values.isDefault) body.is_default = values.isDefault
  for (const { service } of SERVICES) {
    const section = values.sections[service]
    if (stored && sameSection(section, stored.sections[service])) continue
    if (!stored && !section.server) continue
    body[service] = sectionBody(service, section)
  }
  return body
}

/**
 * A model configuration's form: a new one (POST), or `editing` one (PUT of what changed: name, default, sections), with a
 * fieldset per service: its model server (or none; the built-in voice for text to speech) and every setting it takes.
 * A configuration names its model servers, never their keys: nothing secret is shown or sent.
 */
export function ConfigurationForm({
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
  // a new configuration's form is emptied once added: back to how it opened, so nothing is left unsaved
  const { unsaved, markSaved } = useUnsaved(values)
  const { error, submit } = useSubmit()
  const titleId = useId()
  const setSection = (service: Service, section: SectionValues) =>
    setValues({ ...values, sections: { ...values.sections, [service]: section } })
  const save = submit(async () => {
    setSaved(false)
    const body = configurationBody(values, editing)
    if (editing) {
      await api('PUT', `/api/v1/organizations/model-configurations/${editing.uuid}`, body)
      setSaved(true)
      markSaved()
    } else {
      await api('POST', '/api/v1/organizations/model-configurations', body)
      setValues(formValues())
    }
    onSaved()
  })
  return (
    <form className="form configuration-form" onSubmit={save} aria-labelledby={titleId}>
      <h3 id={titleId}>{editing ? `Edit “${editing.name}”` : 'Add a configuration'}</h3>
      <LeaveGuard
        when={unsaved}
        message="A model configuration's form has changes that are not saved: leaving the page drops them."
      />
      <Field
        label="Name"
        value={values.name}
        onChange={(name) => setValues({ ...values, name })}
        error={error}
        path={['name']}
        required
      />
      <Checkbox
        label="Organization default"
        checked={values.isDefault}
        onChange={(isDefault) => setValues({ ...values, isDefault })}
        error={error}
        path={['is_default']}
        hint={editing ? undefined : 'The first configuration is the default either way'}
      />
      <div className="service-grid">
        {SERVICES.map(({ service, title, label, settings }) => (
          <ServiceFieldset
            key={service}
            service={service}
            title={title}
            label={label}
            settings={settings}
            values={values.sections[service]}
            onChange={(section) => setSection(service, section)}
            connections={connections}
            error={error}
          />
        ))}
      </div>
      <div className="row">
        <FormEnd
          error={error}
          saved={saved}
          submitLabel={editing ? 'Save configuration' : 'Add configuration'}
          onClose={onClose}
        />
      </div>
    </form>
  )
}

/** One service's part of the form: its server, then (once one is chosen) its settings, each with its 422 message. */
function ServiceFieldset({
  service,
  title,
  label,
  settings,
  values,
  onChange,
  connections,
  error,
}: {
  service: Service
  title: string
  label: string
  settings: Setting[]
  values: SectionValues
  onChange: (values: SectionValues) => void
  connections: Connection[]
  error: ApiError | null
}) {
  const setSetting = (setting: string) => (value: string) =>
    onChange({ ...values, settings: { ...values.settings, [setting]: value } })
  const servers = [
    { value: '', label: service === 'llm' ? 'Choose a model server' : 'None' },
    ...(service === 'tts' ? [{ value: BUILTIN, label: 'Built-in voice (no server)' }] : []),
    ...connections.map((item) => ({ value: item.uuid, label: item.name })),
  ]
  return (
    <fieldset>
      <legend>{title}</legend>
      <Field
        label={`${label} server`}
        value={values.server}
        onChange={(server) => onChange({ ...values, server })}
        error={error}
        path={[service, 'provider_connection_uuid']}
        required={service === 'llm'}
        options={servers}
      />
      {values.server === BUILTIN ? (
        <Field
          label="Built-in voice"
          value={values.settings.voice || 'slt'}
          onChange={setSetting('voice')}
          error={error}
          path={[service, 'settings', 'voice']}
          options={BUILTIN_VOICES.map((voice) => ({ value: voice, label: voice }))}
        />
      ) : values.server ? (
        settings.map((setting) => (
          <Field
            key={setting.key}
            label={`${label} ${setting.label}`}
            type={setting.number ? 'number' : 'text'}
            value={values.settings[setting.key]}
            onChange={setSetting(setting.key)}
            error={error}
            path={[service, 'settings', ...setting.key.split('.')]}
            hint={setting.hint}
            options={setting.options}
            multiline={setting.multiline}
            min={setting.number?.min}
            max={setting.number?.max}
            step={setting.number ? (setting.number.integer ? 1 : 'any') : undefined}
          />
        ))
      ) : null}
    </fieldset>
  )
}
