import { expect, test } from 'bun:test'
import { join } from 'node:path'

test("web/api-types.ts (the console's types of the API) matches the OpenAPI document", () => {
  const root = join(import.meta.dir, '..', '..')
  const result = Bun.spawnSync([process.execPath, join(root, 'scripts', 'console-api-types.ts'), '--check'], {
    cwd: root,
    stderr: 'pipe',
  })
  expect(result.stderr.toString()).toBe('')
  expect(result.exitCode).toBe(0)
}, 120_000)
