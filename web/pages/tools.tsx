import { useState } from 'react'
import { api, type Schemas } from '../api'
import {
  Checkbox,
  ConfirmButton,
  EditButton,
  Empty,
  ErrorNote,
  Field,
  FormEnd,
  LeaveGuard,
  Page,
  Show,
  StateBadge,
  Table,
  Time,
  useLoad,
  useRowKeys,
  useSubmit,
  useUnsaved,
} from '../ui'
import { Credentials } from './credentials'
import { type Tool, ToolForm } from './tool-form'

/**
 * The organization's tools (what agents may call: created, edited, archived and restored here, from the fields the
 * metadata gives each type), its credentials (secrets never shown back) and the hosts its HTTP tools may call.
 */

type Credential = Schemas['CredentialResponse']
type ToolSettings = Schemas['ToolSettingsResponse']
type McpRefresh = Schemas['CreateToolsMcpRefreshResponse']
/** What an MCP tool's definition holds of its server's last listing (src/tools/mcp.ts). */
type McpListing = {
  discovered_tools?: { name: string; description: string | null }[]
  discovery_error?: string | null
  discovered_at?: string | null
}

const TOOLS = '/api/v1/tools/'
const STATUS_FILTERS = [
  { value: 'active', label: 'Active' },
  { value: 'archived', label: 'Archived' },
  { value: 'active,archived', label: 'All' },
]

export function Tools() {
  const [status, setStatus] = useState('active')
  const tools = useLoad(() => api<Tool[]>('GET', `${TOOLS}?status=${status}`), [status])
  const metadata = useLoad(() => api<Schemas['GetToolsMetadataResponse']>('GET', `${TOOLS}metadata`), [])
  const credentials = useLoad(() => api<Credential[]>('GET', '/api/v1/credentials'), [])
  const recordings = useLoad(
    () => api<Schemas['GetWorkflowRecordingsResponse']>('GET', '/api/v1/workflow-recordings/'),
    [],
  )
  const [editing, setEditing] = useState<Tool | 'new' | null>(null)
  const [created, setCreated] = useState<string | null>(null)
  const saved = (tool: Tool) => {
    if (editing === 'new') {
      setEditing(null)
      setCreated(tool.name)
    }
    tools.reload()
  }
  return (
    <Page
      title="Tools and credentials"
      actions={
        <button
          type="button"
          onClick={() => {
            setCreated(null)
            setEditing('new')
          }}
        >
          New tool
        </button>
      }
    >
      <section className="card" aria-labelledby="tools-title">
        <header className="page-header">
          <h2 id="tools-title">Tools</h2>
          <div className="actions">
            <Field label="Status" value={status} onChange={setStatus} options={STATUS_FILTERS} />
          </div>
        </header>
        {created ? (
          <p role="status" className="ok">
            Created “{created}”.
          </p>
        ) : null}
        <Show loaded={tools} what="tools">
          {(list) => <ToolTable list={list} status={status} onEdit={setEditing} onChanged={tools.reload} />}
        </Show>
      </section>
      {editing ? (
        <Show loaded={metadata} what="the tool types">
          {({ types }) => (
            <ToolForm
              key={editing === 'new' ? 'new' : editing.tool_uuid}
              types={types}
              credentials={credentials.data ?? []}
              recordings={recordings.data?.recordings.map((recording) => recording.recording_id) ?? null}
              editing={editing === 'new' ? undefined : editing}
              onSaved={saved}
              onClose={() => setEditing(null)}
            />
          )}
        </Show>
      ) : null}
      <Credentials loaded={credentials} />
      <AllowedHosts />
    </Page>
  )
}

function ToolTable({
  list,
  status,
  onEdit,
  onChanged,
}: {
  list: Tool[]
  status: string
  onEdit: (tool: Tool) => void
  onChanged: () => void
}) {
  if (list.length === 0)
    return status === 'active' ? (
      <Empty title="No tool yet.">
        A tool is what an agent may do besides talking: call your HTTP API, end or transfer the call, compute, or use
        the tools of an MCP server. Create one with “New tool”; then name it in an agent's node.
      </Empty>
    ) : (
      <Empty title={status === 'archived' ? 'No archived tool.' : 'No tool.'} />
    )
  return (
    <Table card={false} columns={['Name', 'Type', 'Function', 'State', 'Updated', { hidden: 'Actions' }]}>
      {list.map((tool) => (
        <ToolRow key={tool.tool_uuid} tool={tool} onEdit={() => onEdit(tool)} onChanged={onChanged} />
      ))}
    </Table>
  )
}

function ToolRow({ tool, onEdit, onChanged }: { tool: Tool; onEdit: () => void; onChanged: () => void }) {
  const action = useSubmit()
  const archive = action.submit(async () => {
    await api('DELETE', `${TOOLS}${tool.tool_uuid}`)
    onChanged()
  })
  const restore = action.submit(async () => {
    await api('PUT', `${TOOLS}${tool.tool_uuid}`, { status: 'active' })
    onChanged()
  })
  const type = String(tool.definition.type ?? tool.category)
  return (
    <tr>
      <td>
        <span className="text">{tool.name}</span>
        {tool.description ? <div className="muted text">{tool.description}</div> : null}
      </td>
      <td>
        {type}
        {type === 'mcp' ? <McpServer tool={tool} onChanged={onChanged} /> : null}
      </td>
      <td>
        <code>{tool.function_name}</code>
      </td>
      <td>
        <StateBadge state={tool.status} />
      </td>
      <td>
        <Time at={tool.updated_at} />
      </td>
      <td className="actions">
        <EditButton label={`Edit tool ${tool.name}`} onClick={onEdit} />
        {tool.status === 'active' ? (
          <ConfirmButton label={`Archive tool ${tool.name}`} confirmText={`Archive “${tool.name}”`} onConfirm={archive}>
            Archive
          </ConfirmButton>
        ) : (
          <button type="button" className="secondary" onClick={restore} aria-label={`Restore tool ${tool.name}`}>
            Restore
          </button>
        )}
        <ErrorNote error={action.error} />
      </td>
    </tr>
  )
}

/** What an MCP tool's server offered when last listed, or why it could not be; "List again" asks it now. */
function McpServer({ tool, onChanged }: { tool: Tool; onChanged: () => void }) {
  const stored = (tool.definition.config ?? {}) as McpListing
  const [refreshed, setRefreshed] = useState<McpRefresh | null>(null)
  const { error, submit } = useSubmit()
  const listAgain = submit(async () => {
    setRefreshed(null)
    setRefreshed(await api<McpRefresh>('POST', `${TOOLS}${tool.tool_uuid}/mcp/refresh`))
    onChanged()
  })
  const offered = refreshed?.discovered_tools ?? stored.discovered_tools ?? []
  const problem = refreshed ? refreshed.error : (stored.discovery_error ?? null)
  return (
    <div>
      {offered.length > 0 ? (
        <ul className="plain" aria-label={`Tools ${tool.name} offers`}>
          {offered.map((offer) => (
            <li key={offer.name}>
              <code>{offer.name}</code>
              {offer.description ? <span className="muted text"> {offer.description}</span> : null}
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">No tool listed.</p>
      )}
      {problem ? <p className="field-error text">{problem}</p> : null}
      <p className="muted">
        Listed: <Time at={stored.discovered_at} />
      </p>
      <button type="button" className="secondary" onClick={listAgain} aria-label={`List again: ${tool.name}`}>
        List again
      </button>
      {refreshed ? (
        <p role="status" className={refreshed.error ? 'muted' : 'ok'}>
          {refreshed.error
            ? 'Listed again: the server was not listed (the reason above); the last list stays.'
            : `Listed again: ${refreshed.discovered_tools.length} ${refreshed.discovered_tools.length === 1 ? 'tool' : 'tools'}.`}
        </p>
      ) : null}
      <ErrorNote error={error} />
    </div>
  )
}

function AllowedHosts() {
  const settings = useLoad(() => api<ToolSettings>('GET', '/api/v1/organizations/tool-settings'), [])
  return (
    <section className="card" aria-labelledby="hosts-title">
      <h2 id="hosts-title">Allowed hosts</h2>
      <p className="muted">
        The hosts the organization's HTTP tools, webhook nodes and pre-call fetch may call: any host until a list is
        set. <code>api.example.com</code>, <code>api.example.com:8443</code>, <code>*.example.com</code> (its
        subdomains), <code>10.0.0.7</code>, <code>[::1]:9000</code>; without a port any port matches.
      </p>
      <Show loaded={settings} what="the allowed hosts">
        {(stored) => (
          <>
            <p>
              Now:{' '}
              {stored.allowed_hosts === null
                ? 'any host'
                : stored.allowed_hosts.length === 0
                  ? 'no host'
                  : stored.allowed_hosts.join(', ')}
            </p>
            <AllowedHostsForm stored={stored} onSaved={settings.reload} />
          </>
        )}
      </Show>
    </section>
  )
}

function AllowedHostsForm({ stored, onSaved }: { stored: ToolSettings; onSaved: () => void }) {
  const [anyHost, setAnyHost] = useState(stored.allowed_hosts === null)
  const [hosts, setHosts] = useState<string[]>(stored.allowed_hosts ?? [])
  const rowKeys = useRowKeys(hosts.length)
  const [saved, setSaved] = useState(false)
  const { unsaved, markSaved } = useUnsaved({ anyHost, hosts })
  const { error, submit } = useSubmit()
  const save = submit(async () => {
    setSaved(false)
    const answer = await api<ToolSettings>('PUT', '/api/v1/organizations/tool-settings', {
      allowed_hosts: anyHost ? null : hosts,
    })
    // the hosts as the API stored them (lower case): what the form holds now
    setHosts(answer.allowed_hosts ?? [])
    setSaved(true)
    markSaved({ anyHost, hosts: answer.allowed_hosts ?? [] })
    onSaved()
  })
  const listProblem = error?.showAtList('allowed_hosts')
  return (
    <form className="form" onSubmit={save} aria-label="Allowed hosts">
      <LeaveGuard
        when={unsaved}
        message="The allowed hosts have changes that are not saved: leaving the page drops them."
      />
      <Checkbox
        label="Any host"
        checked={anyHost}
        onChange={setAnyHost}
        hint="Unchecked, only the hosts listed (none if the list is empty)"
      />
      {anyHost
        ? null
        : hosts.map((host, index) => (
            <div className="row" key={rowKeys.keys[index]}>
              <Field
                label={`Host ${index + 1}`}
                value={host}
                onChange={(value) => setHosts(hosts.map((item, at) => (at === index ? value : item)))}
                error={error}
                path={['allowed_hosts', index]}
                required
              />
              <button
                type="button"
                className="secondary"
                aria-label={`Remove host ${index + 1}`}
                onClick={() => {
                  rowKeys.removed(index)
                  setHosts(hosts.filter((_, at) => at !== index))
                }}
              >
                Remove
              </button>
            </div>
          ))}
      {anyHost ? null : (
        <div>
          <button type="button" className="secondary" onClick={() => setHosts([...hosts, ''])}>
            Add a host
          </button>
        </div>
      )}
      {listProblem ? <small className="field-error">{listProblem}</small> : null}
      <div className="row">
        <FormEnd error={error} saved={saved} submitLabel="Save allowed hosts" />
      </div>
    </form>
  )
}
