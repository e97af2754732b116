import { useId, useState } from 'react'
import { api, type ApiError, type Schemas } from '../api'
import { Checkbox, Field, FormEnd, useSubmit } from '../ui'

export type Configuration = Schemas['ModelConfigurationResponse']
type Connection = { uuid: string; name: string }

type Service = 'llm' | 'stt' | 'tts' | 'embeddings' | 'realtime'
/** The settings the form shows; a stored section's other settings (temperature, speed, …) are kept as they are. */
type Setting = 'model' | 'voice' | 'language' | 'streaming' | 'dimensions'
const SETTINGS: Setting[] = ['model', 'voice', 'language', 'streaming', 'dimensions']

/** Each service's fieldset: `title` is its legend, `label` begins its fields' labels. */
const SERVICES: { service: Service; title: string; label: string; settings: Setting[] }[] = [
  { service: 'llm', title: 'LLM', label: 'LLM', settings: ['model'] },
  { service: 'stt', title: 'Speech to text', label: 'Speech to text', settings: ['model', 'language', 'streaming'] },
  { service: 'tts', title: 'Text to speech', label: 'Text to speech', settings: ['model', 'voice'] },
  { service: 'embeddings', title: 'Embeddings', label: 'Embeddings', settings: ['model', 'dimensions'] },
  { service: 'realtime', title: 'Realtime speech to speech', label: 'Realtime', settings: ['model', 'voice'] },
]

const SETTING_HINTS: Partial<Record<Setting, string>> = {
  language: 'ISO 639-1, e.g. en',
  dimensions: "Empty: the model's own length",
}

/** The server choice of a text-to-speech section that is the voice built into the binary. */
const BUILTIN = 'builtin'
const BUILTIN_VOICES = ['slt', 'rms', 'awb', 'kal16']

/** A section as the form holds it: its server ('' none, BUILTIN the built-in voice) and its shown settings as text. */
type SectionValues = { server: string; settings: Record<Setting, string> }
type FormValues = { name: string; sections: Record<Service, SectionValues> }

function sectionValues(stored: Configuration['llm'] | null | undefined): SectionValues {
  const shown = (setting: Setting) => {
    const value = stored?.settings[setting]
    return value === undefined || value === null ? '' : String(value)
  }
  return {
    server: !stored ? '' : stored.builtin ? BUILTIN : (stored.provider_connection_uuid ?? ''),
    settings: Object.fromEntries(SETTINGS.map((name) => [name, shown(name)])) as Record<Setting, string>,
  }
}

/** What the form shows of a stored configuration; a new one starts with the built-in voice. */
function formValues(stored?: Configuration): FormValues {
  const sections = Object.fromEntries(
    SERVICES.map(({ service }) => [service, sectionValues(stored?.[service])]),
  ) as Record<Service, SectionValues>
  if (!stored) sections.tts = { server: BUILTIN, settings: { ...sections.tts.settings, voice: 'slt' } }
  return { name: stored?.name ?? '', sections }
}

const settingValue = (setting: Setting, text: string) =>
  setting === 'streaming' ? text === 'true' : setting === 'dimensions' ? Number(text) : text

/** The section to send (null: none); a server's stored settings the form does not show are kept, since a sent section replaces it. */
function sectionBody(service: Service, values: SectionValues, stored: Configuration['llm'] | null | undefined) {
  if (!values.server) return null
  const shownSettings = SERVICES.find((item) => item.service === service)!.settings
  const filled = Object.fromEntries(
    shownSettings
      .filter((setting) => values.settings[setting] !== '' && values.settings[setting] !== 'false')
      .map((setting) => [setting, settingValue(setting, values.settings[setting])]),
  )
  if (values.server === BUILTIN) return { builtin: true, settings: { voice: values.settings.voice || 'slt' } }
  const kept = stored && !stored.builtin ? { ...stored.settings } : {}
  for (const setting of shownSettings) delete kept[setting]
  const settings = { ...kept, ...filled }
  return { provider_connection_uuid: values.server, ...(Object.keys(settings).length ? { settings } : {}) }
}

const sameSection = (a: SectionValues, b: SectionValues) => JSON.stringify(a) === JSON.stringify(b)

/** The body of a new configuration (POST), or of an edited one (PUT): only its name and the sections changed. */
function configurationBody(values: FormValues, editing?: Configuration) {
  const stored = editing ? formValues(editing) : undefined
  const body: Record<string, unknown> = !stored || values.name !== stored.name ? { name: values.name } : {}
  for (const { service } of SERVICES) {
    const section = values.sections[service]
    if (stored && sameSection(section, stored.sections[service])) continue
    if (!stored && !section.server) continue
    body[service] = sectionBody(service, section, editing?.[service])
  }
  return body
}

/**
 * A model configuration's form: a new one (POST), or `editing` one (PUT of its name and the sections changed), with a
 * fieldset per service: its model server (or none; the built-in voice for text to speech) and its main settings.
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
    } else {
      await api('POST', '/api/v1/organizations/model-configurations', body)
      setValues(formValues())
    }
    onSaved()
  })
  return (
    <form className="form configuration-form" onSubmit={save} aria-labelledby={titleId}>
      <h3 id={titleId}>{editing ? `Edit “${editing.name}”` : 'Add a configuration'}</h3>
      <Field
        label="Name"
        value={values.name}
        onChange={(name) => setValues({ ...values, name })}
        error={error}
        path={['name']}
        required
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
  const setSetting = (setting: Setting) => (value: string) =>
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
        settings.map((setting) =>
          setting === 'streaming' ? (
            <Checkbox
              key={setting}
              label={`Stream ${label.toLowerCase()}`}
              checked={values.settings.streaming === 'true'}
              onChange={(checked) => setSetting('streaming')(String(checked))}
              error={error}
              path={[service, 'settings', setting]}
              hint="Over the realtime transcription socket; uploads each utterance when off"
            />
          ) : (
            <Field
              key={setting}
              label={`${label} ${setting}`}
              type={setting === 'dimensions' ? 'number' : 'text'}
              value={values.settings[setting]}
              onChange={setSetting(setting)}
              error={error}
              path={[service, 'settings', setting]}
              hint={SETTING_HINTS[setting]}
            />
          ),
        )
      ) : null}
    </fieldset>
  )
}
