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

const GROUPINGS = ['day', 'agent', 'outcome'] as const

const CSV_COLUMNS = ['group_by', 'key', 'label', 'runs', 'duration_seconds', 'tokens', 'charge_usd'] as const

/**
 * The export: every finished run of the period counted by day, by agent and by outcome (the summary's three groupings
 * one after the other; the API counts one grouping at a time, so there is no day × agent × outcome cross-tab).
 */
function summaryCsv(summaries: Summary[]): string {
  const rows = summaries.flatMap((summary) =>
    summary.groups.map((group) =>
      [summary.group_by, group.key, group.label, group.runs, group.duration_seconds, group.tokens, group.charge_usd]
        .map(csvCell)
        .join(','),
    ),
  )
  return [CSV_COLUMNS.join(','), ...rows].join('\n')
}

export function Usage() {
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString()
  const loaded = useLoad(async () => {
    // Every run of the 30 days is counted (days in the browser's time zone), in the charts and in the export.
    const summary = (groupBy: string) =>
      api<Summary>(
        'GET',
        `/api/v1/organizations/usage/summary${query({ group_by: groupBy, start_date: since, utc_offset_minutes: -new Date().getTimezoneOffset() })}`,
      )
    const [byDay, byAgent, byOutcome] = await Promise.all(GROUPINGS.map(summary))
    byDay.groups.sort((a, b) => String(a.key).localeCompare(String(b.key)))
    return { byDay, byAgent, byOutcome }
  }, [])
  return (
    <Page title="Usage and cost (last 30 days)">
      <Show loaded={loaded} what="usage">
        {({ byDay, byAgent, byOutcome }) => {
          if (byDay.total_runs === 0) return <Empty title="No finished run in the last 30 days." />
          const csv = summaryCsv([byDay, byAgent, byOutcome])
          return (
            <>
              <p className="muted">{byDay.total_runs} finished runs.</p>
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
              <p>
                <a
                  className="button"
                  download="ringbase-usage.csv"
                  href={URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))}
                >
                  Export CSV (by day, agent and outcome)
                </a>
              </p>
            </>
          )
        }}
      </Show>
    </Page>
  )
}
