import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'

// Bad input gets a clear 4xx, never a 500: every route is called with junk in its path, query and body.

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp()
})
afterAll(() => t.close())

const JUNK_PATH_VALUES = ['abc', '-1', '0', '99999999999999999999', '%00', '..%2F..%2Fetc', "1'OR'1'='1"]
const JUNK_BODIES: (string | undefined)[] = [
  undefined,
  '',
  'null',
  '[]',
  '"text"',
  '42',
  '{"a":',
  '{}',
  JSON.stringify({
    name: 5,
    workflow_definition: [],
    config: 'x',
    phone_number: { a: 1 },
    traffic_split: 'x',
    slots: 7,
  }),
  JSON.stringify({ name: 'x'.repeat(10_000), file_name: '../../x.csv', file_size: -1, page: 'z', status: 'weird' }),
]
const JUNK_QUERIES = [
  '',
  '?page=0&limit=1000',
  '?filters=%7Bbad',
  '?filters=[{"attribute":"duration","type":"numberRange","value":"x"}]',
  '?start_date=yesterday&sort_order=up',
  '?include_archived=maybe',
  '?status=zzz',
]

test('no route answers 500 to malformed input', async () => {
  const failures: string[] = []
  // Every route the OpenAPI document lists (test/api/app.test.ts checks that it lists every implemented one).
  const paths: Record<string, Record<string, unknown>> = (await t.request('GET', '/api/v1/openapi.json')).body.paths
  const routes = Object.entries(paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({
      method: method.toUpperCase(),
      path: path.replace(/\{(\w+)\}/g, ':$1'),
    })),
  )
  expect(routes.length).toBeGreaterThan(40)
  // Each distinct request once: a path without parameters is the same for every junk value, and junk queries and
  // junk bodies are tried one at a time (the query with an empty body, the body with no query).
  const requests = new Map<string, { method: string; url: string; body: string | undefined }>()
  for (const route of routes) {
    for (const value of JUNK_PATH_VALUES) {
      const path = route.path.replace(/:\w+/g, value)
      const bodies = route.method === 'GET' ? [undefined] : JUNK_BODIES
      for (const query of JUNK_QUERIES)
        requests.set(`${route.method} ${path}${query}`, {
          method: route.method,
          url: path + query,
          body: bodies.at(-3),
        })
      for (const body of bodies)
        requests.set(`${route.method} ${path} ${body}`, { method: route.method, url: path, body })
    }
  }
  const queue = [...requests.values()]
  const worker = async () => {
    for (let next = queue.pop(); next; next = queue.pop()) {
      const { method, url, body } = next
      const response = await t.request(method, url, {
        rawBody: body,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      })
      if (response.status >= 500)
        failures.push(`${method} ${url} ${body ?? ''} → ${response.status} ${response.text.slice(0, 120)}`)
      // Errors are always JSON {detail}; successes may be files (downloads) or the docs page.
      else if (response.status >= 400 && JSON.parse(response.text).detail === undefined)
        failures.push(`${method} ${url} → ${response.status} without detail`)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  expect(failures).toEqual([])
}, 120_000)
