import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { compiledBinary } from './support/compiled-binary'

// The black-box HTTP suites again, against the compiled binary over real HTTP (test/support/http-app.ts), so that a
// build flag can never change what the server answers without a test failing.
const PURE_HTTP_SUITES = [
  'test/api/query-ranges.test.ts',
  'test/api/app.test.ts',
  'test/api/body-types.test.ts',
  'test/api/no-500.test.ts',
  'test/api/agents.test.ts',
  'test/api/request-limits.test.ts',
  'test/security/host-routing.test.ts',
  'test/security/token-redaction.test.ts',
  'test/security/hostile-model-server.test.ts',
  'test/api/path-ids.test.ts',
  'test/api/telephony-secrets.test.ts',
  'test/api/upload-once.test.ts',
  'test/api/recording-formats.test.ts',
  'test/api/fuzz.test.ts',
  'test/security/isolation.test.ts',
  'test/security/url-rules.test.ts',
  // The MCP SDK, client and server, inside the binary.
  'test/api/mcp-tools.test.ts',
  'test/api/mcp-server.test.ts',
]

test('the pure HTTP suites pass against the compiled binary', () => {
  const binary = compiledBinary()
  const run = Bun.spawnSync([process.execPath, 'test', '--timeout', '20000', ...PURE_HTTP_SUITES], {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, RINGBASE_TEST_BINARY: binary },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const report = run.stderr.toString()
  // The inner run's own summary lines would be read as the outer run's by .ci/run: keep them out of the message.
  const failures = report
    .split('\n')
    .filter((line) => line.includes('(fail)') || line.includes('error:'))
    .join('\n')
  expect(run.exitCode, `against ${binary}:\n${failures}`).toBe(0)
  expect(report).toMatch(/\n\s*0 fail/)
}, 600_000)
