// Agents: the list (search, status, archive/restore, duplicate) and a new agent from a blank graph or a template.
import { useState } from 'react'
import { api } from '../api'
import { AGENT_TEMPLATES, templateDefinition, transferToolBody } from '../agents/templates'
import { withoutTriggerPaths } from '../agents/graph'
import { href, navigate } from '../router'
import {
  Empty,
  ErrorNote,
  Field,
  LeaveGuard,
  Page,
  Show,
  StateBadge,
  Table,
  Time,
  useLoad,
  useSubmit,
  useUnsaved,
} from '../ui'

type AgentItem = { id: number; name: string; status: 'active' | 'archived'; created_at: string; total_runs: number }

export function AgentList({ params }: { params: URLSearchParams }) {
  const status = params.get('status') ?? 'active'
  const search = params.get('q') ?? ''
  const agents = useLoad(() => api<AgentItem[]>('GET', `/api/v1/workflow/fetch?status=${status}`), [status])
  const { error, submit } = useSubmit()
  const setStatus = (agent: AgentItem) =>
    submit(async () => {
      await api('PUT', `/api/v1/workflow/${agent.id}/status`, {
        status: agent.status === 'active' ? 'archived' : 'active',
      })
      agents.reload()
    })
  const duplicate = (agent: AgentItem) =>
    submit(async () => {
      const original = await api('GET', `/api/v1/workflow/fetch/${agent.id}`)
      const copy = await api('POST', '/api/v1/workflow/create/definition', {
        name: `Copy of ${original.name}`.slice(0, 255),
        workflow_definition: withoutTriggerPaths(original.workflow_definition),
        workflow_configurations: original.workflow_configurations,
      })
      navigate(`/agents/${copy.id}`)
    })
  const filter = (next: Record<string, string>) => navigate('/agents', { status, q: search, ...next })
  return (
    <Page
      title="Agents"
      actions={
        <a className="button" href={href('/agents/new')}>
          New agent
        </a>
      }
    >
      <search className="card filters">
        <Field label="Search by name" value={search} onChange={(q) => filter({ q })} type="search" />
        <Field
          label="Status"
          value={status}
          onChange={(value) => filter({ status: value })}
          options={[
            { value: 'active', label: 'Active' },
            { value: 'archived', label: 'Archived' },
            { value: 'active,archived', label: 'All' },
          ]}
        />
      </search>
      <ErrorNote error={error} />
      <Show loaded={agents} what="the agents">
        {(list) => {
          const shown = list.filter((agent) => agent.name.toLowerCase().includes(search.toLowerCase()))
          if (shown.length === 0)
            return (
              <Empty title={list.length === 0 ? 'No agent yet.' : 'No agent matches.'}>
                <a href={href('/agents/new')}>Create an agent</a> from a blank graph or a template.
              </Empty>
            )
          return (
            <Table columns={['Name', 'Status', 'Runs', 'Created', { hidden: 'Actions' }]}>
              {shown.map((agent) => (
                <tr key={agent.id} data-agent-id={agent.id}>
                  <td>
                    <a href={href(`/agents/${agent.id}`)}>{agent.name}</a>
                  </td>
                  <td>
                    <StateBadge state={agent.status} />
                  </td>
                  <td>{agent.total_runs}</td>
                  <td>
                    <Time at={agent.created_at} />
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="secondary"
                      onClick={duplicate(agent)}
                      aria-label={`Duplicate ${agent.name}`}
                    >
                      Duplicate
                    </button>
                    <button
                      type="button"
                      className="secondary"
                      onClick={setStatus(agent)}
                      aria-label={`${agent.status === 'active' ? 'Archive' : 'Restore'} ${agent.name}`}
                    >
                      {agent.status === 'active' ? 'Archive' : 'Restore'}
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          )
        }}
      </Show>
    </Page>
  )
}

export function NewAgent() {
  const [name, setName] = useState('')
  const [templateKey, setTemplateKey] = useState('blank')
  const [transferTo, setTransferTo] = useState('')
  const { unsaved, markSaved } = useUnsaved([name, templateKey, transferTo])
  const { error, submit } = useSubmit()
  const template = AGENT_TEMPLATES.find((item) => item.key === templateKey)!
  const create = submit(async () => {
    const tool =
      template.transferNodeId && transferTo.trim()
        ? await api<{ tool_uuid: string }>('POST', '/api/v1/tools/', transferToolBody(transferTo.trim()))
        : null
    const agent = await api('POST', '/api/v1/workflow/create/definition', {
      name,
      workflow_definition: templateDefinition(template, tool?.tool_uuid),
    })
    markSaved()
    navigate(`/agents/${agent.id}`)
  })
  return (
    <Page title="New agent">
      <form className="card form" onSubmit={create}>
        <LeaveGuard
          when={unsaved}
          message="The new agent's form has changes that are not saved: leaving the page drops them."
        />
        <Field label="Name" value={name} onChange={setName} error={error} path={['name']} required />
        <fieldset className="templates">
          <legend>Start from</legend>
          {AGENT_TEMPLATES.map((item) => (
            <label key={item.key} className="template">
              <input
                type="radio"
                name="template"
                value={item.key}
                checked={templateKey === item.key}
                onChange={() => setTemplateKey(item.key)}
              />
              <span>
                <strong>{item.title}</strong> <span className="muted">{item.summary}</span>
              </span>
            </label>
          ))}
        </fieldset>
        {template.transferNodeId ? (
          <Field
            label="Transfer to (number or SIP address)"
            value={transferTo}
            onChange={setTransferTo}
            hint="Creates a transfer tool for the Transfer step; leave empty to add one later."
          />
        ) : null}
        <ErrorNote error={error} />
        <div>
          <button type="submit">Create agent</button>
        </div>
      </form>
    </Page>
  )
}
