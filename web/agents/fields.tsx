// Node and edge forms generated from the node catalog (GET /api/v1/node-types): one control per property type.
import { useId, type ReactNode } from 'react'
import { type Managed, ManageLink, RECORDINGS_MANAGED, useRowKeys } from '../ui'
import type { PropertySpec, RowPropertySpec } from '../../src/definition/rules'
import { isBuiltInVariable, placeholderSpans } from '../../src/definition/template-variables'

type Spec = PropertySpec | RowPropertySpec
type Data = Record<string, unknown>

/** What the pickers offer: the organization's tools, documents, recordings and credentials. */
export type Lookups = {
  tools: { value: string; label: string }[]
  documents: { value: string; label: string }[]
  recordings: { value: string; label: string }[]
  credentials: { value: string; label: string }[]
}

export type FormContext = {
  lookups: Lookups
  /** Problems by field (`data.prompt`, `data.extraction_variables[0].name`). */
  errors: Map<string, string[]>
  /** Variables a placeholder may name without becoming a new template variable. */
  knownVariables: Set<string>
}

const MANAGED: Partial<Record<Spec['type'], Managed>> = {
  tool_refs: { page: '/tools', link: 'Manage tools', none: 'No tool in this organization yet.' },
  document_refs: { page: '/knowledge', link: 'Add a document', none: 'No document in the knowledge base yet.' },
  recording_ref: RECORDINGS_MANAGED,
  credential_ref: { page: '/tools', link: 'Manage credentials', none: 'No credential in this organization yet.' },
}

const specValue = (spec: Spec, data: Data) => data[spec.name] ?? spec.default

/** The catalog's display_options: shown when every `show` field has one of its values, and no `hide` field does. */
export function isShown(spec: Spec, data: Data, siblings: readonly Spec[]): boolean {
  const current = (name: string) => {
    const other = siblings.find((item) => item.name === name)
    return data[name] ?? other?.default
  }
  const { show, hide } = spec.display_options ?? {}
  if (show && !Object.entries(show).every(([name, values]) => values.includes(current(name)))) return false
  if (hide && Object.entries(hide).some(([name, values]) => values.includes(current(name)))) return false
  return true
}

/** A data object with `name` set, or removed when the value is empty (so an untouched field stays absent). */
const withValue = (data: Data, name: string, value: unknown): Data => {
  const next = { ...data }
  if (value === undefined || value === '') delete next[name]
  else next[name] = value
  return next
}

export function PropertyFields({
  specs,
  data,
  path,
  onChange,
  context,
}: {
  specs: readonly Spec[]
  data: Data
  path: string
  onChange: (data: Data, field: string) => void
  context: FormContext
}) {
  return (
    <>
      {specs
        .filter((spec) => isShown(spec, data, specs))
        .map((spec) => (
          <PropertyField
            key={spec.name}
            spec={spec}
            value={specValue(spec, data)}
            path={`${path}.${spec.name}`}
            onChange={(value) => onChange(withValue(data, spec.name, value), `${path}.${spec.name}`)}
            context={context}
          />
        ))}
    </>
  )
}

function FieldShell({
  spec,
  path,
  context,
  children,
  after,
}: {
  spec: Spec
  path: string
  context: FormContext
  children: (id: string, described: string | undefined, invalid: boolean) => ReactNode
  after?: ReactNode
}) {
  const id = useId()
  const messages = context.errors.get(path) ?? []
  const described = [`${id}-hint`, messages.length ? `${id}-error` : ''].filter(Boolean).join(' ')
  return (
    <div className="field" data-field={path}>
      <label htmlFor={id}>{spec.display_name}</label>
      {children(id, described, messages.length > 0)}
      {after}
      <small id={`${id}-hint`} className="muted">
        {spec.description}
      </small>
      {messages.length ? (
        <small id={`${id}-error`} className="field-error">
          {messages.join('; ')}
        </small>
      ) : null}
    </div>
  )
}

function PropertyField({
  spec,
  value,
  path,
  onChange,
  context,
}: {
  spec: Spec
  value: unknown
  path: string
  onChange: (value: unknown) => void
  context: FormContext
}) {
  if (spec.type === 'boolean')
    return <CheckboxField spec={spec} value={value} path={path} onChange={onChange} context={context} />
  if (spec.type === 'fixed_collection' && 'properties' in spec)
    return <RowsField spec={spec} value={value} path={path} onChange={onChange} context={context} />
  if (spec.type === 'tool_refs' || spec.type === 'document_refs' || spec.type === 'multi_options')
    return <ChoicesField spec={spec} value={value} path={path} onChange={onChange} context={context} />
  const text =
    value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)
  const options = selectOptions(spec, context.lookups)
  const managed = MANAGED[spec.type]
  return (
    <FieldShell
      spec={spec}
      path={path}
      context={context}
      after={
        spec.type === 'mention_textarea' ? (
          <Placeholders text={text} known={context.knownVariables} />
        ) : managed ? (
          <ManageLink where={managed} empty={!options?.length} />
        ) : null
      }
    >
      {(id, described, invalid) => {
        const common = {
          id,
          'aria-describedby': described,
          'aria-invalid': invalid || undefined,
          required: spec.required ?? undefined,
        }
        if (options)
          return (
            <select {...common} value={text} onChange={(event) => onChange(event.target.value)}>
              <option value="">—</option>
              {options.map((option) => (
                <option key={String(option.value)} value={String(option.value)}>
                  {option.label}
                </option>
              ))}
            </select>
          )
        if (spec.type === 'number')
          return (
            <input
              {...common}
              type="number"
              inputMode="decimal"
              min={spec.min_value ?? undefined}
              max={spec.max_value ?? undefined}
              step={spec.renderer_options?.number_input?.fractional ? 'any' : 1}
              value={text}
              onChange={(event) => onChange(event.target.value === '' ? undefined : Number(event.target.value))}
            />
          )
        if (spec.type === 'json') return <JsonInput common={common} value={value} onChange={onChange} />
        if (spec.type === 'mention_textarea' || spec.editor === 'textarea')
          return <textarea {...common} rows={5} value={text} onChange={(event) => onChange(event.target.value)} />
        return (
          <input
            {...common}
            type={spec.type === 'url' ? 'url' : 'text'}
            placeholder={spec.placeholder ?? undefined}
            value={text}
            onChange={(event) => onChange(event.target.value)}
          />
        )
      }}
    </FieldShell>
  )
}

function selectOptions(spec: Spec, lookups: Lookups) {
  if (spec.type === 'options') return spec.options ?? []
  if (spec.type === 'recording_ref') return lookups.recordings
  if (spec.type === 'credential_ref') return lookups.credentials
  return null
}

function JsonInput({
  common,
  value,
  onChange,
}: {
  common: Record<string, unknown>
  value: unknown
  onChange: (value: unknown) => void
}) {
  const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value, null, 2)
  return (
    <textarea
      {...common}
      rows={5}
      className="code"
      value={text}
      onChange={(event) => {
        // Kept as text while it is not JSON yet: the rules then say it must be a JSON object.
        try {
          onChange(event.target.value === '' ? undefined : JSON.parse(event.target.value))
        } catch {
          onChange(event.target.value)
        }
      }}
    />
  )
}

function CheckboxField({ spec, value, path, onChange, context }: FieldProps) {
  const id = useId()
  const messages = context.errors.get(path) ?? []
  return (
    <div className="field checkbox" data-field={path}>
      <label htmlFor={id}>
        <input id={id} type="checkbox" checked={value === true} onChange={(event) => onChange(event.target.checked)} />{' '}
        {spec.display_name}
      </label>
      <small className="muted">{spec.description}</small>
      {messages.length ? <small className="field-error">{messages.join('; ')}</small> : null}
    </div>
  )
}

type FieldProps = {
  spec: Spec
  value: unknown
  path: string
  onChange: (value: unknown) => void
  context: FormContext
}

function ChoicesField({ spec, value, path, onChange, context }: FieldProps) {
  const chosen = Array.isArray(value) ? value : []
  const options =
    spec.type === 'tool_refs'
      ? context.lookups.tools
      : spec.type === 'document_refs'
        ? context.lookups.documents
        : (spec.options ?? []).map((option) => ({ value: String(option.value), label: option.label }))
  const messages = context.errors.get(path) ?? []
  const managed = MANAGED[spec.type]
  return (
    <fieldset className="field choices" data-field={path}>
      <legend>{spec.display_name}</legend>
      {options.length === 0 && !managed ? <small className="muted">None to choose from.</small> : null}
      {options.map((option) => (
        <label key={option.value}>
          <input
            type="checkbox"
            checked={chosen.includes(option.value)}
            onChange={(event) =>
              onChange(
                event.target.checked ? [...chosen, option.value] : chosen.filter((item) => item !== option.value),
              )
            }
          />{' '}
          {option.label}
        </label>
      ))}
      {managed ? <ManageLink where={managed} empty={options.length === 0} /> : null}
      <small className="muted">{spec.description}</small>
      {messages.length ? <small className="field-error">{messages.join('; ')}</small> : null}
    </fieldset>
  )
}

function RowsField({ spec, value, path, onChange, context }: FieldProps) {
  const rows: Data[] = Array.isArray(value) ? value : []
  const rowSpecs = ('properties' in spec ? spec.properties : null) ?? []
  const messages = context.errors.get(path) ?? []
  const rowKeys = useRowKeys(rows.length)
  const blank = Object.fromEntries(
    rowSpecs.filter((row) => row.required).map((row) => [row.name, row.options?.[0]?.value ?? '']),
  )
  return (
    <fieldset className="field rows" data-field={path}>
      <legend>{spec.display_name}</legend>
      <small className="muted">{spec.description}</small>
      {rows.map((row, index) => (
        <fieldset className="row" key={rowKeys.keys[index]} aria-label={`${spec.display_name} row ${index + 1}`}>
          <PropertyFields
            specs={rowSpecs}
            data={row}
            path={`${path}[${index}]`}
            onChange={(next) => onChange(rows.map((item, at) => (at === index ? next : item)))}
            context={context}
          />
          <button
            type="button"
            className="secondary"
            onClick={() => {
              rowKeys.removed(index)
              onChange(rows.filter((_, at) => at !== index))
            }}
            aria-label={`Remove ${spec.display_name} row ${index + 1}`}
          >
            Remove
          </button>
        </fieldset>
      ))}
      <button type="button" className="secondary" onClick={() => onChange([...rows, blank])}>
        Add a row to {spec.display_name}
      </button>
      {messages.length ? <small className="field-error">{messages.join('; ')}</small> : null}
    </fieldset>
  )
}

/** The prompt's `{{variables}}` highlighted, each said to be known, optional, or new to the agent. */
function Placeholders({ text, known }: { text: string; known: Set<string> }) {
  const spans = placeholderSpans(text)
  if (spans.length === 0) return null
  const parts: ReactNode[] = []
  let at = 0
  for (const span of spans) {
    parts.push(text.slice(at, span.start))
    const name = span.path.toLowerCase()
    const state = isBuiltInVariable(span.path) || known.has(name) ? 'known' : span.optional ? 'optional' : 'new'
    parts.push(
      <mark key={span.start} className={`variable variable-${state}`} title={VARIABLE_STATES[state]}>
        {text.slice(span.start, span.end)}
      </mark>,
    )
    at = span.end
  }
  parts.push(text.slice(at))
  const unknown = spans.filter(
    (span) => !span.optional && !isBuiltInVariable(span.path) && !known.has(span.path.toLowerCase()),
  )
  return (
    <div className="placeholders">
      <p className="preview text">{parts}</p>
      {unknown.length ? (
        <small className="warning" role="status">
          Not a variable of this agent yet: {[...new Set(unknown.map((span) => span.path))].join(', ')}. Calls and
          campaign rows will have to give it (or write {'{{name | default}}'}).
        </small>
      ) : null}
    </div>
  )
}

const VARIABLE_STATES = {
  known: 'A variable of this agent, an extracted value, or one the platform fills in',
  optional: 'Has a default',
  new: 'Not a variable of this agent yet',
}
