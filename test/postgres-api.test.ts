import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { postgresMissing, startPostgres, type TestPostgres } from './support/postgres'

// The API suites again, each test app on a PostgreSQL database of its own (test/support/postgres-databases.ts), so that
// no feature works on SQLite only, and the campaign dialler shared by two instances. Not here: the fuzz suite, whose
// check that an error wrote nothing reads SQLite's file.
const ROOT = join(import.meta.dir, '..')
const SUITES = [
  ...readdirSync(join(ROOT, 'test', 'api'))
    .filter((name) => name.endsWith('.test.ts') && name !== 'fuzz.test.ts')
    .map((name) => `test/api/${name}`),
  'test/security/isolation.test.ts',
  // Two instances on one database: the schedulers' limits and pacing, a carrier's callbacks reaching either.
  'test/campaigns/instances.test.ts',
  'test/telephony/carriers/instances.test.ts',
]

const missing = postgresMissing()
if (missing) console.warn(missing)

let postgres: TestPostgres
beforeAll(async () => {
  if (!missing) postgres = await startPostgres()
})
afterAll(() => postgres?.stop())

test.skipIf(missing !== null)(
  'the API suites pass with the data in PostgreSQL',
  async () => {
    const run = Bun.spawn([process.execPath, 'test', '--timeout', '20000', ...SUITES], {
      cwd: ROOT,
      env: { ...process.env, RINGBASE_TEST_POSTGRES_URL: postgres.url },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [report] = await Promise.all([new Response(run.stderr).text(), new Response(run.stdout).text()])
    await run.exited
    // The inner run's own summary lines would be read as the outer run's by .ci/run: keep them out of the message.
    const failures = report
      .split('\n')
      .filter((line) => line.includes('(fail)') || line.includes('error:'))
      .join('\n')
    expect(run.exitCode, `on PostgreSQL:\n${failures}`).toBe(0)
    expect(report).toMatch(/\n\s*0 fail/)
  },
  1_200_000,
)
