import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { openFingerprintReader, type FingerprintReader } from '../../src/db/fingerprint'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import {
  answerProblems,
  describeRequest,
  fuzzCase,
  requestArbitrary,
  seedFuzzFixtures,
  sendThrough,
  writtenOnError,
  type FuzzSetup,
  type OpenApiDocument,
} from '../support/fuzz'

// Generated requests to every operation of our OpenAPI document: never a 5xx (but a documented 502), always JSON, the
// documented error shape, nothing written on an error. A fixed seed and case count here; scripts/fuzz.ts runs more.
// test/binary-http.test.ts runs this suite against the compiled binary too, over real HTTP (the same cases: ~6 s there).
const SEED = 20_261_124
const CASES = 6000

let t: HttpTestApp
let fingerprints: FingerprintReader
let doc: OpenApiDocument
let setup: FuzzSetup
beforeAll(async () => {
  // The answer is all a case reads: no waiting for each request's log line (the wait rereads all the output so far).
  t = await startHttpTestApp({ waitForLogLines: false })
  doc = (await t.request('GET', '/api/v1/openapi.json')).body
  setup = await seedFuzzFixtures(t, t.adminKey)
  fingerprints = openFingerprintReader(t.dataDir)
})
afterAll(async () => {
  fingerprints.close()
  await t.close()
})

test('every operation, fuzzed: no 5xx, JSON errors of the documented shape, nothing written on an error', async () => {
  // A failing case throws its problems, so fast-check's report names them beside the request.
  await fc.assert(
    fc.asyncProperty(requestArbitrary(doc, setup.fixtures), async (request) => {
      const problems = await fuzzCase(doc, sendThrough(t, setup.keys), () => fingerprints.read(), request)
      if (problems.length > 0) throw new Error(`${describeRequest(request)}\n    ${problems.join('\n    ')}`)
    }),
    { seed: SEED, numRuns: CASES, endOnFailure: true },
  )
}, 120_000)

test('the checks catch what they look for', async () => {
  const request = {
    operation: 'POST /api/v1/workflow/create/definition',
    method: 'POST',
    url: '/api/v1/workflow/create/definition',
    key: 'admin' as const,
  }
  const json = (status: number, body: unknown) => ({
    status,
    text: JSON.stringify(body),
    contentType: 'application/json',
  })
  const problems = (answer: Parameters<typeof answerProblems>[2], sent = request) => answerProblems(doc, sent, answer)
  expect(problems(json(500, { detail: 'Internal Server Error' }))).toEqual(['status 500'])
  expect(problems({ status: 400, text: 'Bad Request', contentType: 'text/plain' })[0]).toStartWith(
    'status 400 answered with non-JSON',
  )
  expect(problems(json(404, { message: 'gone' }))[0]).toStartWith('status 404 body is not the documented error shape')
  expect(problems(json(422, { detail: [{ msg: 'no loc', type: 'missing' }] }))[0]).toStartWith('status 422 body is not')
  expect(problems(json(422, { detail: { is_valid: false, errors: [] } }))).toEqual([])
  expect(
    problems(json(422, { detail: { is_valid: false, errors: [] } }), {
      ...request,
      operation: 'GET /api/v1/workflow/fetch/{workflow_id}',
      method: 'GET',
    }),
  ).toHaveLength(1)
  expect(problems(json(404, { detail: 'Not Found' }), { ...request, method: 'DELETE' })).toEqual([])

  const before = fingerprints.read()
  const agentId = setup.fixtures.known.workflow_id[0]
  expect(
    (await t.request('PUT', `/api/v1/workflow/${agentId}`, { body: { name: 'Renamed by the check' } })).status,
  ).toBe(200)
  const renamed = fingerprints.read()
  expect(writtenOnError(before, renamed)).toEqual(['written on an error: workflows rows updated'])
  expect((await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'one more' } })).status).toBe(200)
  const keys = renamed.rows.api_keys
  expect(writtenOnError(renamed, fingerprints.read())).toEqual([
    `written on an error: api_keys ${keys} → ${keys + 1} rows`,
  ])
})
