// The usage report on a large installation: `bun scripts/bench/usage.ts [runs] [iterations]` (default 1,000,000 runs
// across 3 organizations and 50 agents). Measures GET /api/v1/organizations/usage/runs in process (app.handle, response
// read to the end) for the unfiltered first page, each filter, a date range, sort by duration and page 5,000, checks
// every answer against a plain bun:sqlite query for the same page and total, and reports p50/p99 and the ratio (API and
// raw query timed alternately).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { createApp } from '../../src/api/app'
import { auth } from '../../src/api/auth'
import { UsageQuery } from '../../src/api/usage/model'
import { usageReportJson } from '../../src/runs/usage'
import { loadConfig } from '../../src/config'
import { buildContext } from '../../src/boot'
import { createLogger } from '../../src/log'
import { createAgent } from '../../src/agents/service'
import { bootstrapInstallation, createApiKey, ensureOrganization } from '../../src/auth/keys'
import { percentile, seededRandom } from './stats'

const RUNS = Number(process.argv[2] ?? 1_000_000)
const ITERATIONS = Number(process.argv[3] ?? 200)
const ORGANIZATIONS = 3
const AGENTS = 50
const CHUNK = 50_000
const LIMIT = 50
const WARMUP = 5
const RAW_BUDGET_MS = 10_000

const MODES = ['ari', 'twilio', 'telnyx', 'webrtc', 'smallwebrtc', 'textchat']
const DISPOSITIONS = [
  'user_hangup',
  'end_call_tool',
  'busy',
  'no-answer',
  'voicemail_detected',
  'XFER',
  'DNC',
  'failed',
]
const SPAN_MS = 90 * 24 * 60 * 60 * 1000
const START_MS = Date.parse('2026-01-01T00:00:00Z')

const ms = (value: number) => Math.round(value * 1000) / 1000

const random = seededRandom(20260101)
const pick = <T>(values: T[]) => values[Math.floor(random() * values.length)]
const digits = (count: number) => Array.from({ length: count }, () => Math.floor(random() * 10)).join('')

const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-bench-usage-'))
const ctx = buildContext(loadConfig({ dir: dataDir }, {}), { log: createLogger('warn') })
try {
  bootstrapInstallation(ctx)
  const organizationIds = [
    1,
    ...Array.from({ length: ORGANIZATIONS - 1 }, (_, index) => ensureOrganization(ctx, `org-${index + 2}`)),
  ]
  const measuredOrganization = organizationIds[0]
  const key = createApiKey(ctx, measuredOrganization, 'bench').api_key
  const agents = await Promise.all(
    Array.from({ length: AGENTS }, async (_, index) => {
      const organizationId = organizationIds[index % ORGANIZATIONS]
      const agent = await createAgent(ctx, organizationId, {
        name: `Agent ${index + 1}`,
        workflow_definition: {
          nodes: [{ id: '1', type: 'startCall', data: { prompt: 'Hello {{first_name}}' } }],
          edges: [],
        },
      })
      return { id: agent.id, definitionId: agent.current_definition_id, organizationId }
    }),
  )

  const seedStarted = performance.now()
  const insert =
    ctx.sqlite.prepare(`INSERT INTO workflow_runs (organization_id, workflow_id, definition_id, name, mode, call_type,
    state, campaign_id, initial_context, gathered_context, usage_info, cost_info, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  // A bigger page cache while seeding only; measurements run with the default one.
  ctx.sqlite.run('PRAGMA cache_size = -262144')
  for (let start = 0; start < RUNS; start += CHUNK) {
    ctx.sqlite.transaction(() => {
      for (let index = start; index < Math.min(RUNS, start + CHUNK); index++) {
        const agent = pick(agents)
        const finished = random() < 0.95
        const duration = Math.floor(random() * 600)
        const callType = random() < 0.5 ? 'inbound' : 'outbound'
        insert.run(
          agent.organizationId,
          agent.id,
          agent.definitionId,
          `WR-BENCH-${index}`,
          pick(MODES),
          callType,
          finished ? 'completed' : 'running',
          random() < 0.3 ? 1 + Math.floor(random() * 30) : null,
          JSON.stringify({
            caller_number: `+1${digits(10)}`,
            called_number: `+44${digits(10)}`,
            first_name: 'Ada',
            direction: callType,
          }),
          JSON.stringify(finished ? { mapped_call_disposition: pick(DISPOSITIONS), call_id: `call-${index}` } : {}),
          finished ? JSON.stringify({ call_duration_seconds: duration, llm: { total_tokens: duration * 3 } }) : null,
          finished ? JSON.stringify({ service_token_usage: duration * 2, charge_usd: duration / 100 }) : null,
          new Date(START_MS + Math.floor((index / RUNS) * SPAN_MS)).toISOString(),
        )
      }
    })()
  }
  ctx.sqlite.run('PRAGMA cache_size = -2000')
  console.log(
    JSON.stringify({
      seeded_runs: RUNS,
      organizations: ORGANIZATIONS,
      agents: AGENTS,
      seed_seconds: ms((performance.now() - seedStarted) / 1000),
    }),
  )

  const app = createApp(ctx)
  const sample = ctx.sqlite
    .query<{ id: number; workflow_id: number; campaign_id: number; caller: string; called: string }, [number]>(
      `SELECT id, workflow_id, campaign_id, caller_number AS caller, called_number AS called FROM workflow_runs
     WHERE organization_id = ? AND usage_info IS NOT NULL AND campaign_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET 1000`,
    )
    .get(measuredOrganization)!
  const base = 'r.organization_id = ? AND r.usage_info IS NOT NULL'
  type Case = {
    name: string
    query: Record<string, string>
    where: string
    params: (string | number)[]
    order?: string
    page?: number
  }
  const filter = (attribute: string, type: string, value: unknown) => JSON.stringify([{ attribute, type, value }])
  const cases: Case[] = [
    { name: 'unfiltered, page 1', query: {}, where: base, params: [] },
    {
      name: 'runId',
      query: { filters: filter('runId', 'number', { value: sample.id }) },
      where: `${base} AND r.id = ?`,
      params: [sample.id],
    },
    {
      name: 'workflowId',
      query: { filters: filter('workflowId', 'number', { value: sample.workflow_id }) },
      where: `${base} AND r.workflow_id = ?`,
      params: [sample.workflow_id],
    },
    {
      name: 'campaignId',
      query: { filters: filter('campaignId', 'number', { value: sample.campaign_id }) },
      where: `${base} AND r.campaign_id = ?`,
      params: [sample.campaign_id],
    },
    {
      name: 'callerNumber (6 digits)',
      query: { filters: filter('callerNumber', 'text', { value: sample.caller.slice(4, 10) }) },
      where: `${base} AND r.caller_number LIKE ?`,
      params: [`%${sample.caller.slice(4, 10)}%`],
    },
    {
      name: 'calledNumber (4 digits)',
      query: { filters: filter('calledNumber', 'text', { value: sample.called.slice(6, 10) }) },
      where: `${base} AND r.called_number LIKE ?`,
      params: [`%${sample.called.slice(6, 10)}%`],
    },
    {
      name: 'dispositionCode (2 codes)',
      query: { filters: filter('dispositionCode', 'multiSelect', { codes: ['XFER', 'DNC'] }) },
      where: `${base} AND r.disposition IN (?, ?)`,
      params: ['XFER', 'DNC'],
    },
    {
      name: 'duration 60-300 s',
      query: { filters: filter('duration', 'numberRange', { min: 60, max: 300 }) },
      where: `${base} AND r.call_duration_seconds BETWEEN ? AND ?`,
      params: [60, 300],
    },
    {
      name: 'callDirection inbound',
      query: { filters: filter('callDirection', 'radio', { status: 'inbound' }) },
      where: `${base} AND r.call_type = ?`,
      params: ['inbound'],
    },
    {
      name: 'callChannel telephony',
      query: { filters: filter('callChannel', 'radio', { status: 'telephony' }) },
      where: `${base} AND r.channel = ?`,
      params: ['telephony'],
    },
    {
      name: 'start_date/end_date (1 week)',
      query: { start_date: '2026-02-01', end_date: '2026-02-07' },
      where: `${base} AND r.created_at >= ? AND r.created_at <= ?`,
      params: ['2026-02-01T00:00:00.000Z', '2026-02-07T23:59:59.999Z'],
    },
    {
      name: 'sort_by=duration',
      query: { sort_by: 'duration' },
      where: base,
      params: [],
      order: 'r.call_duration_seconds DESC, r.id DESC',
    },
    { name: 'unfiltered, page 5000', query: { page: '5000' }, where: base, params: [], page: 5000 },
  ]

  /** The case's page and total by plain bun:sqlite queries. */
  const rawQueryOf = (benchCase: Case) => {
    const params = [measuredOrganization, ...benchCase.params]
    const rawPage = ctx.sqlite.query<
      { id: number },
      (string | number)[]
    >(`SELECT r.*, w.name AS workflow_name FROM workflow_runs r
      JOIN workflows w ON w.id = r.workflow_id WHERE ${benchCase.where}
      ORDER BY ${benchCase.order ?? 'r.created_at DESC, r.id DESC'} LIMIT ${LIMIT} OFFSET ${((benchCase.page ?? 1) - 1) * LIMIT}`)
    const rawCount = ctx.sqlite.query<{ total: number }, (string | number)[]>(
      `SELECT count(*) AS total FROM workflow_runs r WHERE ${benchCase.where}`,
    )
    return () => ({ rows: rawPage.all(...params), total: rawCount.get(...params)!.total })
  }

  const results = []
  for (const benchCase of cases) {
    const url = `http://localhost/api/v1/organizations/usage/runs?${new URLSearchParams({ ...benchCase.query, limit: String(LIMIT) })}`
    const raw = rawQueryOf(benchCase)
    /** The response body as the client receives it (parsing it is the client's work, not timed). */
    const api = async () => {
      const response = await app.handle(new Request(url, { headers: { 'x-api-key': key } }))
      const body = await response.text()
      if (response.status !== 200) throw new Error(`${benchCase.name}: HTTP ${response.status} ${body}`)
      return body
    }
    const expected = raw()
    const answer = JSON.parse(await api()) as { runs: { id: number }[]; total_count: number }
    const same =
      answer.total_count === expected.total &&
      JSON.stringify(answer.runs.map((run) => run.id)) === JSON.stringify(expected.rows.map((row) => row.id))
    if (!same) throw new Error(`${benchCase.name}: the API and the raw query disagree`)

    // Interleaved, so both sides see the same machine state. The plain query of a number search scans every run: it is
    // sampled only while within RAW_BUDGET_MS (at least 3 times); the check above warmed it up.
    const apiTimes: number[] = []
    const rawTimes: number[] = []
    let rawSpent = 0
    for (let iteration = 0; iteration < ITERATIONS + WARMUP; iteration++) {
      const apiStarted = performance.now()
      await api()
      if (iteration >= WARMUP) apiTimes.push(performance.now() - apiStarted)
      if (rawTimes.length >= ITERATIONS || (rawTimes.length >= 3 && rawSpent > RAW_BUDGET_MS)) continue
      const rawStarted = performance.now()
      raw()
      rawTimes.push(performance.now() - rawStarted)
      rawSpent += rawTimes.at(-1)!
    }
    apiTimes.sort((a, b) => a - b)
    rawTimes.sort((a, b) => a - b)
    const [apiP50, apiP99, rawP50, rawP99] = [
      percentile(apiTimes, 50),
      percentile(apiTimes, 99),
      percentile(rawTimes, 50),
      percentile(rawTimes, 99),
    ]
    results.push({
      case: benchCase.name,
      total: expected.total,
      rows: expected.rows.length,
      raw_samples: rawTimes.length,
      api_p50_ms: ms(apiP50),
      api_p99_ms: ms(apiP99),
      raw_p50_ms: ms(rawP50),
      raw_p99_ms: ms(rawP99),
      ratio_p50: ms(apiP50 / rawP50),
      ratio_p99: ms(apiP99 / rawP99),
    })
  }
  // The runId case taken apart, the four timed alternately: the whole request and the raw query again, what any request
  // to this route costs before the report's own work (a bare route with the same query schema and API key check,
  // answering a constant body), and the report's own work without HTTP. A case whose raw query is faster than half of
  // the bare route cannot be within 2× of it.
  const floorApp = new Elysia()
    .use(auth(ctx))
    .get('/api/v1/organizations/usage/runs', () => new Response('{}'), { query: UsageQuery })
  const runIdQuery = new URLSearchParams({ ...cases[1].query, limit: String(LIMIT) })
  const runIdRequest = () =>
    new Request(`http://localhost/api/v1/organizations/usage/runs?${runIdQuery}`, { headers: { 'x-api-key': key } })
  const parts: Record<string, () => unknown> = {
    'runId: the whole request, again': async () => (await app.handle(runIdRequest())).text(),
    'runId: the raw query, again': rawQueryOf(cases[1]),
    'runId: a bare route, same schema and key check': async () => (await floorApp.handle(runIdRequest())).text(),
    'runId: the report alone, no HTTP': () =>
      usageReportJson(ctx, measuredOrganization, {
        filters: runIdQuery.get('filters')!,
        limit: LIMIT,
        page: 1,
        sort_order: 'desc',
      }),
  }
  const partTimes = new Map(Object.keys(parts).map((name) => [name, [] as number[]]))
  for (let iteration = 0; iteration < ITERATIONS + WARMUP; iteration++) {
    for (const [name, part] of Object.entries(parts)) {
      const started = performance.now()
      await part()
      if (iteration >= WARMUP) partTimes.get(name)!.push(performance.now() - started)
    }
  }
  for (const [name, times] of partTimes) {
    times.sort((a, b) => a - b)
    results.push({ case: name, api_p50_ms: ms(percentile(times, 50)), api_p99_ms: ms(percentile(times, 99)) })
  }
  console.table(results)
  console.log(JSON.stringify(results))
} finally {
  ctx.sqlite.close()
  rmSync(dataDir, { recursive: true, force: true })
}
