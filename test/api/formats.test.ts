import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { FormatRegistry } from '@sinclair/typebox'
import { PLAIN_FORMAT_CHECKS } from '../../src/api/formats'
import { createTestApp, type TestApp } from '../support/app'

let t: TestApp
let doc: any
beforeAll(async () => {
  t = createTestApp()
  doc = (await t.request('GET', '/api/v1/openapi.json', { key: null })).body
})
afterAll(() => t.close())

describe('string format checks', () => {
  test("every format the API documents is checked by a plain function, not by the OpenAPI plugin's per-call zod schema", () => {
    const formats = new Set(
      JSON.stringify(doc)
        .match(/"format":"[^"]+"/g)!
        .map((match) => match.slice(10, -1)),
    )
    expect(formats.size).toBeGreaterThan(0)
    for (const format of formats) {
      expect(PLAIN_FORMAT_CHECKS[format], `format '${format}' needs a check in src/api/formats.ts`).toBeDefined()
      expect(FormatRegistry.Get(format)).toBe(PLAIN_FORMAT_CHECKS[format])
    }
  })

  test.each([
    ['uuid', '8f14e45f-ceea-467f-a0e6-8a4b3c2d1e0f', true],
    ['uuid', '8F14E45F-CEEA-467F-A0E6-8A4B3C2D1E0F', true],
    ['uuid', '8f14e45f-ceea-467f-a0e6-8a4b3c2d1e0', false],
    ['uuid', '8f14e45f-ceea-467f-a0e6-8a4b3c2d1e0f\n', false],
    ['date', '2024-02-29', true],
    ['date', '2023-02-29', false],
    ['date', '2026-13-01', false],
    ['date', '2026-01-05T10:00:00Z', false],
    ['time', '10:00:00Z', true],
    ['time', '23:59:59.5+02:00', true],
    ['time', '24:00:00', false],
    ['date-time', '2026-01-05T10:00:00.000Z', true],
    ['date-time', '2024-02-29T23:59:59+05:30', true],
    ['date-time', '2026-01-05 10:00:00Z', true],
    ['date-time', '2026-01-05T10:00:00', false],
    ['date-time', '2023-02-29T10:00:00Z', false],
    ['date-time', '2026-01-05T25:00:00Z', false],
    ['date-time', 'Mon Jan 05 2026 10:00:00 GMT+0000', false],
    ['email', 'ops@example.com', true],
    ['email', 'ops@example', false],
    ['email', 'two@@example.com', false],
  ] as const)('%s %p → %p', (format, value, valid) => {
    expect(PLAIN_FORMAT_CHECKS[format](value)).toBe(valid)
  })
})
