import { afterAll, beforeAll, expect, test } from 'bun:test'
import { MAX_CSV_CELL_LENGTH, MAX_CSV_COLUMN_NAME_LENGTH, MAX_CSV_COLUMNS } from '../../src/campaigns/contacts'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, createAriConfiguration, csvOf, uploadCsv } from '../support/campaigns'

/*
 * A contacts CSV cannot multiply in the database: the columns, a column name and a cell are bounded (a 422 naming the
 * limit, nothing stored), and a contact stores only the cells it has.
 */

let t: TestApp
let workflowId: number

beforeAll(async () => {
  t = createTestApp()
  workflowId = await createAgent(t)
  await createAriConfiguration(t)
})
afterAll(() => t.close())

const phone = (index: number) => `+1415555${String(1000 + index).padStart(4, '0')}`
const storedContacts = () =>
  t.ctx.sqlite
    .query<{ count: number; bytes: number | null }, []>(
      'SELECT COUNT(*) AS count, SUM(LENGTH(context)) AS bytes FROM campaign_contacts',
    )
    .get()!

async function createFrom(csv: string) {
  const sourceId = await uploadCsv(t, csv)
  return {
    sourceId,
    response: await t.request('POST', '/api/v1/campaign/create', {
      body: { name: 'Bomb', source_type: 'csv', source_id: sourceId, workflow_id: workflowId },
    }),
  }
}

async function expectLimit(csv: string, message: string) {
  const before = storedContacts().count
  const { sourceId, response } = await createFrom(csv)
  expect(response.status, response.text).toBe(422)
  expect(response.body).toEqual({
    detail: [
      {
        type: 'value_error',
        loc: ['body', 'source_id'],
        msg: `Value error, ${message}`,
        input: sourceId,
        ctx: { error: {} },
      },
    ],
  })
  expect(storedContacts().count).toBe(before)
  expect((await t.request('GET', '/api/v1/health')).status).toBe(200)
}

test('a header of 20,000 columns over 300 rows is a 422 naming the column limit; nothing is stored', async () => {
  const header = ['phone_number', ...Array.from({ length: 19_999 }, (_, index) => `c${index}`)]
  const rows = Array.from({ length: 300 }, (_, index) => [phone(index)])
  await expectLimit(csvOf(header, rows), `The CSV file has 20000 columns; at most ${MAX_CSV_COLUMNS} are allowed`)
})

test('a column name longer than the limit is a 422', async () => {
  await expectLimit(
    csvOf(['phone_number', 'x'.repeat(MAX_CSV_COLUMN_NAME_LENGTH + 1)], [[phone(0), 'a']]),
    `Column 2 of the CSV header is longer than ${MAX_CSV_COLUMN_NAME_LENGTH} characters`,
  )
})

test('a cell longer than the limit is a 422 naming its row and column', async () => {
  await expectLimit(
    csvOf(
      ['phone_number', 'note'],
      [
        [phone(0), 'ok'],
        [phone(1), 'y'.repeat(MAX_CSV_CELL_LENGTH + 1)],
      ],
    ),
    `Row 3, column 2 of the CSV file is longer than ${MAX_CSV_CELL_LENGTH} characters`,
  )
})

test('a quoted field that never ends is cut by the parser, not held whole', async () => {
  await expectLimit(
    `phone_number,note\n${phone(0)},"${'z'.repeat(MAX_CSV_COLUMNS * MAX_CSV_CELL_LENGTH + 10)}`,
    `A row of the CSV file is longer than ${MAX_CSV_COLUMNS * MAX_CSV_CELL_LENGTH} characters`,
  )
})

test('at the column limit, every contact stores only the cells it has', async () => {
  const header = ['phone_number', ...Array.from({ length: MAX_CSV_COLUMNS - 1 }, (_, index) => `c${index}`)]
  const rows = Array.from({ length: 300 }, (_, index) => {
    const cells = [phone(index), ...Array.from({ length: MAX_CSV_COLUMNS - 1 }, () => '')]
    cells[1 + (index % (MAX_CSV_COLUMNS - 1))] = `v${index}`
    return cells
  })
  const before = storedContacts()
  const { response } = await createFrom(csvOf(header, rows))
  expect(response.status, response.text).toBe(200)
  expect(response.body.total_rows).toBe(300)
  const contexts = t.ctx.sqlite
    .query<{ context: string }, [number]>(
      'SELECT context FROM campaign_contacts WHERE campaign_id = ? ORDER BY row_number',
    )
    .all(response.body.id)
    .map((row) => JSON.parse(row.context))
  expect(contexts[0]).toEqual({ phone_number: phone(0), c0: 'v0' })
  expect(contexts[299]).toEqual({ phone_number: phone(299), [`c${299 % (MAX_CSV_COLUMNS - 1)}`]: 'v299' })
  for (const context of contexts) expect(Object.keys(context)).toHaveLength(2)
  expect(storedContacts().count - before.count).toBe(300)
})
