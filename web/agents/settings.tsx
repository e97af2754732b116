// The agent's name and `workflow_configurations`: turn taking, voicemail, max duration, model, fallback lines.
import { api, type ApiError } from '../api'
import { Field, ManageLink, useLoad } from '../ui'

type Configurations = Record<string, unknown>

const text = (value: unknown) => (value === undefined || value === null ? '' : String(value))

/** `configurations` with `path` set (or removed when empty); objects along the path are created as needed. */
function withSetting(configurations: Configurations, path: string[], value: unknown): Configurations {
  const [key, ...rest] = path
  const next = { ...configurations }
  if (rest.length) {
    const inner = withSetting((next[key] as Configurations) ?? {}, rest, value)
    if (Object.keys(inner).length) next[key] = inner
    else delete next[key]
  } else if (value === '' || value === undefined) delete next[key]
  else next[key] = value
  return next
}

const read = (configurations: Configurations, path: string[]): unknown =>
  path.reduce<unknown>((value, key) => (value as Configurations | undefined)?.[key], configurations)

export function Settings({
  name,
  onName,
  configurations,
  onChange,
  error,
}: {
  name: string
  onName: (name: string) => void
  configurations: Configurations
  onChange: (configurations: Configurations) => void
  error: ApiError | null
}) {
  const models = useLoad(() => api<any>('GET', '/api/v1/organizations/model-configurations'), [])
  const field = (label: string, path: string[], kind: 'text' | 'number' = 'text', hint?: string) => (
    <Field
      label={label}
      type={kind}
      value={text(read(configurations, path))}
      onChange={(value) =>
        onChange(withSetting(configurations, path, kind === 'number' && value !== '' ? Number(value) : value))
      }
      error={error}
      path={['workflow_configurations', ...path]}
      hint={hint}
    />
  )
  const choice = (label: string, path: string[], choices: [string, string][]) => (
    <Field
      label={label}
      value={text(read(configurations, path))}
      onChange={(value) =>
        onChange(withSetting(configurations, path, value === 'true' ? true : value === 'false' ? false : value))
      }
      error={error}
      path={['workflow_configurations', ...path]}
      options={[{ value: '', label: 'Default' }, ...choices.map(([value, label]) => ({ value, label }))]}
    />
  )
  const list: any[] = models.data?.configurations ?? models.data ?? []
  return (
    <form className="card form settings" onSubmit={(event) => event.preventDefault()} aria-label="Agent settings">
      <Field label="Agent name" value={name} onChange={onName} error={error} path={['name']} required />
      <h2>Call</h2>
      {field('Max call duration (seconds)', ['max_call_duration_seconds'], 'number', '1 to 14400; default 600.')}
      {choice(
        'Model configuration',
        ['model_configuration_uuid'],
        Array.isArray(list) ? list.map((item) => [item.uuid, item.name]) : [],
      )}
      <ManageLink
        where={{ page: '/models', link: 'Manage model configurations', none: 'No model configuration yet.' }}
        empty={models.data !== null && !(Array.isArray(list) && list.length)}
      />
      <h2>Turn taking</h2>
      {field('End of turn after silence (seconds)', ['user_turn_stop_timeout'], 'number', '0.2 to 5; default 0.6.')}
      {choice(
        'Interruptions',
        ['turn_start_strategy'],
        [
          ['default', 'As soon as the caller speaks'],
          ['min_words', 'Only after a few words'],
        ],
      )}
      {field('Words an interruption needs', ['turn_start_min_words'], 'number', '1 to 10; default 3.')}
      {choice(
        'End of turn',
        ['turn_stop_strategy'],
        [
          ['transcription', 'Silence after the transcript'],
          ['turn_analyzer', 'Turn analyzer (behaves as silence)'],
        ],
      )}
      <h2>Voicemail</h2>
      {choice(
        'Voicemail detection',
        ['voicemail_detection', 'enabled'],
        [
          ['true', 'On'],
          ['false', 'Off'],
        ],
      )}
      {field('Message left on a voicemail', ['voicemail_detection', 'message'])}
      <h2>Fallback lines</h2>
      {choice(
        'Answer when the agent cannot run',
        ['unavailable_call', 'answer'],
        [
          ['true', 'Answer and say the message'],
          ['false', 'Leave unanswered'],
        ],
      )}
      {field('Said when the agent cannot run', ['unavailable_call', 'message'])}
      {field('Said when a model fails mid-call', ['model_failure', 'message'])}
      {field('Then transfer to', ['model_failure', 'transfer_to'])}
    </form>
  )
}
