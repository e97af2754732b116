import { useId, useState } from 'react'
import { api, ApiError, type FieldError, type Schemas } from '../api'
import { Field, FormEnd, LeaveGuard, useSubmit, useUnsaved } from '../ui'
import {
  ConfigField,
  type ConfigValues,
  configPath,
  type Credential,
  formValue,
  sentValue,
  type ToolTypeMeta,
} from './tool-config-fields'

export type Tool = Schemas['ToolResponse']
type StoredDefinition = { type?: string; config?: Record<string, unknown> }

const TYPE_LABELS: Record<string, string> = {
  http_api: 'HTTP request (http_api)',
  end_call: 'End the call (end_call)',
  transfer_call: 'Transfer the call (transfer_call)',
  calculator: 'Calculator (calculator)',
  mcp: 'MCP server (mcp)',
}

function configValues(meta: ToolTypeMeta | undefined, stored: Record<string, unknown> | undefined): ConfigValues {
  return Object.fromEntries((meta?.fields ?? []).map((field) => [field.name, formValue(field, stored?.[field.name])]))
}

/**
 * The definition the form holds, every field of it (a sent definition replaces the stored one whole). A JSON text that
 * does not parse is refused in the page as the API's 422 would be, at its field: nothing is sent.
 */
function definitionBody(meta: ToolTypeMeta, values: ConfigValues) {
  const config: Record<string, unknown> = {}
  const problems: FieldError[] = []
  for (const field of meta.fields) {
    try {
      const value = sentValue(field, values[field.name])
      if (value !== undefined) config[field.name] = value
    } catch (caught) {
      problems.push({
        loc: ['body', ...configPath(meta.type, field.name)],
        msg: `This is not valid JSON: ${(caught as Error).message}`,
        type: 'json_invalid',
      })
    }
  }
  if (problems.length > 0) throw new ApiError(422, problems)
  return { type: meta.type, config }
}

/**
 * A tool's form: a new one (POST) or `editing` one (PUT of its name, description and whole definition): its type from
 * the metadata, then that type's config fields. `onSaved` gets the tool as the API answered.
 */
export function ToolForm({
  types,
  credentials,
  recordings,
  editing,
  onSaved,
  onClose,
}: {
  types: ToolTypeMeta[]
  credentials: Credential[]
  /** The organization's recording ids, which a message may play; null while they are read. */
  recordings: string[] | null
  editing?: Tool
  onSaved: (tool: Tool) => void
  onClose: () => void
}) {
  const stored = editing?.definition as StoredDefinition | undefined
  const [name, setName] = useState(editing?.name ?? '')
  const [description, setDescription] = useState(editing?.description ?? '')
  const [type, setType] = useState(stored?.type ?? types[0]?.type ?? '')
  const meta = types.find((item) => item.type === type)
  const [values, setValues] = useState(() => configValues(meta, stored?.config))
  const [saved, setSaved] = useState(false)
  const { unsaved, markSaved } = useUnsaved([name, description, type, values])
  const { error, submit } = useSubmit()
  const titleId = useId()
  const chooseType = (next: string) => {
    setType(next)
    const nextMeta = types.find((item) => item.type === next)
    setValues(configValues(nextMeta, next === stored?.type ? stored?.config : undefined))
  }
  const save = submit(async () => {
    setSaved(false)
    if (!meta) throw new ApiError(0, 'Choose the type of tool')
    const definition = definitionBody(meta, values)
    const tool = editing
      ? await api<Tool>('PUT', `/api/v1/tools/${editing.tool_uuid}`, {
          name,
          description: description || null,
          definition,
        })
      : await api<Tool>('POST', '/api/v1/tools/', { name, ...(description ? { description } : {}), definition })
    setSaved(Boolean(editing))
    markSaved()
    onSaved(tool)
  })
  return (
    <form className="card form tool-form" onSubmit={save} aria-labelledby={titleId}>
      <h2 id={titleId}>{editing ? `Edit “${editing.name}”` : 'New tool'}</h2>
      <LeaveGuard
        when={unsaved}
        message="The tool's form has changes that are not saved: leaving the page drops them."
      />
      <Field
        label="Name"
        value={name}
        onChange={setName}
        error={error}
        path={['name']}
        required
        hint="The model calls the tool by a name made from it"
      />
      <Field
        label="Description"
        value={description}
        onChange={setDescription}
        error={error}
        path={['description']}
        multiline={{ maxLength: 4000 }}
        hint="Tells the model when to call it and what it returns"
      />
      <Field
        label="Type"
        value={type}
        onChange={chooseType}
        error={error}
        path={['definition', 'type']}
        otherPaths={[['category']]}
        options={types.map((item) => ({ value: item.type, label: TYPE_LABELS[item.type] ?? item.type }))}
      />
      {meta && meta.fields.length === 0 ? <p className="muted">This type of tool has no settings.</p> : null}
      {meta?.fields.map((field) => (
        <ConfigField
          key={`${type}-${field.name}`}
          type={type}
          field={field}
          value={values[field.name]}
          onChange={(value) => setValues((previous) => ({ ...previous, [field.name]: value }))}
          error={error}
          credentials={credentials}
          recordings={recordings}
        />
      ))}
      <div className="row">
        <FormEnd error={error} saved={saved} submitLabel={editing ? 'Save tool' : 'Create tool'} onClose={onClose} />
      </div>
    </form>
  )
}
