import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/lib/clock'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, seedRun } from '../support/agents'
import { expectedIds, type SeededRun } from '../support/usage-oracle'

/**
 * Enough runs that large match sets are read by walking the sort order (past 2,000 matches), and pages past the middle
 * from the other end: every plan must give the same pages as the plain definition.
 */
const RUNS = 2600
let t: TestApp
const seeded: SeededRun[] = []

// Seeding takes seconds on a loaded machine: more than the default hook timeout.
beforeAll(
  async () => {
    const clock = manualClock(Date.parse('2026-04-01T00:00:00Z'))
    t = createTestApp({ clock })
    const other = t.newOrg('acme')
    const agents = [await createAgent(t, 'One'), await createAgent(t, 'Two')]
    const foreign = await createAgent(t, 'Foreign', other.key)
    t.ctx.sqlite.transaction(() => {
      for (let index = 0; index < RUNS; index++) {
        const agent = agents[index % 2]
        const callType = index % 2 === 0 ? 'inbound' : 'outbound'
        const mode = index % 5 === 0 ? 'webrtc' : 'ari'
        const disposition = index % 10 === 0 ? 'DNC' : 'XFER'
        // Few distinct durations, so sorting by duration has many ties to break by id.
        const duration = index % 37
        const run = seedRun(t, {
          organizationId: 1,
          agent,
          mode,
          callType,
          outcome: { durationSeconds: duration, disposition },
        })
        seeded.push({
          id: run.id,
          organizationId: 1,
          workflowId: agent.id,
          campaignId: null,
          mode,
          callType,
          callerNumber: null,
          calledNumber: null,
          disposition,
          duration,
          createdAt: run.createdAt,
        })
        if (index % 100 === 0)
          seedRun(t, {
            organizationId: other.organizationId,
            agent: foreign,
            outcome: { durationSeconds: 1, disposition: 'XFER' },
          })
        // Several runs share each timestamp: ties broken by id.
        if (index % 3 === 0) clock.advance(1000)
      }
    })()
  },
  { timeout: 60_000 },
)
afterAll(() => t.close())

type Filter = { attribute: string; type: string; value: any }

describe('large match sets', () => {
  const scenarios: [string, Filter[], { sortBy?: 'duration'; order?: 'asc' | 'desc' }][] = [
    ['no filter', [], {}],
    ['no filter, oldest first', [], { order: 'asc' }],
    ['no filter, by duration', [], { sortBy: 'duration' }],
    ['no filter, by duration ascending', [], { sortBy: 'duration', order: 'asc' }],
    ['dispositionCode XFER', [{ attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['XFER'] } }], {}],
    ['duration 0-34', [{ attribute: 'duration', type: 'numberRange', value: { min: 0, max: 34 } }], {}],
    [
      'duration 0-34 by duration',
      [{ attribute: 'duration', type: 'numberRange', value: { max: 34 } }],
      { sortBy: 'duration', order: 'asc' },
    ],
    ['callChannel telephony', [{ attribute: 'callChannel', type: 'radio', value: { status: 'telephony' } }], {}],
    [
      'callChannel telephony + dispositionCode',
      [
        { attribute: 'callChannel', type: 'radio', value: { status: 'telephony' } },
        { attribute: 'dispositionCode', type: 'multiSelect', value: { codes: ['XFER'] } },
      ],
      { order: 'asc' },
    ],
    [
      'callDirection inbound (below the walk threshold)',
      [{ attribute: 'callDirection', type: 'radio', value: { status: 'inbound' } }],
      {},
    ],
  ]

  test.each(scenarios)('%s: first, middle, past-middle and last pages', async (_label, filters, options) => {
    const expected = expectedIds(seeded, 1, filters, options)
    const limit = 100
    const pages = Math.ceil(expected.length / limit)
    for (const page of [1, Math.floor(pages / 2), Math.floor(pages / 2) + 1, pages - 1, pages]) {
      const query = new URLSearchParams({
        filters: JSON.stringify(filters),
        page: String(page),
        limit: String(limit),
        ...(options.sortBy ? { sort_by: options.sortBy } : {}),
        ...(options.order ? { sort_order: options.order } : {}),
      })
      const response = await t.request('GET', `/api/v1/organizations/usage/runs?${query}`)
      expect({ page, total: response.body.total_count, ids: response.body.runs.map((run: any) => run.id) }).toEqual({
        page,
        total: expected.length,
        ids: expected.slice((page - 1) * limit, page * limit),
      })
    }
  })

  test('the unfiltered total follows runs that finish later', async () => {
    const before = (await t.request('GET', '/api/v1/organizations/usage/runs?limit=1')).body.total_count
    const agent = { id: seeded[0].workflowId, current_definition_id: 1 }
    const run = seedRun(t, { organizationId: 1, agent })
    expect((await t.request('GET', '/api/v1/organizations/usage/runs?limit=1')).body.total_count).toBe(before)
    seedRun(t, { organizationId: 1, agent, outcome: { durationSeconds: 3 } })
    const after = await t.request('GET', '/api/v1/organizations/usage/runs?limit=1')
    expect(after.body.total_count).toBe(before + 1)
    expect(after.body.runs[0].id).toBe(run.id + 1)
  })
})
