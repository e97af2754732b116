import { useRef, useState } from 'react'
import { api, query, type Schemas } from '../api'
import { useLiveEvents, type LiveRun } from '../events'
import { href } from '../router'
import { BarChart, Elapsed, Empty, Page, Show, StateBadge, Table, Time, useLoad } from '../ui'

/** Today in the browser's time zone, as the instants it starts and ends at. */
const today = () => {
  const start = new Date()
  start.setHours(0, 0, 0, 0)
  const end = new Date(start)
  end.setDate(end.getDate() + 1)
  return { start_date: start.toISOString(), end_date: new Date(end.getTime() - 1).toISOString() }
}

export function Overview({ admin }: { admin: boolean }) {
  const [calls, setCalls] = useState<Map<number, LiveRun> | null>(null)
  const [changes, setChanges] = useState(0)
  const refreshTimer = useRef<ReturnType<typeof setTimeout> | null>(null)
  // Figures that follow from finished runs and campaign changes are reloaded after a burst of events, not per event.
  const refreshSoon = () => {
    if (refreshTimer.current) return
    refreshTimer.current = setTimeout(() => {
      refreshTimer.current = null
      setChanges((value) => value + 1)
    }, 500)
  }
  useLiveEvents((event) => {
    if (event.type === 'snapshot') setCalls(new Map(event.data.calls.map((run) => [run.id, run])))
    if (event.type === 'run') {
      setCalls((previous) => {
        const next = new Map(previous ?? [])
        if (event.data.state === 'completed') next.delete(event.data.id)
        else next.set(event.data.id, event.data)
        return next
      })
      if (event.data.state === 'completed' || event.data.campaign_id !== null) refreshSoon()
    }
    if (event.type === 'campaign') refreshSoon()
  })
  return (
    <Page title="Overview">
      <div className="grid">
        {admin ? <GettingStarted /> : null}
        <section className="card wide" aria-labelledby="live-title">
          <h2 id="live-title">Calls in progress</h2>
          <LiveCalls calls={calls} />
        </section>
        {admin ? <TodayByOutcome changes={changes} /> : null}
        {admin ? <RunningCampaigns changes={changes} /> : null}
        {admin ? <Health /> : null}
      </div>
    </Page>
  )
}

type SetupStep = { title: string; done: boolean; link: string; linkText: string; how: string }

/** Where a new installation stands on the way to its first call, from what the organization has. */
async function setupSteps(): Promise<SetupStep[]> {
  const [models, agents, runs, telephony] = await Promise.all([
    api<Schemas['ModelConfigurationListResponse']>('GET', '/api/v1/organizations/model-configurations'),
    api<Schemas['WorkflowCountResponse']>('GET', '/api/v1/workflow/count'),
    api<Schemas['UsageHistoryResponse']>('GET', `/api/v1/organizations/usage/runs${query({ limit: 1 })}`),
    api<Schemas['TelephonyConfigurationListResponse']>('GET', '/api/v1/organizations/telephony-configs'),
  ])
  return [
    {
      title: 'Tell Ringbase where your models are',
      done: models.configurations.length > 0,
      link: '/models',
      linkText: 'Models',
      how: 'a model server (Ollama, vLLM, speaches…), then a configuration naming its LLM, speech to text and voice',
    },
    {
      title: 'Create an agent',
      done: agents.active > 0,
      link: '/agents',
      linkText: 'Agents',
      how: 'from a blank graph or a template',
    },
    {
      title: 'Talk to it from this browser',
      done: runs.total_count > 0,
      link: '/agents',
      linkText: 'Agents',
      how: '"Test the agent" in its editor: a text chat, or a call through your microphone',
    },
    {
      title: 'Connect your telephony',
      done: telephony.configurations.length > 0,
      link: '/telephony',
      linkText: 'Telephony',
      how: 'your Asterisk over ARI, or a carrier account; then a test call rings a real phone',
    },
  ]
}

/** The steps to a first call, while one is left: each says where it is done, and shows when it is (read on opening). */
function GettingStarted() {
  const loaded = useLoad(setupSteps, [])
  const steps = loaded.data
  if (!steps || steps.every((step) => step.done)) return null
  return (
    <section className="card wide" aria-labelledby="setup-title">
      <h2 id="setup-title">Getting started</h2>
      <ol className="setup-steps">
        {steps.map((step) => (
          <li key={step.title} data-done={step.done}>
            <strong>{step.title}</strong>
            <span className="muted">{step.done ? ' (done)' : `: ${step.how}.`}</span>{' '}
            {step.done ? null : <a href={href(step.link)}>{step.linkText}</a>}
          </li>
        ))}
      </ol>
    </section>
  )
}

function LiveCalls({ calls }: { calls: Map<number, LiveRun> | null }) {
  if (calls === null)
    return (
      <p className="muted" role="status">
        Connecting to the live stream…
      </p>
    )
  if (calls.size === 0)
    return <Empty title="No call in progress.">Calls appear here the moment they are placed or answered.</Empty>
  return (
    <Table card={false} columns={['Agent', 'Number', 'Direction', 'State', 'Duration', 'Node']}>
      {[...calls.values()].map((run) => (
        <tr key={run.id} data-run-id={run.id}>
          <td>
            <a href={href(`/runs/${run.workflow_id}/${run.id}`)}>{run.workflow_name}</a>
          </td>
          <td>{(run.call_type === 'inbound' ? run.caller_number : run.called_number) ?? '—'}</td>
          <td>{run.call_type}</td>
          <td>
            <StateBadge state={run.state === 'running' ? 'talking' : 'ringing'} />
          </td>
          <td>
            <Elapsed since={run.started_at ?? run.created_at} />
          </td>
          <td>{run.current_node_id ?? '—'}</td>
        </tr>
      ))}
    </Table>
  )
}

function TodayByOutcome({ changes }: { changes: number }) {
  const loaded = useLoad(
    () =>
      api<Schemas['GetOrganizationsUsageSummaryResponse']>(
        'GET',
        `/api/v1/organizations/usage/summary${query({ group_by: 'outcome', ...today() })}`,
      ),
    [changes],
  )
  return (
    <section className="card" aria-labelledby="today-title">
      <h2 id="today-title">Today's calls by outcome</h2>
      <Show loaded={loaded} what="today's calls">
        {(summary) =>
          summary.total_runs === 0 ? (
            <Empty title="No finished call today yet." />
          ) : (
            <>
              <BarChart
                title={`${summary.total_runs} finished today`}
                bars={summary.groups.map((group) => ({ label: group.label ?? 'no outcome', value: group.runs }))}
              />
              <a href={href('/runs')}>All runs</a>
            </>
          )
        }
      </Show>
    </section>
  )
}

function RunningCampaigns({ changes }: { changes: number }) {
  const loaded = useLoad(async () => {
    const { campaigns } = await api<{ campaigns: { id: number; name: string; state: string }[] }>(
      'GET',
      '/api/v1/campaign/',
    )
    const running = campaigns.filter((campaign) => campaign.state === 'running' || campaign.state === 'paused')
    return Promise.all(
      running.map(async (campaign) => ({
        campaign,
        progress: await api('GET', `/api/v1/campaign/${campaign.id}/progress`),
      })),
    )
  }, [changes])
  return (
    <section className="card" aria-labelledby="campaigns-title">
      <h2 id="campaigns-title">Campaigns running</h2>
      <Show loaded={loaded} what="campaigns">
        {(rows) =>
          rows.length === 0 ? (
            <Empty title="No campaign running.">
              <a href={href('/campaigns/new')}>Create a campaign from a CSV</a>
            </Empty>
          ) : (
            <ul className="plain">
              {rows.map(({ campaign, progress }) => (
                <CampaignProgress key={campaign.id} campaign={campaign} progress={progress} />
              ))}
            </ul>
          )
        }
      </Show>
    </section>
  )
}

/** `count` with its noun, singular for one (`1 dial attempt`, `2 dial attempts`). */
export const countOf = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`

/** A campaign's progress in contacts: the bar and the figure are both contacts done of all its contacts. */
export function CampaignProgress({
  campaign,
  progress,
}: {
  campaign: { id: number; name: string; state: string }
  progress: { total_rows: number; contacts: { done: number } }
}) {
  const total = progress.total_rows
  const done = progress.contacts.done
  return (
    <li>
      <a href={href(`/campaigns/${campaign.id}`)}>{campaign.name}</a> <StateBadge state={campaign.state} />
      <progress
        max={Math.max(1, total)}
        value={Math.min(done, total)}
        aria-label={`${campaign.name}: ${done} of ${countOf(total, 'contact')} done`}
      />
      <span className="muted">
        {done} of {countOf(total, 'contact')} done
      </span>
    </li>
  )
}

const BYTE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB']

function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < BYTE_UNITS.length - 1) {
    value /= 1000
    unit += 1
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${BYTE_UNITS[unit]}`
}

function Health() {
  const loaded = useLoad(
    async () => ({
      health: await api('GET', '/api/v1/health'),
      telephony: (await api<{ configurations: any[] }>('GET', '/api/v1/organizations/telephony-configs'))
        .configurations,
      connections: (await api<{ connections: any[] }>('GET', '/api/v1/organizations/provider-connections')).connections,
    }),
    [],
  )
  return (
    <section className="card" aria-labelledby="health-title">
      <h2 id="health-title">Health</h2>
      <Show loaded={loaded} what="health">
        {({ health, telephony, connections }) => (
          <ul className="plain">
            <li>
              Server {health.version}: <StateBadge state={health.status} />
            </li>
            <li>
              Database ({health.database.backend}
              {health.instances.live > 1 ? `, ${health.instances.live} live instances` : ''}):{' '}
              <StateBadge state={health.database.reachable ? 'ok' : 'unreachable'} />
            </li>
            <li>
              Files ({health.object_store.kind === 's3' ? 'S3 bucket' : 'data dir'}):{' '}
              <StateBadge state={health.object_store.reachable ? 'ok' : 'unreachable'} />
            </li>
            {health.disk ? (
              <li>
                Data dir disk: {formatBytes(health.disk.free_bytes)} free of {formatBytes(health.disk.total_bytes)}
              </li>
            ) : null}
            {telephony.length === 0 ? (
              <li>
                <a href={href('/telephony')}>Connect your PBX or carrier</a> to place and answer calls.
              </li>
            ) : (
              telephony.map((config) => (
                <li key={config.id}>
                  {config.name} ({config.provider}):{' '}
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
                </li>
              ))
            )}
            {connections.length === 0 ? (
              <li>
                <a href={href('/models')}>Add a model server</a> (LLM, speech to text, text to speech).
              </li>
            ) : (
              connections.map((connection) => (
                <li key={connection.uuid}>
                  {connection.name} <span className="muted">({connection.base_url})</span>:{' '}
                  {connection.last_check ? (
                    <>
                      <StateBadge state={connection.last_check.ok ? 'ok' : 'failed'} />{' '}
                      <span className="muted">
                        checked <Time at={connection.last_check.at} />
                        {connection.last_check.error ? `: ${connection.last_check.error}` : ''}
                      </span>
                    </>
                  ) : (
                    <a href={href('/models')}>never checked: check it</a>
                  )}
                </li>
              ))
            )}
          </ul>
        )}
      </Show>
    </section>
  )
}
