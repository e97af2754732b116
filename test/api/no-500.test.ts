import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'

// Bad input gets a clear 4xx, never a 500: every route is called with junk in its path, query and body.

let t: HttpTestApp
beforeAll(async () => { t = await startHttpTestApp() })
afterAll(() => t.close())

const JUNK_PATH_VALUES = ['abc', '-1', '0', '99999999999999999999', '%00', '..%2F..%2Fetc', "1'OR'1'='1"]
const JUNK_BODIES: (string | undefined)[] = [
  undefined, '', 'null', '[]', '"text"', '42', '{"a":', '{}',
  JSON.stringify({ name: 5, workflow_definition: [], config: 'x', phone_number: { a: 1 }, traffic_split: 'x', slots: 7 }),
  JSON.stringify({ name: 'x'.repeat(10_000), file_name: '../../x.csv', file_size: -1, page: 'z', status: 'weird' }),
]
const JUNK_QUERIES = ['', '?page=0&limit=1000', '?filters=%7Bbad', '?filters=[{"attribute":"duration","type":"numberRange","value":"x"}]',
  '?start_date=yesterday&sort_order=up', '?include_archived=maybe', '?status=zzz']

test('no route answers 500 to malformed input', async () => {
  const failures: string[] = []
  // Every route the OpenAPI document lists (test/api/app.test.ts checks that it lists every implemented one).
  const paths: Record<string, Record<string, unknown>> = (await t.request('GET', '/api/v1/openapi.json')).body.paths
  const routes = Object.entries(paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path: path.replace(/\{(\w+)\}/g, ':$1') })))
  expect(routes.length).toBeGreaterThan(40)
  for (const route of routes) {
    for (const value of JUNK_PATH_VALUES) {
      const path = route.path.replace(/:\w+/g, value)
      for (const query of JUNK_QUERIES) {
        for (const body of route.method === 'GET' ? [undefined] : JUNK_BODIES) {
          const response = await t.request(route.method, path + query, {
            rawBody: body, headers: body === undefined ? {} : { 'content-type': 'application/json' },
          })
          if (response.status >= 500) failures.push(`${route.method} ${path}${query} ${body ?? ''} → ${response.status} ${response.text.slice(0, 120)}`)
          // Errors are always JSON {detail}; successes may be files (downloads) or the docs page.
          else if (response.status >= 400) expect(JSON.parse(response.text).detail).toBeDefined()
        }
      }
    }
  }
  expect(failures).toEqual([])
}, 120_000)
