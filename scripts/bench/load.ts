// Load benchmark: `npx bun scripts/bench/load.ts [seconds=60] [clients=64]`
//
// Builds the single executable, serves a fresh data dir (20 agents, a telephony configuration) and drives a read/write
// mix from `clients` concurrent clients over real HTTP for `seconds`: throughput, p50/p99 per endpoint, errors (any
// status but 200, SQLITE_BUSY named apart) and the server's peak RSS. Then the same mix against a bare Bun.serve in
// its own process that answers each endpoint with the bytes the server gave: the HTTP floor of this machine.
// Last, each endpoint through `app.handle` in this process, one request at a time: the server's own work per request
// without sockets, to tell framework and handler time from HTTP and client time.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/app'
import { bootstrapInstallation } from '../../src/auth/keys'
import { loadConfig } from '../../src/config'
import { buildContext } from '../../src/boot'
import { createLogger } from '../../src/log'
import { spawnServe } from '../../test/support/serve-process'

const seconds = Number(process.argv[2] ?? 60)
const clients = Number(process.argv[3] ?? 64)
const AGENTS = 20
const KEY = `rb_${'b'.repeat(43)}`

type Endpoint = {
  name: string; method: string; path: (agentIds: number[], n: number) => string; body?: (n: number) => unknown; weight: number
  /** Sent with a second organization's key, so that what it creates does not grow the lists the readers fetch. */
  asWriter?: true
}

const DEFINITION = { nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello {{first_name}}' } }], edges: [] }
const pick = <T>(items: T[], n: number) => items[n % items.length]

/** The mix: reads dominate, as on a dashboard; writes rename agents, create keys and agents. */
const ENDPOINTS: Endpoint[] = [
  { name: 'GET health', method: 'GET', path: () => '/api/v1/health', weight: 10 },
  { name: 'GET agents', method: 'GET', path: () => '/api/v1/workflow/fetch', weight: 20 },
  { name: 'GET agent', method: 'GET', path: (ids, n) => `/api/v1/workflow/fetch/${pick(ids, n)}`, weight: 20 },
  { name: 'GET node-types', method: 'GET', path: () => '/api/v1/node-types', weight: 10 },
  { name: 'GET usage', method: 'GET', path: () => '/api/v1/organizations/usage/runs', weight: 10 },
  { name: 'GET telephony-configs', method: 'GET', path: () => '/api/v1/organizations/telephony-configs', weight: 10 },
  { name: 'PUT agent (rename)', method: 'PUT', path: (ids, n) => `/api/v1/workflow/${pick(ids, n)}`, body: (n) => ({ name: `Agent ${n}` }), weight: 10 },
  { name: 'POST api-key', method: 'POST', path: () => '/api/v1/user/api-keys', body: (n) => ({ name: `key ${n}` }), weight: 5 },
  { name: 'POST agent', method: 'POST', path: () => '/api/v1/workflow/create/definition', body: (n) => ({ name: `New ${n}`, workflow_definition: DEFINITION }), weight: 5, asWriter: true },
]
const WEIGHTED = ENDPOINTS.flatMap((endpoint) => Array.from({ length: endpoint.weight }, () => endpoint))

type Stats = { latencies: number[]; errors: number; busy: number }
type RunResult = { perEndpoint: Map<string, Stats>; total: number; wallSeconds: number }

async function drive(base: string, agentIds: number[], writerKey: string, durationMs: number): Promise<RunResult> {
  const perEndpoint = new Map(ENDPOINTS.map((endpoint) => [endpoint.name, { latencies: [], errors: 0, busy: 0 } as Stats]))
  let counter = 0
  const start = performance.now()
  const deadline = start + durationMs
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < deadline) {
      const n = counter++
      const endpoint = WEIGHTED[(n * 7919) % WEIGHTED.length]
      const body = endpoint.body?.(n)
      const sent = performance.now()
      const stats = perEndpoint.get(endpoint.name)!
      try {
        const response = await fetch(`${base}${endpoint.path(agentIds, n)}`, {
          method: endpoint.method,
          headers: { 'x-api-key': endpoint.asWriter ? writerKey : KEY, ...(body ? { 'content-type': 'application/json' } : {}) },
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
  }))
  const total = [...perEndpoint.values()].reduce((sum, stats) => sum + stats.latencies.length, 0)
  return { perEndpoint, total, wallSeconds: (performance.now() - start) / 1000 }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024

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
      void (async () => { while (!(await reader.read()).done); })()
      return url
    }
  }
}

async function api(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = await response.json() as any
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

const work = mkdtempSync(join(tmpdir(), 'ringbase-bench-load-'))
const binary = join(work, 'ringbase')
const build = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', 'build.ts'), binary], { stdout: 'ignore', stderr: 'inherit' })
if (build.exitCode !== 0) throw new Error('build failed')

// Logs at info like a production server: one JSON line per request is part of the cost.
const server = spawnServe(binary, ['--dir', join(work, 'data')], { RINGBASE_BOOTSTRAP_API_KEY: KEY, RINGBASE_LOG_LEVEL: 'info' })
const base = await announcedUrl(server.stdout)
const agentIds: number[] = []
for (let index = 0; index < AGENTS; index++) {
  agentIds.push((await api(base, 'POST', '/api/v1/workflow/create/definition', { name: `Agent ${index}`, workflow_definition: DEFINITION })).id)
}
const writerKey = Bun.spawnSync([binary, 'keys', 'create', '--org', 'bench-writer', '--dir', join(work, 'data')]).stdout.toString().trim()
await api(base, 'POST', '/api/v1/organizations/telephony-configs', {
  name: 'Carrier', config: { provider: 'twilio', account_sid: 'ACbench', auth_token: 'bench-token' },
})

// The bytes each endpoint answers, for the bare server.
const canned: Record<string, { status: number; body: string; type: string }> = {}
for (const endpoint of ENDPOINTS) {
  const path = endpoint.path(agentIds, 0)
  const body = endpoint.body?.(0)
  const response = await fetch(`${base}${path}`, {
    method: endpoint.method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined,
  })
  canned[`${endpoint.method} ${new URL(path, base).pathname.replace(/\/\d+$/, '/:id')}`] = {
    status: response.status, body: await response.text(), type: response.headers.get('content-type') ?? 'application/json',
  }
}

let peakRss = rssOf(server.pid)
const sampler = setInterval(() => { peakRss = Math.max(peakRss, rssOf(server.pid)) }, 250)
const ringbase = await drive(base, agentIds, writerKey, seconds * 1000)
clearInterval(sampler)
server.kill('SIGTERM')
await server.exited

const bareScript = join(work, 'bare.ts')
writeFileSync(join(work, 'canned.json'), JSON.stringify(canned))
writeFileSync(bareScript, `
const canned = await Bun.file(${JSON.stringify(join(work, 'canned.json'))}).json()
const server = Bun.serve({ port: 0, idleTimeout: 30, fetch(request) {
  const path = new URL(request.url).pathname.replace(/\\/\\d+$/, '/:id')
  const answer = canned[request.method + ' ' + path]
  return answer ? new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.type } }) : new Response('', { status: 404 })
} })
console.log(JSON.stringify({ url: 'http://127.0.0.1:' + server.port }))
`)
const bare = Bun.spawn([process.execPath, bareScript], { stdout: 'pipe', stderr: 'inherit' })
const bareUrl = await announcedUrl(bare.stdout)
let barePeakRss = rssOf(bare.pid)
const bareSampler = setInterval(() => { barePeakRss = Math.max(barePeakRss, rssOf(bare.pid)) }, 250)
const floor = await drive(bareUrl, agentIds, writerKey, seconds * 1000)
clearInterval(bareSampler)
bare.kill('SIGTERM')
await bare.exited

// In process, one request at a time: what the server itself spends per request.
const inProcessDir = join(work, 'in-process')
const ctx = buildContext(loadConfig({ dir: inProcessDir }, { RINGBASE_BOOTSTRAP_API_KEY: KEY }), { log: createLogger('silent') })
bootstrapInstallation(ctx)
const app = createApp(ctx, { precompile: true })
const handle = (method: string, path: string, body?: unknown) => app.handle(new Request(`http://localhost${path}`, {
  method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
})).then((response) => response.text())
const localIds: number[] = []
for (let index = 0; index < AGENTS; index++) {
  localIds.push(JSON.parse(await handle('POST', '/api/v1/workflow/create/definition', { name: `Agent ${index}`, workflow_definition: DEFINITION })).id)
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
console.log(`\n${clients} clients, ${seconds} s per server, ${AGENTS} agents; build ${binary}`)
console.log(`ringbase: ${(ringbase.total / ringbase.wallSeconds).toFixed(0)} req/s, peak RSS ${mb(peakRss)}; `
  + `bare Bun.serve: ${(floor.total / floor.wallSeconds).toFixed(0)} req/s, peak RSS ${mb(barePeakRss)}`)
console.log(['endpoint'.padEnd(24), 'req/s', 'p50 ms', 'p99 ms', 'errors', 'busy', '| bare req/s', 'p50', 'p99', '| share', '| in-process µs'].join('\t'))
for (const endpoint of ENDPOINTS) {
  const ours = ringbase.perEndpoint.get(endpoint.name)!
  const theirs = floor.perEndpoint.get(endpoint.name)!
  const oursSorted = ours.latencies.sort((a, b) => a - b)
  const theirsSorted = theirs.latencies.sort((a, b) => a - b)
  const oursRate = oursSorted.length / ringbase.wallSeconds
  const theirsRate = theirsSorted.length / floor.wallSeconds
  console.log([
    endpoint.name.padEnd(24), oursRate.toFixed(0), ms(percentile(oursSorted, 50)), ms(percentile(oursSorted, 99)), ours.errors, ours.busy,
    `| ${theirsRate.toFixed(0)}`, ms(percentile(theirsSorted, 50)), ms(percentile(theirsSorted, 99)),
    `| ${((100 * oursRate) / theirsRate).toFixed(0)} %`, `| ${inProcess.get(endpoint.name)!.toFixed(0)}`,
  ].join('\t'))
}
rmSync(work, { recursive: true, force: true })
