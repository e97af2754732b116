import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createAgent } from '../support/agents'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'

// Query parameters out of their range are refused, whatever runs the server: the binary built with --minify once
// let these through (200 with "page":"0", or 500 from the database), test/binary-http.test.ts runs this against it.

let t: HttpTestApp
let agentId: number
beforeAll(async () => {
  t = await startHttpTestApp()
  agentId = (await createAgent(t, 'Ranges')).id
})
afterAll(() => t.close())

const cases: [string, string, string][] = [
  ['/api/v1/organizations/usage/runs?page=0', 'page', 'greater_than_equal'],
  ['/api/v1/organizations/usage/runs?limit=101', 'limit', 'less_than_equal'],
  ['/api/v1/workflow/{agent}/runs?page=-99999999999999999999', 'page', 'greater_than_equal'],
  ['/api/v1/workflow/{agent}/versions?limit=-1&offset=-1', 'limit', 'greater_than_equal'],
]

test.each(cases)('%s → 422 naming %s', async (path, field, type) => {
  const response = await t.request('GET', path.replace('{agent}', String(agentId)))
  expect(response.status).toBe(422)
  expect(response.body.detail).toContainEqual(expect.objectContaining({ loc: ['query', field], type }))
})

test('in-range values are served with numbers, not strings', async () => {
  const response = await t.request('GET', '/api/v1/organizations/usage/runs?page=2&limit=100')
  expect(response.status).toBe(200)
  expect(response.body).toMatchObject({ page: 2, limit: 100 })
})
