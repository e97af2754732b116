import { useRef, useState } from 'react'
import { api, ApiError } from '../api'
import { useLiveEvents } from '../events'
import { href, navigate } from '../router'
import { Empty, ErrorNote, Field, Page, Show, StateBadge, Table, Time, useLoad, useSubmit } from '../ui'
import { CampaignProgress } from './overview'

export function Campaigns({ path }: { path: string[] }) {
  if (path[1] === 'new') return <NewCampaign />
  if (path[1]) return <CampaignPage id={Number(path[1])} />
  return <CampaignList />
}

function CampaignList() {
  const loaded = useLoad(() => api<{ campaigns: any[] }>('GET', '/api/v1/campaign/'), [])
  useLiveEvents((event) => {
    if (event.type === 'campaign') loaded.reload()
  })
  return (
    <Page
      title="Campaigns"
      actions={
        <a className="button" href={href('/campaigns/new')}>
          New campaign
        </a>
      }
    >
      <Show loaded={loaded} what="campaigns">
        {({ campaigns }) =>
          campaigns.length === 0 ? (
            <Empty title="No campaign yet.">
              <a href={href('/campaigns/new')}>Upload a CSV of contacts</a> to call them with an agent.
            </Empty>
          ) : (
            <Table columns={['Name', 'Agent', 'State', 'Contacts', 'Created']}>
              {campaigns.map((campaign) => (
                <tr key={campaign.id}>
                  <td>
                    <a href={href(`/campaigns/${campaign.id}`)}>{campaign.name}</a>
                  </td>
                  <td>{campaign.workflow_name ?? 'traffic split'}</td>
                  <td>
                    <StateBadge state={campaign.state} />
                  </td>
                  <td>
                    {campaign.processed_rows} / {campaign.total_rows}
                  </td>
                  <td>
                    <Time at={campaign.created_at} />
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
    </Page>
  )
}

/** PUTs the file to the signed URL with upload progress (fetch has none for request bodies). */
function putWithProgress(url: string, file: File, onProgress: (fraction: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest()
    request.open('PUT', url)
    request.setRequestHeader('content-type', 'text/csv')
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total)
    }
    request.onload = () =>
      request.status < 300 ? resolve() : reject(new ApiError(request.status, safeDetail(request.responseText)))
    request.onerror = () => reject(new ApiError(0, 'The upload failed: the server could not be reached'))
    request.send(file)
  })
}

const safeDetail = (text: string) => {
  try {
    return JSON.parse(text).detail ?? text
  } catch {
    return text
  }
}

/** Two agents splitting the contacts: the first gets `firstShare` percent, the second the rest. */
const trafficSplit = (first: number, second: number, firstShare: number) => ({
  variants: [
    { workflow_id: first, weight: firstShare },
    { workflow_id: second, weight: 100 - firstShare },
  ],
})

/** One daily window (`HH:MM`–`HH:MM` in `timezone`) on weekdays or every day; day 0 is Monday. */
function scheduleConfig(timezone: string, days: string, start: string, end: string) {
  const dayNumbers = days === 'weekdays' ? [0, 1, 2, 3, 4] : [0, 1, 2, 3, 4, 5, 6]
  return {
    enabled: true,
    timezone,
    slots: dayNumbers.map((day) => ({ day_of_week: day, start_time: start, end_time: end })),
  }
}

function NewCampaign() {
  const agents = useLoad(() => api<{ id: number; name: string; status: string }[]>('GET', '/api/v1/workflow/fetch'), [])
  const telephony = useLoad(
    () => api<{ configurations: { id: number; name: string }[] }>('GET', '/api/v1/organizations/telephony-configs'),
    [],
  )
  const [name, setName] = useState('')
  const [agent, setAgent] = useState('')
  const [configuration, setConfiguration] = useState('')
  const [concurrency, setConcurrency] = useState('2')
  const [rate, setRate] = useState('1')
  const [retries, setRetries] = useState('2')
  const [secondAgent, setSecondAgent] = useState('')
  const [firstShare, setFirstShare] = useState('50')
  const [windowStart, setWindowStart] = useState('')
  const [windowEnd, setWindowEnd] = useState('')
  const [windowDays, setWindowDays] = useState('weekdays')
  const [timezone, setTimezone] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone)
  const file = useRef<HTMLInputElement>(null)
  const [progress, setProgress] = useState<number | null>(null)
  const { error, submit } = useSubmit()
  const create = submit(async () => {
    const chosen = file.current?.files?.[0]
    if (!chosen) throw new ApiError(0, 'Choose a CSV file of contacts')
    try {
      setProgress(0)
      const grant = await api('POST', '/api/v1/s3/presigned-upload-url', {
        file_name: chosen.name,
        file_size: chosen.size,
      })
      const target = new URL(grant.upload_url, window.location.origin)
      await putWithProgress(`${target.pathname}${target.search}`, chosen, setProgress)
      const campaign = await api('POST', '/api/v1/campaign/create', {
        name,
        source_type: 'csv',
        source_id: grant.file_key,
        ...(secondAgent
          ? { traffic_split: trafficSplit(Number(agent), Number(secondAgent), Number(firstShare)) }
          : { workflow_id: Number(agent) || null }),
        ...(windowStart && windowEnd
          ? { schedule_config: scheduleConfig(timezone, windowDays, windowStart, windowEnd) }
          : {}),
        telephony_configuration_id: configuration ? Number(configuration) : null,
        max_concurrency: Number(concurrency) || null,
        rate_limit_per_second: Number(rate) || 1,
        retry_config: { enabled: Number(retries) > 0, max_retries: Number(retries) || 0 },
      })
      navigate(`/campaigns/${campaign.id}`)
    } finally {
      setProgress(null)
    }
  })
  return (
    <Page title="New campaign">
      <form className="card form" onSubmit={create} aria-label="New campaign">
        <Field label="Name" value={name} onChange={setName} error={error} path={['name']} required />
        <Field
          label="Agent"
          value={agent}
          onChange={setAgent}
          error={error}
          path={['workflow_id']}
          required
          options={[
            { value: '', label: 'Choose an agent' },
            ...(agents.data ?? [])
              .filter((item) => item.status !== 'archived')
              .map((item) => ({ value: String(item.id), label: item.name })),
          ]}
        />
        <Field
          label="Split with a second agent"
          value={secondAgent}
          onChange={setSecondAgent}
          error={error}
          path={['traffic_split', 'variants']}
          hint="Optional: each contact is called by one of the two, by weight"
          options={[
            { value: '', label: 'No split' },
            ...(agents.data ?? [])
              .filter((item) => item.status !== 'archived')
              .map((item) => ({ value: String(item.id), label: item.name })),
          ]}
        />
        {secondAgent ? (
          <Field
            label="First agent's share (%)"
            type="number"
            value={firstShare}
            onChange={setFirstShare}
            error={error}
            path={['traffic_split', 'variants', 0, 'weight']}
            hint="The second agent gets the rest of 100"
          />
        ) : null}
        <Field
          label="Dial from (HH:MM)"
          type="time"
          value={windowStart}
          onChange={setWindowStart}
          error={error}
          path={['schedule_config', 'slots']}
          hint="Optional: outside this window nothing is dialled"
        />
        <Field
          label="Dial until (HH:MM)"
          type="time"
          value={windowEnd}
          onChange={setWindowEnd}
          error={error}
          path={['schedule_config', 'slots', 0, 'end_time']}
        />
        <Field
          label="Days"
          value={windowDays}
          onChange={setWindowDays}
          error={error}
          path={['schedule_config', 'slots', 0, 'day_of_week']}
          options={[
            { value: 'weekdays', label: 'Monday to Friday' },
            { value: 'every-day', label: 'Every day' },
          ]}
        />
        <Field
          label="Time zone of the window"
          value={timezone}
          onChange={setTimezone}
          error={error}
          path={['schedule_config', 'timezone']}
        />
        <Field
          label="Telephony configuration"
          value={configuration}
          onChange={setConfiguration}
          error={error}
          path={['telephony_configuration_id']}
          options={[
            { value: '', label: 'The default for outbound calls' },
            ...(telephony.data?.configurations ?? []).map((item) => ({ value: String(item.id), label: item.name })),
          ]}
        />
        <Field
          label="Calls at once"
          type="number"
          value={concurrency}
          onChange={setConcurrency}
          error={error}
          path={['max_concurrency']}
        />
        <Field
          label="Calls started per second"
          type="number"
          value={rate}
          onChange={setRate}
          error={error}
          path={['rate_limit_per_second']}
        />
        <Field
          label="Retries per contact"
          type="number"
          value={retries}
          onChange={setRetries}
          error={error}
          path={['retry_config', 'max_retries']}
        />
        <div className="field">
          <label htmlFor="contacts-file">Contacts (CSV with a phone_number column)</label>
          <input id="contacts-file" ref={file} type="file" accept=".csv,text/csv" required />
        </div>
        {progress !== null ? <progress max={1} value={progress} aria-label="Upload progress" /> : null}
        <ErrorNote error={error} />
        <button type="submit" disabled={progress !== null}>
          Upload and create
        </button>
      </form>
    </Page>
  )
}

function CampaignPage({ id }: { id: number }) {
  const loaded = useLoad(
    async () => ({
      campaign: await api('GET', `/api/v1/campaign/${id}`),
      progress: await api('GET', `/api/v1/campaign/${id}/progress`),
      traffic: await api('GET', `/api/v1/campaign/${id}/traffic-stats`),
    }),
    [id],
  )
  const { error, submit } = useSubmit()
  useLiveEvents((event) => {
    if ((event.type === 'campaign' && event.data.id === id) || (event.type === 'run' && event.data.campaign_id === id))
      loaded.reload()
  })
  const act = (action: string) =>
    submit(async () => {
      const made = await api('POST', `/api/v1/campaign/${id}/${action}`, action === 'redial' ? {} : undefined)
      if (action === 'redial') navigate(`/campaigns/${made.id}`)
      else loaded.reload()
    })
  return (
    <Show loaded={loaded} what="the campaign">
      {({ campaign, progress, traffic }) => (
        <Page
          title={campaign.name}
          actions={
            <>
              {campaign.state === 'draft' ? (
                <button type="button" onClick={act('start')}>
                  Start
                </button>
              ) : null}
              {campaign.state === 'running' ? (
                <button type="button" onClick={act('pause')}>
                  Pause
                </button>
              ) : null}
              {campaign.state === 'paused' ? (
                <button type="button" onClick={act('resume')}>
                  Resume
                </button>
              ) : null}
              {['draft', 'running', 'paused'].includes(campaign.state) ? (
                <button type="button" className="secondary" onClick={act('stop')}>
                  Cancel campaign
                </button>
              ) : null}
              {['completed', 'stopped'].includes(campaign.state) ? (
                <button type="button" className="secondary" onClick={act('redial')}>
                  Redial unreached
                </button>
              ) : null}
            </>
          }
        >
          <ErrorNote error={error} />
          <section className="card" aria-labelledby="progress-title">
            <h2 id="progress-title">Progress</h2>
            <ul className="plain">
              <CampaignProgress campaign={campaign} progress={progress} />
            </ul>
            <dl className="facts">
              <div>
                <dt>State</dt>
                <dd>
                  <StateBadge state={campaign.state} />
                </dd>
              </div>
              <div>
                <dt>Dial attempts</dt>
                <dd>{campaign.processed_rows}</dd>
              </div>
              <div>
                <dt>Finished</dt>
                <dd>{campaign.executed_count}</dd>
              </div>
              <div>
                <dt>Failed</dt>
                <dd>{progress.failed_calls}</dd>
              </div>
              <div>
                <dt>Still queued</dt>
                <dd>{campaign.total_queued_count}</dd>
              </div>
              <div>
                <dt>Agent</dt>
                <dd>{campaign.workflow_name ?? 'traffic split'}</dd>
              </div>
              <div>
                <dt>Telephony</dt>
                <dd>{campaign.telephony_configuration_name ?? 'default'}</dd>
              </div>
              <div>
                <dt>Calls at once</dt>
                <dd>{campaign.max_concurrency ?? '—'}</dd>
              </div>
              <div>
                <dt>Rate</dt>
                <dd>{campaign.rate_limit_per_second}/s</dd>
              </div>
            </dl>
            <a href={href('/runs', { campaign: id })}>Runs of this campaign</a>
          </section>
          {traffic.variants.length > 1 ? (
            <section className="card" aria-labelledby="split-title">
              <h2 id="split-title">Traffic split</h2>
              <Table card={false} columns={['Agent', 'Weight', 'Contacts', 'Calls', 'Outcomes']}>
                {traffic.variants.map((variant: any) => (
                  <tr key={variant.id}>
                    <td>
                      {variant.workflow_name}
                      {variant.removed ? <span className="muted"> (removed)</span> : null}
                    </td>
                    <td>{variant.weight} %</td>
                    <td>{variant.contacts_assigned}</td>
                    <td>{variant.calls_placed}</td>
                    <td>
                      {Object.entries(variant.outcomes)
                        .map(([outcome, count]) => `${outcome}: ${count}`)
                        .join(', ') || '—'}
                    </td>
                  </tr>
                ))}
              </Table>
            </section>
          ) : null}
          {Array.isArray(campaign.logs) && campaign.logs.length ? (
            <section className="card" aria-labelledby="log-title">
              <h2 id="log-title">Log</h2>
              <ol>
                {campaign.logs.map((entry: any, index: number) => (
                  <li key={index}>
                    <Time at={entry.ts} /> {entry.message}
                  </li>
                ))}
              </ol>
            </section>
          ) : null}
        </Page>
      )}
    </Show>
  )
}
