import { api, query, type Schemas } from '../api'
import { BarChart, Empty, Page, Show, useLoad } from '../ui'

const csvCell = (value: unknown) => {
  const text = value === null || value === undefined ? '' : String(value)
  // A leading = + - @ would be read as a formula by a spreadsheet.
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text
  return /[",\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

type Summary = Schemas['GetOrganizationsUsageSummaryResponse']

const bars = (summary: Summary, value: (group: Summary['groups'][number]) => number) =>
  summary.groups.map((group) => ({
    label: group.label ?? 'no outcome',
    value: Math.round(value(group) * 10000) / 10000,
  }))

export function Usage() {
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString()
  const loaded = useLoad(async () => {
    // The charts count every run of the 30 days (days in the browser's time zone); the export lists the latest 100.
    const summary = (groupBy: string) =>
      api<Summary>(
        'GET',
        `/api/v1/organizations/usage/summary${query({ group_by: groupBy, start_date: since, utc_offset_minutes: -new Date().getTimezoneOffset() })}`,
      )
    const [byDay, byAgent, byOutcome, usage] = await Promise.all([
      summary('day'),
      summary('agent'),
      summary('outcome'),
      api('GET', `/api/v1/organizations/usage/runs${query({ start_date: since, limit: 100 })}`),
    ])
    byDay.groups.sort((a, b) => String(a.key).localeCompare(String(b.key)))
    return { byDay, byAgent, byOutcome, usage }
  }, [])
  return (
    <Page title="Usage and cost (last 30 days)">
      <Show loaded={loaded} what="usage">
        {({
          byDay,
          byAgent,
          byOutcome,
          usage,
        }: {
          byDay: Summary
          byAgent: Summary
          byOutcome: Summary
          usage: any
        }) => {
          if (usage.runs.length === 0) return <Empty title="No finished run in the last 30 days." />
          const csv = [
            [
              'id',
              'name',
              'agent',
              'created_at',
              'direction',
              'disposition',
              'duration_seconds',
              'tokens',
              'charge_usd',
            ].join(','),
            ...usage.runs.map((run: any) =>
              [
                run.id,
                run.name,
                run.workflow_name,
                run.created_at,
                run.call_type,
                run.disposition,
                run.call_duration_seconds,
                run.service_token_usage,
                run.charge_usd,
              ]
                .map(csvCell)
                .join(','),
            ),
          ].join('\n')
          return (
            <>
              <p className="muted">
                {usage.total_count} runs
                {usage.total_count > usage.runs.length ? `, the latest ${usage.runs.length} in the CSV export` : ''}.
              </p>
              <div className="grid">
                <div className="card">
                  <BarChart title="Calls by day" bars={bars(byDay, (group) => group.runs)} />
                </div>
                <div className="card">
                  <BarChart title="Cost by agent (USD)" bars={bars(byAgent, (group) => group.charge_usd ?? 0)} />
                </div>
                <div className="card">
                  <BarChart title="Calls by outcome" bars={bars(byOutcome, (group) => group.runs)} />
                </div>
                <div className="card">
                  <BarChart title="Minutes by day" bars={bars(byDay, (group) => group.duration_seconds / 60)} />
                </div>
              </div>
              <a
                className="button"
                download="ringbase-usage.csv"
                href={URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))}
              >
                Export CSV
              </a>
            </>
          )
        }}
      </Show>
    </Page>
  )
}
