// Load benchmark: `npx bun scripts/bench/load.ts [seconds=60] [clients=64] [endpointSeconds=5] [rounds=3]`
//
// Builds the single executable, serves a fresh data dir (20 agents, a telephony configuration) and, beside it, a bare
// Bun.serve in its own process answering each endpoint with the bytes the server gave: the HTTP floor of this machine.
// 1. The mix: a read/write mix from `clients` concurrent clients over real HTTP for `seconds` against each server:
//    throughput, p50/p99 per endpoint, errors (any status but 200, SQLITE_BUSY named apart) and the server's peak RSS.
//    In a closed loop every endpoint of the mix runs at the rate of the whole, so its share of the floor is the mix's.
// 2. Each endpoint alone, `clients` clients for `endpointSeconds`, alternately against ringbase and the floor, `rounds`
//    times (the machine is shared: alternating and taking medians keeps noise from favouring either side): median
//    req/s of both, the median of the rounds' ratios, p50/p99 over all rounds.
// 3. Each endpoint through `app.handle` in this process, one request at a time: the server's own work per request
//    without sockets, to tell framework and handler time from HTTP and client time.
// With RINGBASE_BENCH_POSTGRES=1 the data is in PostgreSQL (scripts/bench/database.ts): one database for the server,
// another for step 3.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/app'
import { bootstrapInstallation } from '../../src/auth/keys'
import { loadConfig, type Flags } from '../../src/config'
import { buildContext } from '../../src/boot'
import { createLogger } from '../../src/log'
import { spawnServe } from '../../test/support/serve-process'
import { benchDatabase } from './database'

const seconds = Number(process.argv[2] ?? 60)
const clients = Number(process.argv[3] ?? 64)
const endpointSeconds = Number(process.argv[4] ?? 5)
const rounds = Number(process.argv[5] ?? 3)
const AGENTS = 20
const KEY = `rb_${'b'.repeat(43)}`

type Endpoint = {
  name: string
  method: string
  path: (agentIds: number[], n: number) => string
  body?: (n: number) => unknown
  weight: number
  /** Sent with a second organization's key, so that what it creates does not grow the lists the readers fetch. */
  asWriter?: true
}

const DEFINITION = {
  nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello {{first_name}}' } }],
  edges: [],
}
const pick = <T>(items: T[], n: number) => items[n % items.length]

/** The mix: reads dominate, as on a dashboard; writes rename agents, create keys and agents. */
const ENDPOINTS: Endpoint[] = [
  { name: 'GET health', method: 'GET', path: () => '/api/v1/health', weight: 10 },
  { name: 'GET agents', method: 'GET', path: () => '/api/v1/workflow/fetch', weight: 20 },
  { name: 'GET agent', method: 'GET', path: (ids, n) => `/api/v1/workflow/fetch/${pick(ids, n)}`, weight: 20 },
  { name: 'GET node-types', method: 'GET', path: () => '/api/v1/node-types', weight: 10 },
  { name: 'GET usage', method: 'GET', path: () => '/api/v1/organizations/usage/runs', weight: 10 },
  { name: 'GET telephony-configs', method: 'GET', path: () => '/api/v1/organizations/telephony-configs', weight: 10 },
  {
    name: 'PUT agent (rename)',
    method: 'PUT',
    path: (ids, n) => `/api/v1/workflow/${pick(ids, n)}`,
    body: (n) => ({ name: `Agent ${n}` }),
    weight: 10,
  },
  {
    name: 'POST api-key',
    method: 'POST',
    path: () => '/api/v1/user/api-keys',
    body: (n) => ({ name: `key ${n}` }),
    weight: 5,
  },
  {
    name: 'POST agent',
    method: 'POST',
    path: () => '/api/v1/workflow/create/definition',
    body: (n) => ({ name: `New ${n}`, workflow_definition: DEFINITION }),
    weight: 5,
    asWriter: true,
  },
]
const MIX = ENDPOINTS.flatMap((endpoint) => Array.from({ length: endpoint.weight }, () => endpoint))

type Stats = { latencies: number[]; errors: number; busy: number }
type RunResult = { perEndpoint: Map<string, Stats>; total: number; wallSeconds: number }
type Target = { url: string; pid: number; peakRss: number }

const emptyStats = (): Stats => ({ latencies: [], errors: 0, busy: 0 })

const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024

/** `clients` closed loops over `endpoints` (round robin, spread by a prime) for `durationMs`, sampling the target's RSS. */
async function drive(
  target: Target,
  endpoints: Endpoint[],
  agentIds: number[],
  writerKey: string,
  durationMs: number,
): Promise<RunResult> {
  const perEndpoint = new Map(endpoints.map((endpoint) => [endpoint.name, emptyStats()]))
  const sampler = setInterval(() => {
    target.peakRss = Math.max(target.peakRss, rssOf(target.pid))
  }, 250)
  let counter = 0
  const start = performance.now()
  const deadline = start + durationMs
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        const n = counter++
        const endpoint = endpoints[(n * 7919) % endpoints.length]
        const body = endpoint.body?.(n)
        const sent = performance.now()
        const stats = perEndpoint.get(endpoint.name)!
        try {
          const response = await fetch(`${target.url}${endpoint.path(agentIds, n)}`, {
            method: endpoint.method,
            headers: {
              'x-api-key': endpoint.asWriter ? writerKey : KEY,
              ...(body ? { 'content-type': 'application/json' } : {}),
            },
            body: body ? JSON.stringify(body) : undefined,
          })
          const text = await response.text()
          stats.latencies.push(performance.now() - sent)
          if (response.status !== 200) {
            stats.errors++
            if (text.includes('SQLITE_BUSY')) stats.busy++
          }
        } catch {
          stats.errors++
        }
      }
    }),
  )
  clearInterval(sampler)
  const total = [...perEndpoint.values()].reduce((sum, stats) => sum + stats.latencies.length, 0)
  return { perEndpoint, total, wallSeconds: (performance.now() - start) / 1000 }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )

/** The URL the process prints first (`"url":"…"`); the rest of its output is read and dropped, never stored. */
async function announcedUrl(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`exited before listening: ${text}`)
    text += new TextDecoder().decode(value)
    const url = /"url":"(http:\/\/[^"]+)"/.exec(text)?.[1]
    if (url) {
      void (async () => {
        while (!(await reader.read()).done);
      })()
      return url
    }
  }
}

async function api(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = (await response.json()) as any
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

const database = await benchDatabase()
/** The flags that put a process's data in database `name`; none on SQLite. */
function databaseFlags(name: string): string[] {
  const url = database.create(name)
  return url === null ? [] : ['--database-url', url]
}
const serverDatabase = databaseFlags('bench_server')
console.log(`database: ${database.label}`)

const work = mkdtempSync(join(tmpdir(), 'ringbase-bench-load-'))
const binary = join(work, 'ringbase')
const build = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', 'build.ts'), binary], {
  stdout: 'ignore',
  stderr: 'inherit',
})
if (build.exitCode !== 0) throw new Error('build failed')

// Logs at info like a production server: one JSON line per request is part of the cost.
const server = spawnServe(binary, ['--dir', join(work, 'data'), ...serverDatabase], {
  RINGBASE_BOOTSTRAP_API_KEY: KEY,
  RINGBASE_LOG_LEVEL: 'info',
})
const ringbase: Target = { url: await announcedUrl(server.stdout), pid: server.pid, peakRss: 0 }
const agentIds: number[] = []
for (let index = 0; index < AGENTS; index++) {
  agentIds.push(
    (
      await api(ringbase.url, 'POST', '/api/v1/workflow/create/definition', {
        name: `Agent ${index}`,
        workflow_definition: DEFINITION,
      })
    ).id,
  )
}
const writerKey = Bun.spawnSync([
  binary,
  ...['keys', 'create', '--org', 'bench-writer', '--dir', join(work, 'data'), ...serverDatabase],
])
  .stdout.toString()
  .trim()
await api(ringbase.url, 'POST', '/api/v1/organizations/telephony-configs', {
  name: 'Carrier',
  config: { provider: 'twilio', account_sid: 'ACbench', auth_token: 'bench-token' },
})

// The bytes each endpoint answers, for the bare server.
const canned: Record<string, { status: number; body: string; type: string }> = {}
for (const endpoint of ENDPOINTS) {
  const path = endpoint.path(agentIds, 0)
  const body = endpoint.body?.(0)
  const response = await fetch(`${ringbase.url}${path}`, {
    method: endpoint.method,
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  })
  canned[`${endpoint.method} ${new URL(path, ringbase.url).pathname.replace(/\/\d+$/, '/:id')}`] = {
    status: response.status,
    body: await response.text(),
    type: response.headers.get('content-type') ?? 'application/json',
  }
}
const bareScript = join(work, 'bare.ts')
writeFileSync(join(work, 'canned.json'), JSON.stringify(canned))
writeFileSync(
  bareScript,
  `
const canned = await Bun.file(${JSON.stringify(join(work, 'canned.json'))}).json()
const server = Bun.serve({ port: 0, idleTimeout: 30, fetch(request) {
  const path = new URL(request.url).pathname.replace(/\\/\\d+$/, '/:id')
  const answer = canned[request.method + ' ' + path]
  return answer ? new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.type } }) : new Response('', { status: 404 })
} })
console.log(JSON.stringify({ url: 'http://127.0.0.1:' + server.port }))
`,
)
const bareProcess = Bun.spawn([process.execPath, bareScript], { stdout: 'pipe', stderr: 'inherit' })
const bare: Target = { url: await announcedUrl(bareProcess.stdout), pid: bareProcess.pid, peakRss: 0 }

const mixOurs = await drive(ringbase, MIX, agentIds, writerKey, seconds * 1000)
const mixFloor = await drive(bare, MIX, agentIds, writerKey, seconds * 1000)

type Alone = { ours: RunResult[]; floor: RunResult[] }
const alone = new Map<string, Alone>(ENDPOINTS.map((endpoint) => [endpoint.name, { ours: [], floor: [] }]))
for (let round = 0; round < rounds; round++) {
  for (const endpoint of ENDPOINTS) {
    const runs = alone.get(endpoint.name)!
    runs.ours.push(await drive(ringbase, [endpoint], agentIds, writerKey, endpointSeconds * 1000))
    runs.floor.push(await drive(bare, [endpoint], agentIds, writerKey, endpointSeconds * 1000))
  }
}
server.kill('SIGTERM')
bareProcess.kill('SIGTERM')
await Promise.all([server.exited, bareProcess.exited])

// In process, one request at a time: what the server itself spends per request.
const inProcessDir = join(work, 'in-process')
const [, inProcessDatabase] = databaseFlags('bench_in_process')
const inProcessFlags: Flags = inProcessDatabase
  ? { dir: inProcessDir, 'database-url': inProcessDatabase }
  : { dir: inProcessDir }
const ctx = buildContext(loadConfig(inProcessFlags, { RINGBASE_BOOTSTRAP_API_KEY: KEY }), {
  log: createLogger('silent'),
})
bootstrapInstallation(ctx)
const app = createApp(ctx, { precompile: true })
const handle = (method: string, path: string, body?: unknown) =>
  app
    .handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    .then((response) => response.text())
const localIds: number[] = []
for (let index = 0; index < AGENTS; index++) {
  localIds.push(
    JSON.parse(
      await handle('POST', '/api/v1/workflow/create/definition', {
        name: `Agent ${index}`,
        workflow_definition: DEFINITION,
      }),
    ).id,
  )
}
const inProcess = new Map<string, number>()
for (const endpoint of ENDPOINTS) {
  const iterations = 2000
  for (let n = 0; n < 200; n++) await handle(endpoint.method, endpoint.path(localIds, n), endpoint.body?.(n))
  const start = performance.now()
  for (let n = 0; n < iterations; n++) await handle(endpoint.method, endpoint.path(localIds, n), endpoint.body?.(n))
  inProcess.set(endpoint.name, ((performance.now() - start) * 1000) / iterations)
}
ctx.sqlite.close()

const ms = (value: number) => value.toFixed(2)
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`
const rate = (run: RunResult, name: string) => run.perEndpoint.get(name)!.latencies.length / run.wallSeconds
const sortedLatencies = (runs: RunResult[], name: string) =>
  runs.flatMap((run) => run.perEndpoint.get(name)!.latencies).sort((a, b) => a - b)
const errorsOf = (runs: RunResult[], name: string) =>
  runs.reduce((sum, run) => sum + run.perEndpoint.get(name)!.errors, 0)
const busyOf = (runs: RunResult[], name: string) => runs.reduce((sum, run) => sum + run.perEndpoint.get(name)!.busy, 0)

console.log(
  `\n${clients} clients; build ${binary}; peak RSS: ringbase ${mb(ringbase.peakRss)}, bare Bun.serve ${mb(bare.peakRss)}`,
)
console.log(
  `\nThe mix, ${seconds} s per server: ringbase ${(mixOurs.total / mixOurs.wallSeconds).toFixed(0)} req/s, ` +
    `bare ${(mixFloor.total / mixFloor.wallSeconds).toFixed(0)} req/s (${((100 * mixOurs.total * mixFloor.wallSeconds) / (mixFloor.total * mixOurs.wallSeconds)).toFixed(0)} %)`,
)
console.log(
  ['endpoint'.padEnd(24), 'req/s', 'p50 ms', 'p99 ms', 'errors', 'busy', '| bare req/s', 'p50', 'p99'].join('\t'),
)
for (const endpoint of ENDPOINTS) {
  const ours = sortedLatencies([mixOurs], endpoint.name)
  const theirs = sortedLatencies([mixFloor], endpoint.name)
  console.log(
    [
      endpoint.name.padEnd(24),
      rate(mixOurs, endpoint.name).toFixed(0),
      ms(percentile(ours, 50)),
      ms(percentile(ours, 99)),
      errorsOf([mixOurs], endpoint.name),
      busyOf([mixOurs], endpoint.name),
      `| ${rate(mixFloor, endpoint.name).toFixed(0)}`,
      ms(percentile(theirs, 50)),
      ms(percentile(theirs, 99)),
    ].join('\t'),
  )
}
console.log(
  `\nEach endpoint alone, ${endpointSeconds} s per server, ${rounds} alternating rounds (medians; latencies over all rounds)`,
)
console.log(
  [
    'endpoint'.padEnd(24),
    'req/s',
    'p50 ms',
    'p99 ms',
    'errors',
    'busy',
    '| bare req/s',
    'p50',
    'p99',
    '| share',
    '| in-process µs',
  ].join('\t'),
)
for (const endpoint of ENDPOINTS) {
  const { ours, floor } = alone.get(endpoint.name)!
  const oursSorted = sortedLatencies(ours, endpoint.name)
  const theirsSorted = sortedLatencies(floor, endpoint.name)
  const shares = ours.map((run, round) => rate(run, endpoint.name) / rate(floor[round], endpoint.name))
  console.log(
    [
      endpoint.name.padEnd(24),
      median(ours.map((run) => rate(run, endpoint.name))).toFixed(0),
      ms(percentile(oursSorted, 50)),
      ms(percentile(oursSorted, 99)),
      errorsOf(ours, endpoint.name),
      busyOf(ours, endpoint.name),
      `| ${median(floor.map((run) => rate(run, endpoint.name))).toFixed(0)}`,
      ms(percentile(theirsSorted, 50)),
      ms(percentile(theirsSorted, 99)),
      `| ${(100 * median(shares)).toFixed(0)} %`,
      `| ${inProcess.get(endpoint.name)!.toFixed(0)}`,
    ].join('\t'),
  )
}
rmSync(work, { recursive: true, force: true })
database.stop()
