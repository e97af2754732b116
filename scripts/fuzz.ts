// Fuzzing the compiled binary: `npx bun scripts/fuzz.ts [cases=20000] [seed=random]`
//
// Builds the single executable, serves a fresh data dir and sends `cases` requests generated from its own OpenAPI
// document (test/support/fuzz.ts: every operation, wrong types, huge and negative numbers, 100k-character strings,
// unicode, null bytes, deep nesting, broken JSON, other content types, wrong methods; admin, trigger, unknown and no
// key). Every answer is checked (no 5xx but a documented one, JSON, the documented error shape, under a second) and so
// is the database after every error (nothing written). Prints the problems grouped with an example of each, the answers
// by status and the slowest requests; exits 1 on any problem. The seed is printed: the same seed replays the requests.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { openFingerprintReader } from '../src/db/fingerprint'
import {
  describeRequest,
  fuzzCase,
  requestArbitrary,
  seedFuzzFixtures,
  sendThrough,
  type FuzzRequest,
} from '../test/support/fuzz'
import { startBinaryTestApp } from '../test/support/http-app'

const cases = Number(process.argv[2] ?? 20_000)
const seed = Number(process.argv[3] ?? Math.floor(Math.random() * 2 ** 31))
/** A request taking longer stalls every other one (the server runs one request at a time): a problem too. */
const SLOW_MS = 1000
/** A key unused for this long records its next use (a write): every key is used at least this often. */
const KEY_REFRESH_MS = 30_000

const work = mkdtempSync(join(tmpdir(), 'ringbase-fuzz-'))
const binary = join(work, 'ringbase')
const build = Bun.spawnSync([process.execPath, join(import.meta.dir, 'build.ts'), binary], {
  stdout: 'ignore',
  stderr: 'inherit',
})
if (build.exitCode !== 0) throw new Error('build failed')
const t = await startBinaryTestApp(binary, { waitForLogLines: false })
const doc = (await t.request('GET', '/api/v1/openapi.json')).body
const setup = await seedFuzzFixtures(t, t.adminKey)
const fingerprints = openFingerprintReader(t.dataDir)
const send = sendThrough(t, setup.keys)

const problems = new Map<string, { count: number; example: string }>()
const statuses = new Map<number, number>()
const slowest: { ms: number; request: FuzzRequest }[] = []
let keysUsedAt = 0
const started = performance.now()
for (const request of fc.sample(requestArbitrary(doc, setup.fixtures), { seed, numRuns: cases })) {
  if (performance.now() - keysUsedAt > KEY_REFRESH_MS) {
    for (const key of [setup.keys.admin, setup.keys.trigger]) await t.request('GET', '/api/v1/workflow/fetch', { key })
    keysUsedAt = performance.now()
  }
  const sentAt = performance.now()
  const found = await fuzzCase(
    doc,
    async (sent) => {
      const answer = await send(sent)
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      return answer
    },
    () => fingerprints.read(),
    request,
  )
  const ms = performance.now() - sentAt
  if (ms > SLOW_MS) found.push(`slow: ${ms.toFixed(0)} ms`)
  slowest.push({ ms, request })
  slowest.sort((a, b) => b.ms - a.ms).splice(5)
  for (const problem of found) {
    const kind = `${request.operation}: ${problem.replace(/:.*$/s, '')}`
    const seen = problems.get(kind) ?? { count: 0, example: `${describeRequest(request)}\n      ${problem}` }
    seen.count++
    problems.set(kind, seen)
  }
}
const seconds = (performance.now() - started) / 1000
fingerprints.close()
await t.close()
rmSync(work, { recursive: true, force: true })

console.log(`\n${cases} cases, seed ${seed}, ${seconds.toFixed(0)} s against ${binary}`)
console.log(
  `answers by status: ${[...statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ')}`,
)
console.log(
  `slowest: ${slowest.map(({ ms, request }) => `\n  ${ms.toFixed(0)} ms  ${describeRequest(request).slice(0, 160)}`).join('')}`,
)
if (problems.size === 0) console.log('no problem found')
for (const [kind, { count, example }] of problems) console.log(`\n${count} × ${kind}\n  e.g. ${example}`)
process.exit(problems.size === 0 ? 0 : 1)
