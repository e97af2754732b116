import { useState, type FormEvent } from 'react'
import { api, query } from '../api'
import { href, navigate } from '../router'
import { Empty, Field, formatDuration, Page, Show, Table, Time, useLoad } from '../ui'

/** The usage filters the page offers, as the fragment's parameters. */
const FILTER_NAMES = ['agent', 'campaign', 'outcome', 'direction', 'channel', 'from', 'to', 'caller', 'called'] as const
type Filters = Record<(typeof FILTER_NAMES)[number], string>

function apiFilters(filters: Filters) {
  const items: { attribute: string; type: string; value: Record<string, unknown> }[] = []
  if (filters.agent) items.push({ attribute: 'workflowId', type: 'number', value: { value: Number(filters.agent) } })
  if (filters.campaign)
    items.push({ attribute: 'campaignId', type: 'number', value: { value: Number(filters.campaign) } })
  if (filters.outcome)
    items.push({ attribute: 'dispositionCode', type: 'multiSelect', value: { codes: [filters.outcome] } })
  if (filters.direction) items.push({ attribute: 'callDirection', type: 'radio', value: { status: filters.direction } })
  if (filters.channel) items.push({ attribute: 'callChannel', type: 'radio', value: { status: filters.channel } })
  if (filters.caller) items.push({ attribute: 'callerNumber', type: 'text', value: { value: filters.caller } })
  if (filters.called) items.push({ attribute: 'calledNumber', type: 'text', value: { value: filters.called } })
  return items.length ? JSON.stringify(items) : undefined
}

/** A date field's day as the start (or end) of that day in the browser's time zone. */
const dayBound = (day: string, end: boolean) =>
  day ? new Date(`${day}T${end ? '23:59:59.999' : '00:00:00'}`).toISOString() : undefined

type Row = {
  id: number
  workflow_id: number
  name: string
  workflow_name: string
  created_at: string
  call_type: string
  number: string | null
  disposition: string | null
  duration: number | null
  cost: number | null
}

/** A row of the usage list (finished runs of the organization). */
const usageRow = (run: any): Row => ({
  id: run.id,
  workflow_id: run.workflow_id,
  name: run.name,
  workflow_name: run.workflow_name,
  created_at: run.created_at,
  call_type: run.call_type,
  number: (run.call_type === 'inbound' ? run.caller_number : run.called_number) ?? run.phone_number ?? null,
  disposition: run.disposition ?? null,
  duration: run.call_duration_seconds ?? null,
  cost: typeof run.charge_usd === 'number' ? run.charge_usd : null,
})

/** A row of an agent's run list (what a trigger key may read). */
const agentRunRow = (run: any): Row => ({
  id: run.id,
  workflow_id: run.workflow_id,
  name: run.name,
  workflow_name: run.workflow_name,
  created_at: run.created_at,
  call_type: run.call_type,
  number:
    run.initial_context?.called_number ??
    run.initial_context?.phone_number ??
    run.initial_context?.caller_number ??
    null,
  disposition: run.gathered_context?.mapped_call_disposition ?? null,
  duration: run.usage_info?.call_duration_seconds ?? null,
  cost: typeof run.cost_info?.charge_usd === 'number' ? run.cost_info.charge_usd : null,
})

function RunTable({ runs, caption }: { runs: Row[]; caption: string }) {
  return (
    <Table caption={caption} columns={['Run', 'Agent', 'When', 'Direction', 'Number', 'Outcome', 'Duration', 'Cost']}>
      {runs.map((run) => (
        <tr key={run.id}>
          <td>
            <a href={href(`/runs/${run.workflow_id}/${run.id}`)}>{run.name}</a>
          </td>
          <td>{run.workflow_name}</td>
          <td>
            <Time at={run.created_at} />
          </td>
          <td>{run.call_type}</td>
          <td>{run.number ?? '—'}</td>
          <td>{run.disposition ?? '—'}</td>
          <td>{formatDuration(run.duration)}</td>
          <td>{run.cost === null ? '—' : `$${run.cost.toFixed(4)}`}</td>
        </tr>
      ))}
    </Table>
  )
}

export function RunList({ params, admin }: { params: URLSearchParams; admin: boolean }) {
  return admin ? <OrganizationRuns params={params} /> : <AgentRuns params={params} />
}

/** A trigger key reads the runs of an agent it knows (by id), not the organization's usage. */
function AgentRuns({ params }: { params: URLSearchParams }) {
  const agent = params.get('agent') ?? ''
  const page = Math.max(1, Number(params.get('page') ?? 1) || 1)
  const [draft, setDraft] = useState(agent)
  const runs = useLoad(
    async () => (agent ? api('GET', `/api/v1/workflow/${Number(agent)}/runs${query({ page, limit: 25 })}`) : null),
    [agent, page],
  )
  const show = (event: FormEvent) => {
    event.preventDefault()
    navigate('/runs', { agent: draft })
  }
  return (
    <Page title="Runs">
      <form className="card inline-form" onSubmit={show} aria-label="Choose an agent">
        <Field
          label="Agent id"
          type="number"
          value={draft}
          onChange={setDraft}
          required
          hint="This key reads the runs of one agent at a time"
        />
        <button type="submit">Show runs</button>
      </form>
      {agent ? (
        <Show loaded={runs} what="runs">
          {(result: any) =>
            result.runs.length === 0 ? (
              <Empty title="This agent has no run yet." />
            ) : (
              <RunTable
                runs={result.runs.map(agentRunRow)}
                caption={`${result.total_count} runs, page ${result.page} of ${Math.max(1, result.total_pages)}`}
              />
            )
          }
        </Show>
      ) : null}
    </Page>
  )
}

function OrganizationRuns({ params }: { params: URLSearchParams }) {
  const applied = Object.fromEntries(FILTER_NAMES.map((name) => [name, params.get(name) ?? ''])) as Filters
  const page = Math.max(1, Number(params.get('page') ?? 1) || 1)
  const [draft, setDraft] = useState<Filters>(applied)
  const agents = useLoad(() => api<{ id: number; name: string }[]>('GET', '/api/v1/workflow/fetch'), [])
  const runs = useLoad(
    () =>
      api(
        'GET',
        `/api/v1/organizations/usage/runs${query({
          page,
          limit: 25,
          filters: apiFilters(applied),
          start_date: dayBound(applied.from, false),
          end_date: dayBound(applied.to, true),
        })}`,
      ),
    [params.toString()],
  )
  const apply = (event: FormEvent) => {
    event.preventDefault()
    navigate('/runs', { ...draft })
  }
  const set = (name: keyof Filters) => (value: string) => setDraft({ ...draft, [name]: value })
  return (
    <Page title="Runs">
      <form className="filters card" onSubmit={apply} aria-label="Filter runs">
        <Field
          label="Agent"
          value={draft.agent}
          onChange={set('agent')}
          options={[
            { value: '', label: 'Any agent' },
            ...(agents.data ?? []).map((agent) => ({ value: String(agent.id), label: agent.name })),
          ]}
        />
        <Field label="Campaign id" type="number" value={draft.campaign} onChange={set('campaign')} />
        <Field
          label="Outcome"
          value={draft.outcome}
          onChange={set('outcome')}
          hint="A disposition, e.g. completed or busy"
        />
        <Field
          label="Direction"
          value={draft.direction}
          onChange={set('direction')}
          options={[
            { value: '', label: 'Both' },
            { value: 'inbound', label: 'Inbound' },
            { value: 'outbound', label: 'Outbound' },
          ]}
        />
        <Field
          label="Channel"
          value={draft.channel}
          onChange={set('channel')}
          options={[
            { value: '', label: 'Any' },
            { value: 'telephony', label: 'Telephony' },
            { value: 'web', label: 'Web' },
            { value: 'chat', label: 'Chat' },
          ]}
        />
        <Field label="From" type="date" value={draft.from} onChange={set('from')} />
        <Field label="To" type="date" value={draft.to} onChange={set('to')} />
        <Field label="Caller number" value={draft.caller} onChange={set('caller')} />
        <Field label="Called number" value={draft.called} onChange={set('called')} />
        <div className="filter-actions">
          <button type="submit">Apply filters</button>
          <a
            className="button secondary"
            href={href('/runs')}
            onClick={() => setDraft(Object.fromEntries(FILTER_NAMES.map((name) => [name, ''])) as Filters)}
          >
            Clear
          </a>
        </div>
      </form>
      <Show loaded={runs} what="runs">
        {(result: any) =>
          result.runs.length === 0 ? (
            <Empty title="No finished run matches.">
              Runs appear here once calls end. Start one from an agent's API trigger or a campaign.
            </Empty>
          ) : (
            <>
              <RunTable
                runs={result.runs.map(usageRow)}
                caption={`${result.total_count} runs, page ${result.page} of ${Math.max(1, result.total_pages)}`}
              />
              <nav className="pager" aria-label="Pages">
                {page > 1 ? <a href={href('/runs', { ...applied, page: page - 1 })}>Previous page</a> : null}
                {page < result.total_pages ? (
                  <a href={href('/runs', { ...applied, page: page + 1 })}>Next page</a>
                ) : null}
              </nav>
            </>
          )
        }
      </Show>
    </Page>
  )
}
