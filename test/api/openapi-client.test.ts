import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
import { createTestApp, type TestApp } from '../support/app'

// What an integrator does in the first hour: print the document with the CLI, generate a typed client from it, and
// compile code against that client (examples/client.ts). A document generators choke on fails here.
const root = join(import.meta.dir, '..', '..')
const examples = join(root, 'examples')

let t: TestApp
let printed: string
beforeAll(() => {
  t = createTestApp()
  const cli = Bun.spawnSync([process.execPath, join(root, 'src', 'main.ts'), 'openapi'], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (cli.exitCode !== 0) throw new Error(`ringbase openapi failed: ${cli.stderr.toString()}`)
  printed = cli.stdout.toString()
})
afterAll(() => t.close())

describe('the OpenAPI document as clients consume it', () => {
  test('`ringbase openapi` prints the document the server serves', async () => {
    const served = await t.request('GET', '/api/v1/openapi.json', { key: null })
    expect(served.status).toBe(200)
    expect(JSON.parse(printed)).toEqual(served.body)
  })

  test('openapi-typescript turns it into types that examples/client.ts compiles against', async () => {
    const types = astToString(await openapiTS(JSON.parse(printed)))
    // The generated operations carry the reference's method names.
    expect(types).toContain('create_workflow_api_v1_workflow_create_definition_post: {')
    expect(types).toContain('TelephonyConfigurationDetail: {')
    mkdirSync(join(examples, 'generated'), { recursive: true })
    writeFileSync(join(examples, 'generated', 'ringbase-api.d.ts'), types)
    const tsc = Bun.spawnSync([join(root, 'node_modules', '.bin', 'tsc'), '-p', join(examples, 'tsconfig.json')], {
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('')
    expect(tsc.exitCode).toBe(0)
  }, 60_000)
})
