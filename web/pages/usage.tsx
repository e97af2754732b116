import { api, query } from '../api'
import { BarChart, Empty, Page, Show, useLoad } from '../ui'

const csvCell = (value: unknown) => {
  const text = value === null || value === undefined ? '' : String(value)
  // A leading = + - @ would be read as a formula by a spreadsheet.
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text
  return /[",\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

function sum(runs: any[], key: (run: any) => string, value: (run: any) => number) {
  const totals = new Map<string, number>()
  for (const run of runs) totals.set(key(run), (totals.get(key(run)) ?? 0) + value(run))
  return [...totals].map(([label, total]) => ({ label, value: Math.round(total * 10000) / 10000 }))
}

export function Usage() {
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString()
  const loaded = useLoad(
    () => api('GET', `/api/v1/organizations/usage/runs${query({ start_date: since, limit: 100 })}`),
    [],
  )
  return (
    <Page title="Usage and cost (last 30 days)">
      <Show loaded={loaded} what="usage">
        {(usage: any) => {
          if (usage.runs.length === 0) return <Empty title="No finished run in the last 30 days." />
          const day = (run: any) => new Date(run.created_at).toLocaleDateString()
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
                {usage.total_count > usage.runs.length ? `, the latest ${usage.runs.length} charted` : ''}.
              </p>
              <div className="grid">
                <div className="card">
                  <BarChart title="Calls by day" bars={sum(usage.runs, day, () => 1)} />
                </div>
                <div className="card">
                  <BarChart
                    title="Cost by agent (USD)"
                    bars={sum(
                      usage.runs,
                      (run) => run.workflow_name,
                      (run) => run.charge_usd ?? 0,
                    )}
                  />
                </div>
                <div className="card">
                  <BarChart
                    title="Calls by outcome"
                    bars={sum(
                      usage.runs,
                      (run) => run.disposition ?? 'unknown',
                      () => 1,
                    )}
                  />
                </div>
                <div className="card">
                  <BarChart
                    title="Minutes by day"
                    bars={sum(usage.runs, day, (run) => (run.call_duration_seconds ?? 0) / 60)}
                  />
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
