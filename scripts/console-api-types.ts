// Regenerates web/api-types.ts (the console's only view of the server: the types of the OpenAPI document), with
// openapi-typescript from `ringbase openapi`. `--check` exits 1 when the committed file is out of date.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const target = join(root, 'web', 'api-types.ts')
const HEADER =
  '// Generated from the OpenAPI document (`ringbase openapi`) by openapi-typescript: `bun scripts/console-api-types.ts`. Do not edit.\n'

const document = Bun.spawnSync([process.execPath, join(root, 'src', 'main.ts'), 'openapi'], { stderr: 'inherit' })
if (document.exitCode !== 0) process.exit(1)
const work = mkdtempSync(join(tmpdir(), 'ringbase-api-types-'))
try {
  const input = join(work, 'openapi.json')
  const output = join(work, 'api-types.ts')
  await Bun.write(input, document.stdout)
  const generated = Bun.spawnSync([join(root, 'node_modules', '.bin', 'openapi-typescript'), input, '-o', output], {
    stdout: 'ignore',
    stderr: 'inherit',
  })
  if (generated.exitCode !== 0) process.exit(1)
  const text = HEADER + readFileSync(output, 'utf8')
  if (process.argv.includes('--check')) {
    if (readFileSync(target, 'utf8') !== text) {
      process.stderr.write('web/api-types.ts is out of date: run `bun scripts/console-api-types.ts`\n')
      process.exit(1)
    }
  } else {
    await Bun.write(target, text)
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
