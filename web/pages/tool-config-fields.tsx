// The fields of a tool type's `definition.config`, built from GET /api/v1/tools/metadata: the control each field gets
// (text, number, checkbox, select, a credential, a recording, rows, a JSON text), its value as the form holds it and as
// the API takes it.
import type { ApiError, Schemas } from '../api'
import { Checkbox, Field, ManageLink, RECORDINGS_MANAGED, useRowKeys } from '../ui'

export type ToolTypeMeta = Schemas['GetToolsMetadataResponse']['types'][number]
export type ConfigFieldMeta = ToolTypeMeta['fields'][number]
export type Credential = Schemas['CredentialResponse']

type Cell = string | boolean
type Row = Record<string, Cell>
export type ConfigValue = string | boolean | Row[]
export type ConfigValues = Record<string, ConfigValue>
type Path = (string | number)[]

/**
 * One input of a row: its key in the row's object, its label after the row's noun and number ("Parameter 1 name");
 * `required`: the API refuses it empty; `optional`: left out when empty.
 */
type Column = {
  key: string
  label: string
  options?: readonly string[]
  checkbox?: boolean
  required?: boolean
  optional?: boolean
}
/** Rows of an array of objects, or (`keyed`) of a JSON object's name → value pairs (headers). */
type RowsSpec = { noun: string; columns: Column[]; keyed?: boolean }

const PARAMETER_TYPES: Schemas['ToolParameter']['type'][] = ['string', 'number', 'boolean', 'object', 'array']
const NAME: Column = { key: 'name', label: 'name', required: true }
const TYPE: Column = { key: 'type', label: 'type', options: PARAMETER_TYPES }
const REQUIRED: Column = { key: 'required', label: 'required', checkbox: true }

/** The array and object fields whose items are simple enough for rows (src/tools/schemas.ts); the others are JSON. */
const ROWS: Record<string, RowsSpec> = {
  parameters: { noun: 'Parameter', columns: [NAME, TYPE, { key: 'description', label: 'description' }, REQUIRED] },
  preset_parameters: {
    noun: 'Preset parameter',
    columns: [NAME, TYPE, { key: 'value_template', label: 'value template' }, REQUIRED],
  },
  destinations: {
    noun: 'Destination',
    columns: [
      NAME,
      { key: 'destination', label: 'number or SIP URI', required: true },
      { key: 'description', label: 'description', optional: true },
    ],
  },
  headers: { noun: 'Header', columns: [NAME, { key: 'value', label: 'value' }], keyed: true },
}
/** Arrays of names, typed comma-separated. */
const NAME_LISTS = new Set(['tools_filter'])
/** The recording a message plays, chosen among the organization's by its recording id. */
const RECORDING_FIELDS = new Set(['customMessageRecordingId', 'audioRecordingId'])

const LABELS: Record<string, string> = {
  url: 'URL',
  credential_uuid: 'Credential',
  timeout_ms: 'Timeout (ms)',
  timeout_secs: 'Timeout (seconds)',
  timeout: 'Ring timeout (seconds)',
  body_template: 'Body template (JSON)',
  tools_filter: 'Tools to offer',
  customMessageRecordingId: 'Custom message recording',
  audioRecordingId: 'Audio recording',
}

/** `customMessageType` → "Custom message type", `destination_source` → "Destination source". */
export function labelOf(name: string): string {
  if (LABELS[name]) return LABELS[name]
  const words = name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/_/g, ' ')
    .toLowerCase()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

type Editor = 'text' | 'number' | 'checkbox' | 'select' | 'credential' | 'recording' | 'rows' | 'names' | 'json'

function editorOf(field: ConfigFieldMeta): Editor {
  if (field.name === 'credential_uuid') return 'credential'
  if (RECORDING_FIELDS.has(field.name)) return 'recording'
  if (ROWS[field.name]) return 'rows'
  if (NAME_LISTS.has(field.name)) return 'names'
  switch (field.type) {
    case 'options':
      return 'select'
    case 'boolean':
      return 'checkbox'
    case 'integer':
    case 'number':
      return 'number'
    case 'array':
    case 'object':
      return 'json'
    default:
      return 'text'
  }
}

const isAbsent = (value: unknown): value is null | undefined => value === null || value === undefined

function rowsOf(spec: RowsSpec, value: unknown): Row[] {
  if (spec.keyed)
    return Object.entries((value ?? {}) as Record<string, unknown>).map(([name, item]) => ({
      name,
      value: String(item),
    }))
  return ((value ?? []) as Record<string, unknown>[]).map((item) =>
    Object.fromEntries(
      spec.columns.map((column) => [
        column.key,
        column.checkbox ? item[column.key] !== false : isAbsent(item[column.key]) ? '' : String(item[column.key]),
      ]),
    ),
  )
}

/** What the form shows of a field: its stored value (editing a tool), else its default; a required select its first option. */
export function formValue(field: ConfigFieldMeta, stored: unknown): ConfigValue {
  const value = isAbsent(stored) ? field.default : stored
  switch (editorOf(field)) {
    case 'checkbox':
      return value === true
    case 'rows':
      return rowsOf(ROWS[field.name], value)
    case 'names':
      return Array.isArray(value) ? value.join(', ') : ''
    case 'json':
      return isAbsent(value) ? '' : JSON.stringify(value, null, 2)
    case 'select':
      if (isAbsent(value) && field.required) return String(field.options?.[0] ?? '')
      return isAbsent(value) ? '' : String(value)
    default:
      return isAbsent(value) ? '' : String(value)
  }
}

function sentRows(spec: RowsSpec, rows: Row[]): unknown {
  if (rows.length === 0) return undefined
  if (spec.keyed) return Object.fromEntries(rows.map((row) => [row.name, row.value]))
  return rows.map((row) =>
    Object.fromEntries(
      spec.columns
        .filter((column) => !(column.optional && row[column.key] === ''))
        .map((column) => [column.key, row[column.key]]),
    ),
  )
}

/** A field's value as the API takes it; undefined leaves it out (the API's default). A JSON text that does not parse throws. */
export function sentValue(field: ConfigFieldMeta, value: ConfigValue): unknown {
  switch (editorOf(field)) {
    case 'checkbox':
      return value
    case 'rows':
      return sentRows(ROWS[field.name], value as Row[])
    case 'names': {
      const names = (value as string)
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean)
      return names.length > 0 ? names : undefined
    }
    case 'json':
      return (value as string).trim() === '' ? undefined : JSON.parse(value as string)
    case 'number':
      return value === '' ? undefined : Number(value)
    default:
      return value === '' ? undefined : value
  }
}

/** Where the API's 422 names a config field: under the definition's type (a union's branch), or without it. */
export const configPath = (type: string, name: string): Path => ['definition', type, 'config', name]

/** Controls that always hold a value: a checkbox, and a select of a required field (it offers no empty choice). */
const neverEmpty = (editor: Editor) => editor === 'checkbox' || editor === 'select'

/** The field's description, after what the control takes and whether the API requires it (when it can be left empty). */
function hintOf(field: ConfigFieldMeta, editor: Editor): string | undefined {
  const parts = [
    field.required && !neverEmpty(editor) ? 'Required.' : '',
    editor === 'names'
      ? 'Names separated by commas.'
      : editor === 'json' && !/JSON/.test(field.description ?? '')
        ? 'JSON.'
        : '',
    field.description ?? '',
  ]
  return parts.filter(Boolean).join(' ') || undefined
}

type ConfigFieldProps = {
  type: string
  field: ConfigFieldMeta
  value: ConfigValue
  onChange: (value: ConfigValue) => void
  error: ApiError | null
  credentials: Credential[]
  /** The organization's recording ids; null while they are read. */
  recordings: string[] | null
}

/** One field of the config, with the API's 422 for it next to it. */
export function ConfigField({ type, field, value, onChange, error, credentials, recordings }: ConfigFieldProps) {
  const editor = editorOf(field)
  const label = labelOf(field.name)
  const path = configPath(type, field.name)
  const common = {
    label,
    error,
    path,
    otherPaths: [['definition', 'config', field.name]],
    required: field.required,
    hint: hintOf(field, editor),
  }
  switch (editor) {
    case 'checkbox':
      return <Checkbox {...common} checked={value === true} onChange={onChange} />
    case 'rows':
      return <RowsEditor {...common} spec={ROWS[field.name]} rows={value as Row[]} onChange={onChange} />
    case 'select':
    case 'credential':
      return (
        <Field
          {...common}
          value={value as string}
          onChange={onChange}
          options={editor === 'select' ? selectOptions(field) : credentialOptions(credentials, value as string)}
        />
      )
    case 'recording':
      return (
        <>
          <Field
            {...common}
            value={value as string}
            onChange={onChange}
            options={recordingOptions(recordings, value as string)}
          />
          <ManageLink where={RECORDINGS_MANAGED} empty={recordings?.length === 0} />
        </>
      )
    case 'number':
      return (
        <Field
          {...common}
          type="number"
          step={field.type === 'integer' ? 1 : 'any'}
          value={value as string}
          onChange={onChange}
        />
      )
    case 'json':
      return <Field {...common} value={value as string} onChange={onChange} multiline={{ maxLength: 65_536 }} />
    default:
      return <Field {...common} value={value as string} onChange={onChange} />
  }
}

function selectOptions(field: ConfigFieldMeta) {
  const options = (field.options ?? []).map((option) => ({ value: String(option), label: String(option) }))
  return field.required ? options : [{ value: '', label: 'None (the default)' }, ...options]
}

type Option = { value: string; label: string }

/** "None", then `options`; a stored choice that is no longer among them stays choosable, labelled `unknown`. */
function pickerOptions(options: Option[], chosen: string, unknown: string): Option[] {
  const missing = chosen !== '' && !options.some((option) => option.value === chosen)
  return [{ value: '', label: 'None' }, ...options, ...(missing ? [{ value: chosen, label: unknown }] : [])]
}

/** The organization's credentials; one stored that is no longer among them is named by its uuid. */
const credentialOptions = (credentials: Credential[], chosen: string) =>
  pickerOptions(
    credentials.map((item) => ({ value: item.uuid, label: `${item.name} (${item.credential_type})` })),
    chosen,
    `Unknown credential ${chosen}`,
  )

/** The organization's recordings, by recording id; while they are read, a stored one is shown by its id alone. */
const recordingOptions = (recordings: string[] | null, chosen: string) =>
  pickerOptions(
    (recordings ?? []).map((id) => ({ value: id, label: id })),
    chosen,
    recordings === null ? chosen : `Unknown recording ${chosen}`,
  )

/** Rows of a list (parameters, destinations) or of an object (headers), each input with its 422 next to it. */
function RowsEditor({
  label,
  hint,
  spec,
  rows,
  onChange,
  error,
  path,
}: {
  label: string
  hint?: string
  spec: RowsSpec
  rows: Row[]
  onChange: (rows: Row[]) => void
  error: ApiError | null
  path: Path
}) {
  const rowKeys = useRowKeys(rows.length)
  const noun = spec.noun.toLowerCase()
  const setCell = (index: number, key: string, cell: Cell) =>
    onChange(rows.map((row, at) => (at === index ? { ...row, [key]: cell } : row)))
  const blank: Row = Object.fromEntries(
    spec.columns.map((column) => [column.key, column.checkbox ? true : (column.options?.[0] ?? '')]),
  )
  return (
    <fieldset>
      <legend>{label}</legend>
      {hint ? <small className="muted">{hint}</small> : null}
      {rows.map((row, index) => (
        <div className="row" key={rowKeys.keys[index]}>
          {spec.columns.map((column) => (
            <RowCell
              key={column.key}
              label={`${spec.noun} ${index + 1} ${column.label}`}
              column={column}
              cell={row[column.key]}
              onChange={(cell) => setCell(index, column.key, cell)}
              error={error}
              path={
                spec.keyed
                  ? column.key === 'name'
                    ? [...path, String(row.name)]
                    : undefined
                  : [...path, index, column.key]
              }
            />
          ))}
          <button
            type="button"
            className="secondary"
            aria-label={`Remove ${noun} ${index + 1}`}
            onClick={() => {
              rowKeys.removed(index)
              onChange(rows.filter((_, at) => at !== index))
            }}
          >
            Remove
          </button>
        </div>
      ))}
      <div>
        <button type="button" className="secondary" onClick={() => onChange([...rows, blank])}>
          Add {noun}
        </button>
      </div>
      <ListProblem error={error} path={path} />
    </fieldset>
  )
}

/** A list's own 422 (e.g. too many rows); the problems inside its rows show at their inputs. */
function ListProblem({ error, path }: { error: ApiError | null; path: Path }) {
  const message = error?.showAtList(...path)
  return message ? <small className="field-error">{message}</small> : null
}

function RowCell({
  label,
  column,
  cell,
  onChange,
  error,
  path,
}: {
  label: string
  column: Column
  cell: Cell
  onChange: (cell: Cell) => void
  error: ApiError | null
  path: Path | undefined
}) {
  if (column.checkbox)
    return <Checkbox label={label} checked={cell === true} onChange={onChange} error={error} path={path} />
  return (
    <Field
      label={label}
      value={String(cell)}
      onChange={onChange}
      error={error}
      path={path}
      required={column.required}
      options={column.options?.map((option) => ({ value: option, label: option }))}
    />
  )
}
