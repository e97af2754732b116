import { type Dispatch, type SetStateAction, useRef, useState } from 'react'
import { api, ApiError } from '../api'
import { useLiveEvents } from '../events'
import { href, navigate } from '../router'
import {
  Empty,
  ErrorNote,
  Fact,
  Field,
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
import { CampaignProgress } from './overview'
import { putWithProgress } from '../upload'

export function Campaigns({ path }: { path: string[] }) {
  if (path[1] === 'new') return <NewCampaign />
  if (path[1]) return <CampaignPage id={Number(path[1])} />
  return <CampaignList />
}

function CampaignList() {
  const loaded = useLoad(() => api<{ campaigns: any[] }>('GET', '/api/v1/campaign/'), [])
  useLiveEvents((event) => {
    if (event.type === 'campaign') loaded.reload()
  }, loaded.reload)
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

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']

type Variant = { agent: string; weight: string }
type DayWindow = { start: string; end: string }

/** The split's weights made even again (whole percentages totalling 100, the rest to the first) after a change of size. */
const evenWeights = (variants: Variant[]): Variant[] =>
  variants.map((variant, index) => ({
    ...variant,
    weight: String(Math.floor(100 / variants.length) + (index === 0 ? 100 % variants.length : 0)),
  }))

/** The days with both times as slots (day 0 is Monday), each with its row in the form for the API's `loc`. */
const scheduleSlots = (windows: DayWindow[]) =>
  windows.flatMap((window, day) =>
    window.start && window.end ? [{ day_of_week: day, start_time: window.start, end_time: window.end }] : [],
  )

const MAX_VARIANTS = 5

/** The form's values, as typed. */
type CampaignForm = {
  name: string
  variants: Variant[]
  configuration: string
  concurrency: string
  rate: string
  retries: string
  retryDelay: string
  windows: DayWindow[]
  timezone: string
}

/** `POST /campaign/create` for the form, its contacts uploaded as `fileKey`. */
function campaignBody(fileKey: string, form: CampaignForm) {
  const { variants, retries } = form
  const slots = scheduleSlots(form.windows)
  return {
    name: form.name,
    source_type: 'csv',
    source_id: fileKey,
    ...(variants.length > 1
      ? {
          traffic_split: {
            variants: variants.map((variant) => ({
              workflow_id: Number(variant.agent),
              weight: Number(variant.weight),
            })),
          },
        }
      : { workflow_id: Number(variants[0].agent) || null }),
    ...(slots.length ? { schedule_config: { enabled: true, timezone: form.timezone, slots } } : {}),
    telephony_configuration_id: form.configuration ? Number(form.configuration) : null,
    max_concurrency: Number(form.concurrency) || null,
    rate_limit_per_second: Number(form.rate) || 1,
    retry_config: {
      enabled: Number(retries) > 0,
      max_retries: Number(retries) || 0,
      ...(Number(retries) > 0 ? { retry_delay_seconds: Number(form.retryDelay) } : {}),
    },
  }
}

const agentOptions = (agents: { id: number; name: string; status: string }[]) => [
  { value: '', label: 'Choose an agent' },
  ...agents.filter((item) => item.status !== 'archived').map((item) => ({ value: String(item.id), label: item.name })),
]

/** The agent, or several sharing the contacts by weight (the traffic split), each with its 422 next to it. */
function AgentsFieldset({
  variants,
  onVariants: setVariants,
  options: agentOptions,
  error,
}: {
  variants: Variant[]
  onVariants: Dispatch<SetStateAction<Variant[]>>
  options: { value: string; label: string }[]
  error: ApiError | null
}) {
  const variantKeys = useRowKeys(variants.length)
  const setVariant = (index: number, change: Partial<Variant>) =>
    setVariants((previous) => previous.map((variant, at) => (at === index ? { ...variant, ...change } : variant)))
  return (
    <fieldset>
      <legend>Agents</legend>
      {variants.map((variant, index) => (
        <div key={variantKeys.keys[index]} className="row">
          <Field
            label={index === 0 ? 'Agent' : `Agent ${index + 1}`}
            value={variant.agent}
            onChange={(agent) => setVariant(index, { agent })}
            error={error}
            path={variants.length > 1 ? ['traffic_split', 'variants', index, 'workflow_id'] : ['workflow_id']}
            otherPaths={index === 0 ? [['traffic_split', 'variants'], ['traffic_split']] : []}
            required
            options={agentOptions}
          />
          {variants.length > 1 ? (
            <>
              <Field
                label={`Share of agent ${index + 1} (%)`}
                type="number"
                value={variant.weight}
                onChange={(weight) => setVariant(index, { weight })}
                error={error}
                path={['traffic_split', 'variants', index, 'weight']}
              />
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  variantKeys.removed(index)
                  setVariants((previous) => evenWeights(previous.filter((_, at) => at !== index)))
                }}
              >
                Remove agent {index + 1}
              </button>
            </>
          ) : null}
        </div>
      ))}
      {variants.length < MAX_VARIANTS ? (
        <button
          type="button"
          className="secondary"
          onClick={() => setVariants((previous) => evenWeights([...previous, { agent: '', weight: '0' }]))}
        >
          Split with another agent
        </button>
      ) : null}
      <small className="muted">
        With several agents each contact is called by one of them, by share (whole percentages totalling 100; up to{' '}
        {MAX_VARIANTS}).
      </small>
    </fieldset>
  )
}

/** The days and hours contacts may be dialled, in a time zone; each slot's 422 next to its day. */
function WindowFieldset({
  windows,
  onWindows: setWindows,
  timezone,
  onTimezone: setTimezone,
  error,
}: {
  windows: DayWindow[]
  onWindows: Dispatch<SetStateAction<DayWindow[]>>
  timezone: string
  onTimezone: (timezone: string) => void
  error: ApiError | null
}) {
  const slots = scheduleSlots(windows)
  const setWindow = (day: number, change: Partial<DayWindow>) =>
    setWindows((previous) => previous.map((window, at) => (at === day ? { ...window, ...change } : window)))
  return (
    <fieldset>
      <legend>Dialling window</legend>
      <small className="muted">
        Optional: a day with both times set is dialled between them; a day without is not. No day set: any time.
      </small>
      {DAYS.map((day, index) => {
        const slot = slots.findIndex((candidate) => candidate.day_of_week === index)
        return (
          <div key={day} className="row">
            <Field
              label={`${day} from`}
              type="time"
              value={windows[index].start}
              onChange={(start) => setWindow(index, { start })}
              error={error}
              path={slot >= 0 ? ['schedule_config', 'slots', slot, 'start_time'] : undefined}
            />
            <Field
              label={`${day} until`}
              type="time"
              value={windows[index].end}
              onChange={(end) => setWindow(index, { end })}
              error={error}
              path={slot >= 0 ? ['schedule_config', 'slots', slot, 'end_time'] : undefined}
              otherPaths={slot >= 0 ? [['schedule_config', 'slots', slot]] : []}
            />
          </div>
        )
      })}
      <button
        type="button"
        className="secondary"
        onClick={() =>
          setWindows((previous) => previous.map((window, day) => (day > 0 && day < 5 ? previous[0] : window)))
        }
      >
        Same hours as Monday, Tuesday to Friday
      </button>
      <Field
        label="Time zone of the window"
        value={timezone}
        onChange={setTimezone}
        error={error}
        path={['schedule_config', 'timezone']}
      />
    </fieldset>
  )
}

function NewCampaign() {
  const agents = useLoad(() => api<{ id: number; name: string; status: string }[]>('GET', '/api/v1/workflow/fetch'), [])
  const telephony = useLoad(
    () => api<{ configurations: { id: number; name: string }[] }>('GET', '/api/v1/organizations/telephony-configs'),
    [],
  )
  const [form, setForm] = useState<CampaignForm>(() => ({
    name: '',
    variants: [{ agent: '', weight: '100' }],
    configuration: '',
    concurrency: '2',
    rate: '1',
    retries: '2',
    retryDelay: '120',
    windows: DAYS.map(() => ({ start: '', end: '' })),
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  }))
  const update =
    <K extends keyof CampaignForm>(key: K) =>
    (change: SetStateAction<CampaignForm[K]>) =>
      setForm((previous) => ({
        ...previous,
        [key]:
          typeof change === 'function' ? (change as (old: CampaignForm[K]) => CampaignForm[K])(previous[key]) : change,
      }))
  const file = useRef<HTMLInputElement>(null)
  const [progress, setProgress] = useState<number | null>(null)
  // what is typed or chosen; the CSV file is not (choosing it again loses no typing)
  const { unsaved, markSaved } = useUnsaved(form)
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
      await putWithProgress(grant.upload_url, chosen, 'text/csv', setProgress)
      const campaign = await api('POST', '/api/v1/campaign/create', campaignBody(grant.file_key, form))
      markSaved()
      navigate(`/campaigns/${campaign.id}`)
    } finally {
      setProgress(null)
    }
  })
  return (
    <Page title="New campaign">
      <form className="card form" onSubmit={create} aria-label="New campaign">
        <LeaveGuard
          when={unsaved}
          message="The new campaign's form has changes that are not saved: leaving the page drops them."
        />
        <Field label="Name" value={form.name} onChange={update('name')} error={error} path={['name']} required />
        <AgentsFieldset
          variants={form.variants}
          onVariants={update('variants')}
          options={agentOptions(agents.data ?? [])}
          error={error}
        />
        <WindowFieldset
          windows={form.windows}
          onWindows={update('windows')}
          timezone={form.timezone}
          onTimezone={update('timezone')}
          error={error}
        />
        <Field
          label="Telephony configuration"
          value={form.configuration}
          onChange={update('configuration')}
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
          value={form.concurrency}
          onChange={update('concurrency')}
          error={error}
          path={['max_concurrency']}
        />
        <Field
          label="Calls started per second"
          type="number"
          value={form.rate}
          onChange={update('rate')}
          error={error}
          path={['rate_limit_per_second']}
        />
        <Field
          label="Retries per contact"
          type="number"
          value={form.retries}
          onChange={update('retries')}
          error={error}
          path={['retry_config', 'max_retries']}
          hint="A busy or unanswered contact (or a voicemail) is dialled again, up to this many more times"
        />
        {Number(form.retries) > 0 ? (
          <Field
            label="Seconds between retries"
            type="number"
            value={form.retryDelay}
            onChange={update('retryDelay')}
            error={error}
            path={['retry_config', 'retry_delay_seconds']}
            hint="30 to 3600"
          />
        ) : null}
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
  }, loaded.reload)
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
              <Fact label="State">
                <StateBadge state={campaign.state} />
              </Fact>
              <Fact label="Contacts done">{progress.contacts.done}</Fact>
              <Fact label="In a call">{progress.contacts.dialing}</Fact>
              <Fact label="Retries due">{progress.contacts.retries_due}</Fact>
              <Fact label="Not dialled yet">{progress.contacts.waiting}</Fact>
              {progress.contacts.cancelled ? <Fact label="Cancelled">{progress.contacts.cancelled}</Fact> : null}
              <Fact label="Dial attempts" title="Calls placed, retries included">
                {progress.processed_rows}
              </Fact>
              <Fact label="Failed calls">{progress.failed_calls}</Fact>
              <Fact label="Agent">{campaign.workflow_name ?? 'traffic split'}</Fact>
              <Fact label="Telephony">{campaign.telephony_configuration_name ?? 'default'}</Fact>
              <Fact label="Calls at once">{campaign.max_concurrency ?? '—'}</Fact>
              <Fact label="Rate">{campaign.rate_limit_per_second}/s</Fact>
            </dl>
            <a href={href('/runs', { campaign: id })}>Runs of this campaign</a>
          </section>
          {traffic.variants.length > 1 ? (
            <section className="card" aria-labelledby="split-title">
              <h2 id="split-title">Traffic split</h2>
              <Table card={false} columns={['Agent', 'Share', 'Contacts', 'Calls placed', 'Outcomes']}>
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
                  // biome-ignore lint/suspicious/noArrayIndexKey: a log's entries carry no id (two may share ts and event); text only, no state to keep
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
