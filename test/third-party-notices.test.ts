import { expect, test } from 'bun:test'
import { join } from 'node:path'

test('THIRD_PARTY_NOTICES.md matches the installed runtime dependencies', () => {
  const root = join(import.meta.dir, '..')
  const result = Bun.spawnSync([process.execPath, join(root, 'scripts', 'third-party-notices.ts'), '--check'], {
    cwd: root,
    stderr: 'pipe',
  })
  expect(result.stderr.toString()).toBe('')
  expect(result.exitCode).toBe(0)
})
